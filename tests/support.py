"""Run the course's own checks against a submission written in a test.

``grade(pytester, module, source)`` writes ``source`` as ``<module>.py`` into a
fresh folder, runs ``exercises/test_<module>.py`` against it in the grading
profile (in-process, so JAX's caches are shared and it stays fast), and
returns the per-function results the plugin wrote.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

from autograder.core.outcomes import FunctionScore

ROOT = Path(__file__).resolve().parents[1]

# The one unit test file that starts processes, and why: the grader's event channel is read from a real pipe,
# written by a few lines of Python that import nothing of the kit nor JAX (the hostile other end). Every other
# test that needs a fresh interpreter is in tests/system/ (tests/unit/test_tiers.py, tests/unit/conftest.py).
UNIT_TESTS_STARTING_PROCESSES = frozenset({"grading/test_event_channel.py"})
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
# A memory limit (MB per grading process) under which the grader's own zygote, the process that imports JAX and the
# checks' libraries before any student code runs, is killed: the anonymous memory it is charged is 60 to 100 MB
# here. 100 MB no longer does it: a forked grading process of at_updates, charged only for what it adds to the
# zygote's pages, fits in it since it stopped compiling the programs the trusted side runs.
TOO_LITTLE_MEMORY_MB = 40


def compiles_during(fn):
    """``(fn(), how many programs XLA compiled while it ran)``: JAX's compile events, through the kit's one
    listener (:mod:`autograder.runtime.monitoring`)."""
    from autograder.runtime import monitoring

    seen = []

    def listen(event, duration):
        if event == "/jax/core/compile/backend_compile_duration":
            seen.append(event)

    monitoring.subscribe(listen)
    try:
        result = fn()
    finally:
        monitoring.unsubscribe(listen)
    return result, len(seen)


def reference_source(module: str) -> str:
    return (SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")


def with_function(module: str, replacement: str) -> str:
    """The reference module with the top-level definitions that ``replacement`` makes replaced by it."""
    source = reference_source(module)
    replacement = textwrap.dedent(replacement).strip("\n")
    new_names = top_level_names_of(replacement)
    lines = source.splitlines()
    tree = ast.parse(source)
    drop: set[int] = set()
    for node in tree.body:
        if top_level_names_of_node(node) & new_names:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            drop.update(range(first - 1, node.end_lineno))
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return kept.rstrip() + "\n\n\n" + replacement + "\n"


def top_level_names_of_node(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def top_level_names_of(source: str) -> set[str]:
    return set().union(*(top_level_names_of_node(n) for n in ast.parse(source).body))


def grade(pytester, module: str, source: str, *, only: str | None = None) -> dict[str, FunctionScore]:
    """Grade ``source`` as the student's ``<module>.py``; ``only`` is a ``-k`` expression."""
    folder = pytester.mkdir(f"submission_{len(list(pytester.path.iterdir()))}")
    (folder / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return grade_folder(pytester, module, folder, only=only)


def grade_folder(pytester, module: str, folder: Path, *, only: str | None = None) -> dict[str, FunctionScore]:
    """Grade the ``<module>.py`` in ``folder`` with the course's checks, in the grading profile."""
    out = pytester.path / f"results_{module}_{len(list(pytester.path.iterdir()))}.json"
    args = [str(EXERCISES / f"test_{module}.py"), "--submission", str(folder), "--results-json", str(out)]
    args += ["--grading", "-q", "-p", "no:cacheprovider"]
    if only:
        args += ["-k", only]
    pytester.inline_run(*args)
    data = json.loads(out.read_text(encoding="utf-8"))
    return {f["function"]: FunctionScore.from_json(f) for f in data["functions"]}


def assert_accepted(result: FunctionScore) -> None:
    """A correct submission passes every check of the function, with full points."""
    assert result.status == "passed", result.message
    assert result.points == result.max_points


def assert_rejected(result: FunctionScore, pattern: str) -> None:
    """A wrong submission fails, loses points, and says why (``pattern``) with the hint."""
    assert result.status == "failed"
    assert result.points < result.max_points
    assert re.search(pattern, result.message), result.message
    assert "hint:" in result.message


def COURSE_FUNCTIONS():
    from autograder.core.course import load_course

    return load_course(ROOT).functions


def gallery(rows, width: int | None = None) -> list:
    """pytest params from gallery rows ``(what the variant does, function, ...)``, with the readable id
    ``<function>-<what the variant does>`` (e.g. ``replace_negatives-boolean-indexing``); ``width``
    pads the values with None."""
    import pytest

    params = []
    functions = {fn.name for fn in COURSE_FUNCTIONS()}
    for row in rows:
        assert isinstance(row, tuple) and len(row) >= 3, (
            f"a gallery row needs (what it does, function, source, ...): {row!r:.120}"
        )
        what, *values = row
        assert values[0] in functions and what not in functions and what.replace("-", "").replace(".", "").isalnum(), (
            f"gallery row ids say what the variant does, in kebab-case, then name its function: got {row[:2]!r}"
        )
        if width is not None:
            values = (values + [None] * width)[:width]
        params.append(pytest.param(*values, id=f"{values[0]}-{what}"))
    ids = [p.id for p in params]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"two gallery rows say the same: {duplicates}"
    return params


# A minimal course of one module and one function: course.toml tests (unit and system tiers) edit it.
def make_course(
    tmp_path: Path,
    toml: str,
    exercise: str = "def f(x):\n    raise NotImplementedError\n",
    solution: str = "def f(x):\n    return x\n",
) -> Path:
    (tmp_path / "exercises").mkdir()
    (tmp_path / "solutions").mkdir()
    (tmp_path / "exercises" / "m.py").write_text(exercise)
    (tmp_path / "solutions" / "m.py").write_text(solution)
    (tmp_path / "exercises" / "test_m.py").write_text("def test_f(student):\n    pass\n")
    (tmp_path / "course.toml").write_text(textwrap.dedent(toml))
    return tmp_path


GOOD = """
format = 1
title = "T"
welcome = "hello"
[[modules]]
name = "m"
topic = "t"
  [[modules.functions]]
  name = "f"
  points = 1
  hint = "h"
"""
