"""One submission graded alone meets a warm verifier, and the pre-flight's verdicts stand for the reference's own
answers (issue 43, ``autograder.grading.preflight.rehearsal``).

The pre-flight that proves a setting keeps its verifier's request of the reference, and its answer, beside the proof.
A later call of the same setting that reuses the proof:

- gives a claim whose transcript is the reference's, byte for byte, the verdict the pre-flight reached on it, without
  asking the verifier (graded alone or in a class, a spare CPU or not);
- grading one submission with a CPU to spare, sends the request to its verifier while the student's code runs: the
  claims it does ask (answers that differ from the reference's in one bit) then find the reference's results
  computed (``trusted.shared_results`` counts them), where a verifier that did not rehearse computes every one itself.

The student's grades are the same bytes every way: neither decides anything the verifier would not."""

from __future__ import annotations

import io
import json
import shutil
import threading
from pathlib import Path
from typing import NamedTuple

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


class Graded(NamedTuple):
    shared: dict[str, int]  # what the verifier shared (trusted.shared_results)
    kept: dict[str, int]  # the claims and requests answered without the verifier (trusted.kept_answers)
    analysed: set[str]  # the plan's checks decided from the source too


def grade_alone(course, options, snapshot, folder: Path, out: Path, alone: bool = True) -> Graded:
    """``folder`` graded alone as ``grade_class`` grades it (its pre-flight proven or reused), its files in
    ``out``."""
    digest = Submission.read(folder, options.modules).digest if alone else None
    executor = api.start_executor(course, options, None, threading.Event(), snapshot, 1, True, io.StringIO(), digest)
    try:
        results = executor.grade_class([("student", folder)])
        shared = executor.grader.trusted.shared_results
        kept = executor.grader.trusted.kept_answers
        analysed = {c.id for c in executor.grader.trusted.plan if c.analysed}
    finally:
        executor.close()
    class_files.write_all(out, course, options.modules, results)
    return Graded(shared, kept, analysed)


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_submission_graded_alone_meets_a_verifier_that_rehearsed_and_gets_the_same_bytes(tmp_path, monkeypatch):
    proofs = tmp_path / "proofs"
    monkeypatch.setenv(REUSE_ENV, str(proofs))
    monkeypatch.setenv(SWITCH, "1")
    course = load_course(ROOT)
    snapshot = Snapshot.take(ROOT)
    options = Options((MODULE,), 15, 4000, 1, seed=api.default_seed(snapshot))
    functions = [fn.name for fn in course.module(MODULE).functions]
    first = functions[0]
    student = tmp_path / "student"
    student.mkdir()
    # right, and not the reference byte for byte: its first function's answers are within the tolerance, one bit
    # off, so its claims are replayed; every other function's answers are the reference's
    (student / f"{MODULE}.py").write_text(
        reference_source(MODULE)
        + f"\n\n_{first} = {first}\n\n\ndef {first}(*args, **kwargs):\n    return _{first}(*args, **kwargs) * (1 + 2**-20)\n"
    )

    monkeypatch.setattr(cpus, "spare", lambda: True)
    # the first call proves the setting: its pre-flight keeps its request of the reference and the answer
    grade_alone(course, options, snapshot, student, tmp_path / "proving")
    kept = list((proofs / REHEARSAL).glob(f"*/{REQUEST}"))
    assert len(kept) == 1 and oct(kept[0].stat().st_mode & 0o777) == "0o600", kept
    answer = json.loads(kept[0].read_text())["answer"]
    others = {check for check in answer if not check.startswith(f"{MODULE}::test_{first}_")}
    assert others and len(others) < len(answer)

    def again(out: str, alone: bool = True) -> Graded:
        shutil.rmtree(proofs / CONFIRMED, ignore_errors=True)  # no answer of an earlier call: the verifier is asked
        return grade_alone(course, options, snapshot, student, tmp_path / out, alone)

    rehearsed, rehearsed_kept, analysed = again("rehearsed")
    # the very same files again, their answer kept by the call before: nothing to rehearse for, and the verifier is
    # asked nothing at all
    assert grade_alone(course, options, snapshot, student, tmp_path / "kept")[0] == {
        "hits": 0,
        "misses": 0,
        "verdicts": 0,
    }
    # the controls: no idle CPU, a class (not graded alone); none kept: tests/unit/grading/test_kept_rehearsal.py
    monkeypatch.setattr(cpus, "spare", lambda: False)
    one, one_kept, _ = again("busy")
    monkeypatch.setattr(cpus, "spare", lambda: True)
    klass, klass_kept, _ = again("class", alone=False)
    # every way, the claims whose transcripts are the reference's got the pre-flight's verdicts (not those decided
    # from the source too: this source is not the reference's), and one request (the first function's claims, and
    # those decided from the source) was asked of the verifier
    assert analysed & others and others - analysed
    same = len(others - analysed)
    assert rehearsed_kept["rehearsed"] == one_kept["rehearsed"] == klass_kept["rehearsed"] == same, (
        rehearsed_kept,
        one_kept,
        klass_kept,
        sorted(others),
    )
    assert rehearsed_kept["asked"] == one_kept["asked"] == klass_kept["asked"] == 1
    # a verifier that did not rehearse shares only what one student's checks ask twice; one that did found what the
    # student's replayed checks asked of the reference computed already (while the student's code ran)
    assert rehearsed["hits"] > one["hits"] == klass["hits"], (rehearsed, one, klass)
    assert one["misses"] > 0 and one["misses"] == klass["misses"]
    graded = [files(tmp_path / out) for out in ("proving", "rehearsed", "kept", "busy", "class")]
    assert {"grades.csv", "student/results.json"} <= set(graded[0])
    assert all(other == graded[0] for other in graded[1:])
    assert b"10" in graded[0]["grades.csv"]  # full marks (10 points), confirmed
