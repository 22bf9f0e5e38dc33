"""A kept compilation cache is found in another folder (``grade --jax-cache``, ``autograder.runtime.compile_cache``).

``--jax-cache DIR`` keeps each student's cache in ``DIR/<student>`` for a regrade: the next call copies it into the
student's new sandbox, a folder of another name. A program is found there only if its key does not depend on where
the cache lies: JAX's GPU autotuning cache, on by default, lives beneath the cache's folder and that folder went into
every program's key, so a regrade found none of the programs kept for it and compiled them all again, under new
keys, beside the old ones. With that cache off, the regrade of unchanged files compiles nothing: the cache ends as
it began. The grades are the same bytes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT, reference_source
from test_rehearsal import files, grade_alone

from autograder.core.course import load_course
from autograder.grading import api
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"


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
    grade_alone(course, options, snapshot, student, tmp_path / "first", alone=False)
    first = programs(kept / "student")
    assert len(first) > 20, first  # every eager operation on every drawn shape, the checks' programs
    grade_alone(course, options, snapshot, student, tmp_path / "again", alone=False)
    # in a sandbox folder of another name, each program the regrade ran was found under the key it was kept under:
    # none was compiled again and added
    assert programs(kept / "student") == first
    grade_alone(
        course, replace(options, cache_dir=tmp_path / "cold"), snapshot, student, tmp_path / "cold-out", alone=False
    )
    assert programs(tmp_path / "cold" / "student") == first  # the control: the same programs, the same keys, cold
    outputs = [files(tmp_path / out) for out in ("first", "again", "cold-out")]
    assert b"10" in outputs[0]["grades.csv"]  # full marks (10 points), confirmed
    assert outputs[1] == outputs[0] == outputs[2]
