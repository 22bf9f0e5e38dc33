"""One submission graded alone meets a warm verifier (issue 43, ``autograder.grading.preflight.rehearsal``).

The pre-flight that proves a setting keeps its verifier's request of the reference beside the proof. A later call
of the same setting that reuses the proof, grades one submission and has a CPU to spare sends it to its verifier
while the student's code runs: the student's own request then finds the reference's results computed
(``trusted.shared_results`` counts them), where a verifier that did not rehearse computes every one itself. The
student's grades are the same bytes either way: the rehearsal decides nothing."""

from __future__ import annotations

import io
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from support import ROOT, reference_source

from autograder.core.course import load_course
from autograder.core.submission import Submission
from autograder.grading import api
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options
from autograder.grading.outputs import class_files
from autograder.grading.preflight import REUSE_ENV
from autograder.grading.preflight.confirmations import CONFIRMED
from autograder.grading.preflight.rehearsal import REHEARSAL, REQUEST
from autograder.grading.trusted.shared import SWITCH
from autograder.runtime import cpus

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"


def grade_alone(course, options, snapshot, folder: Path, out: Path, alone: bool = True) -> dict[str, int]:
    """``folder`` graded alone as ``grade_class`` grades it (its pre-flight proven or reused), its files in ``out``;
    what the verifier shared."""
    digest = Submission.read(folder, options.modules).digest if alone else None
    executor = api.start_executor(course, options, None, threading.Event(), snapshot, 1, True, io.StringIO(), digest)
    try:
        results = executor.grade_class([("student", folder)])
        shared = executor.grader.trusted.shared_results
    finally:
        executor.close()
    class_files.write_all(out, course, options.modules, results)
    return shared


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_submission_graded_alone_meets_a_verifier_that_rehearsed_and_gets_the_same_bytes(tmp_path, monkeypatch):
    proofs = tmp_path / "proofs"
    monkeypatch.setenv(REUSE_ENV, str(proofs))
    monkeypatch.setenv(SWITCH, "1")
    course = load_course(ROOT)
    snapshot = Snapshot.take(ROOT)
    options = Options((MODULE,), 15, 4000, 1, seed=api.default_seed(snapshot))
    student = tmp_path / "student"
    student.mkdir()
    # right, and not the reference byte for byte: no answer the pre-flight's verifier gave stands in for its own
    (student / f"{MODULE}.py").write_text(reference_source(MODULE) + "\n# my own copy\n")

    monkeypatch.setattr(cpus, "spare", lambda: True)
    # the first call proves the setting: its pre-flight keeps its request of the reference
    grade_alone(course, options, snapshot, student, tmp_path / "proving")
    kept = list((proofs / REHEARSAL).glob(f"*/{REQUEST}"))
    assert len(kept) == 1 and oct(kept[0].stat().st_mode & 0o777) == "0o600", kept

    def again(out: str, **changes) -> dict[str, int]:
        shutil.rmtree(proofs / CONFIRMED, ignore_errors=True)  # no answer of an earlier call: the verifier is asked
        return grade_alone(course, replace(options, **changes), snapshot, student, tmp_path / out)

    rehearsed = again("rehearsed")
    # the very same files again, their answer kept by the call before: nothing to rehearse for, and the verifier is
    # asked nothing at all
    assert grade_alone(course, options, snapshot, student, tmp_path / "kept") == {"hits": 0, "misses": 0, "verdicts": 0}
    # the controls: no idle CPU, a class (not graded alone); none kept: tests/unit/grading/test_kept_rehearsal.py
    monkeypatch.setattr(cpus, "spare", lambda: False)
    one = again("busy")
    monkeypatch.setattr(cpus, "spare", lambda: True)
    shutil.rmtree(proofs / CONFIRMED, ignore_errors=True)
    klass = grade_alone(course, options, snapshot, student, tmp_path / "class", alone=False)
    # a verifier that did not rehearse shares only what one student's checks ask twice, and had judged nothing
    # before. One that did had judged the reference's transcripts while the student's code ran: this student's
    # answers are the reference's, bit for bit, so every check it claims gets the verdict reached then (values,
    # programs and the analyses of a source alike) and its request asks the reference nothing (the hits and misses
    # are the rehearsal's own, those of the request the other verifiers answered)
    assert rehearsed["verdicts"] > one["verdicts"] == klass["verdicts"] == 0, (rehearsed, one, klass)
    assert rehearsed["hits"] == one["hits"] == klass["hits"], (rehearsed, one, klass)
    assert rehearsed["misses"] == one["misses"] == klass["misses"]
    graded = [files(tmp_path / out) for out in ("proving", "rehearsed", "kept", "busy", "class")]
    assert {"grades.csv", "student/results.json"} <= set(graded[0])
    assert all(other == graded[0] for other in graded[1:])
    assert b"10" in graded[0]["grades.csv"]  # full marks (10 points), confirmed
