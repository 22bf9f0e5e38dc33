"""A kept compilation cache is found in another folder (``grade --jax-cache``, ``autograder.runtime.compile_cache``).

``--jax-cache DIR`` keeps each student's cache in ``DIR/<student>`` for a regrade: the next call copies it into the
student's new sandbox, a folder of another name. A program is found there only if its key does not depend on where
the cache lies: JAX's GPU autotuning cache, on by default, lives beneath the cache's folder and that folder went into
every program's key, so a regrade found none of the programs kept for it and compiled them all again, under new
keys, beside the old ones. With that cache off, the regrade of unchanged files compiles nothing: the cache ends as
it began. The grades are the same bytes."""

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

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"


def grade(course, options, snapshot, folder: Path, out: Path) -> None:
    """``folder`` graded as ``grade_class`` grades a class of one, into ``out``."""
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


def test_a_regrade_finds_every_program_kept_for_it(tmp_path):
    course = load_course(ROOT)
    snapshot = Snapshot.take(ROOT)
    kept = tmp_path / "kept"
    options = Options((MODULE,), 15, 4000, 1, seed=api.default_seed(snapshot), cache_dir=kept)
    student = tmp_path / "student"
    student.mkdir()
    (student / f"{MODULE}.py").write_text(reference_source(MODULE) + "\n# my own copy\n")
    grade(course, options, snapshot, student, tmp_path / "first")
    first = programs(kept / "student")
    assert len(first) > 20, first  # every eager operation on every drawn shape, the checks' programs
    grade(course, options, snapshot, student, tmp_path / "again")
    # in a sandbox folder of another name, each program the regrade ran was found under the key it was kept under:
    # none was compiled again and added
    assert programs(kept / "student") == first
    grade(course, replace(options, cache_dir=tmp_path / "cold"), snapshot, student, tmp_path / "cold-out")
    assert programs(tmp_path / "cold" / "student") == first  # the control: the same programs, the same keys, cold
    outputs = [files(tmp_path / out) for out in ("first", "again", "cold-out")]
    assert b"10" in outputs[0]["grades.csv"]  # full marks (10 points), confirmed
    assert outputs[1] == outputs[0] == outputs[2]
