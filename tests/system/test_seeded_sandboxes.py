"""A student's sandbox starts with the programs of JAX's own operations the pre-flight's reference compiled (issue 43,
``autograder.grading.preflight.seed``).

Every student's compilation cache is their own and began empty, so each one compiled again the programs every
correct way of writing a function runs: one operation on a check's shapes (``jit_add``, ``jit_scatter-max``). The
pre-flight that proves a setting now keeps those of its reference's programs beside the proof, and each student's
new sandbox starts with a copy: a correct student compiles what is their own. Never a program named after a function
of the course (it may be the reference's compiled answer), nothing a student writes reaches the seed or a classmate,
and the grades are the same bytes with and without it."""

from __future__ import annotations

import hashlib
import io
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT, reference_source
from test_rehearsal import files, grade_alone

from autograder.core.course import load_course
from autograder.grading import api
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options
from autograder.grading.outputs import class_files
from autograder.grading.preflight import REUSE_ENV
from autograder.grading.preflight.seed import SEED, course_names, program_name
from autograder.grading.trusted.shared import SWITCH
from autograder.runtime import library_programs

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"

# At import, a student's module overwrites every program of its cache with garbage and adds one of its own under
# a library program's name, then gives the reference's answers.
OVERWRITES_ITS_CACHE = """
import os as _os

_cache = _os.path.join(_os.environ.get("HOME", "/nonexistent"), ".jax_cache")
for _name in _os.listdir(_cache) if _os.path.isdir(_cache) else []:
    try:
        with open(_os.path.join(_cache, _name), "wb") as _f:
            _f.write(b"not a program")
    except OSError:
        pass
try:
    with open(_os.path.join(_cache, "jit_add-" + "ab" * 32 + "-cache"), "wb") as _f:
        _f.write(b"planted by a student")
except OSError:
    pass
"""


def the_seed(proofs: Path) -> Path:
    (folder,) = (proofs / SEED).iterdir()
    return folder


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.fixture
def setting(tmp_path, monkeypatch):
    monkeypatch.setenv(REUSE_ENV, str(tmp_path / "proofs"))
    monkeypatch.setenv(SWITCH, "1")
    snapshot = Snapshot.take(ROOT)
    options = Options((MODULE,), 15, 4000, 1, seed=api.default_seed(snapshot), cache_dir=tmp_path / "kept")
    return load_course(ROOT), options, snapshot


def test_a_correct_student_compiles_only_the_programs_the_seed_does_not_hold(setting, tmp_path, monkeypatch):
    course, options, snapshot = setting
    student = tmp_path / "student"
    student.mkdir()
    (student / f"{MODULE}.py").write_text(reference_source(MODULE) + "\n# my own copy\n")
    grade_alone(course, options, snapshot, student, tmp_path / "seeded", alone=False)  # proves: the seed is kept
    seed = the_seed(tmp_path / "proofs")
    held = {p.name: p.stat().st_mtime_ns for p in seed.iterdir()}
    assert len(held) > 20, held
    names = {program_name(name) for name in held}
    assert names <= library_programs.names()
    assert not names & course_names(snapshot.course)  # never one that may be the reference's own
    kept = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "kept" / "student").iterdir()}
    assert set(held) <= set(kept)  # planted, and found: none was written again
    assert all(kept[name] == held[name] for name in held)
    compiled = {name for name, written in kept.items() if name not in held}
    # the control: no seed (the class's sharing off), every program compiled in the student's own processes
    monkeypatch.setenv(SWITCH, "0")
    cold = replace(options, cache_dir=tmp_path / "cold")
    grade_alone(course, cold, snapshot, student, tmp_path / "cold-out", alone=False)
    unseeded = set(os.listdir(tmp_path / "cold" / "student"))
    assert set(held) <= unseeded  # the seed's programs are ones the student compiles without it
    assert len(compiled) * 5 < len(unseeded), (len(compiled), len(unseeded))
    outputs = files(tmp_path / "seeded"), files(tmp_path / "cold-out")
    assert b"10" in outputs[0]["grades.csv"]  # full marks (10 points), confirmed
    assert outputs[0] == outputs[1]


def test_what_a_student_writes_in_their_cache_reaches_neither_the_seed_nor_a_classmate(setting, tmp_path):
    course, options, snapshot = setting
    folders = []
    for name, source in (("hostile", OVERWRITES_ITS_CACHE + reference_source(MODULE)), ("classmate", None)):
        folder = tmp_path / "class" / name
        folder.mkdir(parents=True)
        (folder / f"{MODULE}.py").write_text(source or reference_source(MODULE) + "\n# mine\n")
        folders.append((name, folder))
    executor = api.start_executor(course, options, None, threading.Event(), snapshot, 1, True, io.StringIO(), None)
    try:
        seed = the_seed(tmp_path / "proofs")
        before = digests(seed)
        results = {r.student: r for r in executor.grade_class(folders)}
    finally:
        executor.close()
    assert digests(seed) == before
    hostile = digests(tmp_path / "kept" / "hostile")
    assert set(before) <= set(hostile) and all(hostile[n] != before[n] for n in before)  # their own copy, spoiled
    classmate = digests(tmp_path / "kept" / "classmate")
    assert all(classmate[n] == before[n] for n in before) and "jit_add-" + "ab" * 32 + "-cache" not in classmate
    out = tmp_path / "out"
    class_files.write_all(out, course, options.modules, list(results.values()))
    assert sum(s.points for s in results["classmate"].scores) == 10
