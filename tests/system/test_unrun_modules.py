"""Modules decided before any of them runs (``autograder.grading.unrun``): a module Python cannot import and the
course's stub untouched get their verdicts in the grader, without a sandbox or a grading process, and every file a
class's grade writes is byte-identical to grading them in processes (``AUTOGRADER_DECIDE_UNRUN=0``).

The class: each way a module fails to compile (a syntax error, one only the compiler finds, an indentation error,
not UTF-8, a null byte), the stub untouched and reformatted (comments, blank lines); and the near misses that must run, because
something of the student's would run at import (a statement at the top level, an import that fails, a changed
constant), or a function is done."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import ROOT, reference_source

from autograder.core.course import load_course
from autograder.grading.grader import Grader, Options
from autograder.grading.outputs import class_files
from autograder.grading.unrun import SWITCH

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"


def stub() -> str:
    return (ROOT / "exercises" / f"{MODULE}.py").read_text()


def one_done() -> str:
    """The stub with its first function replaced by the reference's."""
    import ast

    ref = reference_source(MODULE)
    first = next(n for n in ast.parse(stub()).body if isinstance(n, ast.FunctionDef))
    done = next(n for n in ast.parse(ref).body if isinstance(n, ast.FunctionDef) and n.name == first.name)
    lines = stub().splitlines()
    body = "\n".join(ref.splitlines()[done.lineno - 1 : done.end_lineno])
    return "\n".join(lines[: first.lineno - 1] + [body] + lines[first.end_lineno :]) + "\n"


DECIDED = {
    "syntax_error": lambda: (reference_source(MODULE) + "\ndef oops(:\n").encode(),
    "compiler_error": lambda: (reference_source(MODULE) + "\nreturn 1\n").encode(),  # parses; 'return' outside
    "indentation_error": lambda: (stub() + "\nif True:\nx = 1\n").encode(),
    "not_utf8": lambda: "# café\n".encode("latin-1") + stub().encode(),
    "null_byte": lambda: (stub() + "\n# \x00\n").encode(),  # the compiler refuses it as an import would
    "stub_untouched": lambda: stub().encode(),
    "stub_reformatted": lambda: ("# my work\n\n" + stub().replace("\n\n\n", "\n\n\n\n") + "\n# done later\n").encode(),
}
RUN = {
    "stub_printing": lambda: (stub() + "\nprint('hello')\n").encode(),
    "stub_failing_import": lambda: ("import not_a_module_anywhere\n" + stub()).encode(),
    "one_function_done": lambda: one_done().encode(),
}


def grade(students: list[tuple[str, Path]], out: Path) -> dict[str, float]:
    """Grade ``students`` into ``out`` (every class file); how many grading processes each student's modules ran."""
    course = load_course(ROOT)
    options = Options((MODULE,), 15, 4000, 2)
    grader = Grader(course, options, workers=2)
    try:
        results = grader.grade_class(students)
    finally:
        grader.close()
    class_files.write_all(out, course, options.modules, results)
    return {r.student: r.timings.get("runs", 0.0) for r in results}


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_modules_that_cannot_run_or_are_the_stub_are_decided_without_a_process_and_grade_the_same(
    tmp_path, monkeypatch
):
    students = []
    for name, make in {**DECIDED, **RUN}.items():
        folder = tmp_path / "class" / name
        folder.mkdir(parents=True)
        (folder / f"{MODULE}.py").write_bytes(make())
        students.append((name, folder))
    monkeypatch.setenv(SWITCH, "0")
    ran = grade(students, tmp_path / "run")
    monkeypatch.delenv(SWITCH)
    decided = grade(students, tmp_path / "decided")
    assert all(ran[name] >= 1 for name in ran), ran
    assert {name for name, runs in decided.items() if runs == 0} == set(DECIDED), decided
    assert files(tmp_path / "decided") == files(tmp_path / "run")
    summary = (tmp_path / "decided" / "grades.csv").read_text()
    assert "one_function_done,0," not in summary  # the near miss that runs earned its function's points
    shutil.rmtree(tmp_path / "class")
