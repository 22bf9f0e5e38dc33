"""Every student's cache starts with what the course's reference compiled (issue 43,
``autograder.grading.preflight.compiled``).

The pre-flight that proves a setting keeps the programs its reference's grading processes compiled beside the proof;
every student's sandbox starts its cache with a copy. A right answer that lowers to the reference's programs then
compiles nothing: its processes' cache ends as it began, the reference's programs and no other (``--jax-cache``
shows the cache each student's processes ended with). That holds only if a program's key is the same in another
folder: JAX's default GPU autotuning cache put the cache's own folder into every key, and a copy found nothing.
A later call that reuses the proof seeds from what was kept; with ``AUTOGRADER_CLASS_SHARING=0`` nothing is seeded
(a student compiles every program). The grades are the same bytes every way."""

from __future__ import annotations

import io
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT, reference_source

from autograder.core.course import load_course
from autograder.grading import api
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options
from autograder.grading.outputs import class_files
from autograder.grading.preflight import REUSE_ENV
from autograder.grading.preflight.compiled import COMPILED
from autograder.grading.trusted.shared import SWITCH

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"


def grade(course, options, snapshot, folder: Path, out: Path) -> None:
    """``folder`` graded as ``grade_class`` grades a class of one (its pre-flight proven or reused), into ``out``."""
    executor = api.start_executor(course, options, None, threading.Event(), snapshot, 1, True, io.StringIO(), None)
    try:
        results = executor.grade_class([("student", folder)])
    finally:
        executor.close()
    class_files.write_all(out, course, options.modules, results)


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def programs(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.endswith("-cache")}


def test_a_right_answer_finds_every_program_it_runs_compiled_by_the_reference(tmp_path, monkeypatch):
    proofs = tmp_path / "proofs"
    monkeypatch.setenv(REUSE_ENV, str(proofs))
    monkeypatch.setenv(SWITCH, "1")
    course = load_course(ROOT)
    snapshot = Snapshot.take(ROOT)
    options = Options((MODULE,), 15, 4000, 1, seed=api.default_seed(snapshot))
    student = tmp_path / "student"
    student.mkdir()
    (student / f"{MODULE}.py").write_text(reference_source(MODULE) + "\n# my own copy\n")

    def graded(name: str, **changes) -> set[str]:
        """The programs the student's processes ended with, graded into ``tmp_path / name``."""
        cache = tmp_path / f"cache-{name}"
        grade(course, replace(options, cache_dir=cache, **changes), snapshot, student, tmp_path / name)
        return programs(cache / "student")

    proving = graded("proving")  # proves the setting: its reference's programs are kept
    kept = list((proofs / COMPILED).iterdir())
    assert len(kept) == 1 and oct(kept[0].stat().st_mode & 0o777) == "0o700", kept
    reference = programs(kept[0])
    assert len(reference) > 20, reference  # every eager operation on every drawn shape, the checks' programs
    # the student's processes ran the reference's very programs, under the very keys, in another folder: each was
    # found in the copy their cache started with, and none was compiled and added
    assert proving == reference
    # the proof reused: the student's cache starts with what was kept (a file the grader put there comes back)
    (kept[0] / "planted-by-the-grader-cache").write_bytes(b"the grader's own")
    assert graded("reused") == reference | {"planted-by-the-grader-cache"}
    monkeypatch.setenv(SWITCH, "0")  # the control: nothing seeded, the student compiles what it runs, alone
    assert graded("alone") == reference
    outputs = [files(tmp_path / out) for out in ("proving", "reused", "alone")]
    assert b"10" in outputs[0]["grades.csv"]  # full marks (10 points), confirmed
    assert outputs[1] == outputs[0] == outputs[2]
