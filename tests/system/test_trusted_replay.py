"""The trusted side replays every check it can: it confirms a claimed pass only with the student's own answers.

- ``prng``'s checks jit the student's function: the student's process records the jitted function's answers
  with concrete arguments (``fn|jit[...]``) and the verifier replays them the same way;
- ``autodiff``'s take the check's own functions as arguments (looked up by their source);
- ``batchnorm``'s take and return ``TrainState``s of a course class, with an optimizer and an apply function
  (recorded as recipes, rebuilt around the verifier's own);
- ``data``'s ``XORDataset`` returns a dataset (recorded as its items); ``make_loader``'s check gets the
  function through a fixture built on the module under test (``loader_module``): it was confirmed by running
  the reference's own copy, and is now honestly unverifiable (a ``DataLoader`` is not data).

Before, these could not be written as plain data, and a claimed pass stood on the student's word.
"""

from __future__ import annotations

import copy
import os
import signal
import time
from pathlib import Path

import pytest
from support import ROOT

from autograder.core.course import load_course
from autograder.core.status import Status
from autograder.grading.grader import Grader, Options
from autograder.grading.wire import UNVERIFIABLE

MODULES = ("prng", "autodiff", "batchnorm", "data")


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    """The reference graded for real (child and verifier), with what the verifier was given and said."""
    student = tmp_path_factory.mktemp("reference")
    for module in MODULES:
        (student / f"{module}.py").write_bytes((ROOT / "solutions" / f"{module}.py").read_bytes())
    grader = Grader(load_course(ROOT), Options(MODULES, 60, 4000, 1), workers=1)
    seen = {}
    verify = grader.trusted.verify

    def spy(claims, transcripts):
        seen["claims"], seen["transcripts"] = claims, transcripts
        seen["verdicts"] = verify(claims, transcripts)
        return seen["verdicts"]

    grader.trusted.verify = spy
    try:
        result = grader.grade_submission("reference", Path(student))
        grader.trusted.verify = verify  # the tests' own calls must not overwrite what the grade run recorded
        assert all(seen["transcripts"][claim] for claim in replayable(seen))
        yield grader, result, seen
    finally:
        grader.close()


def test_the_references_answers_are_replayed_and_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert {claim.split("::")[0] for claim in seen["claims"]} == set(MODULES)
    outcomes = {claim: verdict.outcome for claim, verdict in seen["verdicts"].items()}
    # every claim is replayed and confirmed: make_loader's batches are recorded as data (issue 32: an
    # unverifiable pass no longer stands, and make_loader's stood unverified before)
    assert set(outcomes.values()) == {str(Status.PASSED)}, outcomes


def replayable(seen) -> list[str]:
    return list(seen["claims"])


def test_a_pass_claimed_without_answers_is_not_confirmed(graded_reference):
    grader, _, seen = graded_reference
    verdicts = grader.trusted.verify(replayable(seen), {claim: {} for claim in replayable(seen)})
    assert {v.outcome for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def test_a_pass_claimed_with_wrong_answers_is_not_confirmed(graded_reference):
    grader, _, seen = graded_reference
    forged = {claim: copy.deepcopy(seen["transcripts"][claim]) for claim in replayable(seen)}
    for calls in forged.values():  # every recorded float array gets 1 added to its first element
        for encoded in calls.values():
            _nudge(encoded)
    verdicts = grader.trusted.verify(replayable(seen), forged)
    assert UNVERIFIABLE not in {v.outcome for v in verdicts.values()}
    assert {v.outcome for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def _nudge(encoded) -> None:
    """Add 1 to the first element of the first non-empty float array of a recorded result; a recorded program
    (a uint8 array, ``checks.programs``) loses its second half."""
    import base64

    import numpy as np

    for packed in encoded.get("arrays", []):
        arr = np.frombuffer(base64.b64decode(packed["b"]), dtype=np.dtype(packed["dtype"])).copy()
        if arr.dtype.kind == "f" and arr.size:
            arr.flat[0] += 1.0
            packed["b"] = base64.b64encode(arr.tobytes()).decode("ascii")
            return
        if arr.dtype == np.uint8 and arr.ndim == 1 and arr.size > 64:
            half = arr[: arr.size // 2]
            packed["b"], packed["shape"] = base64.b64encode(half.tobytes()).decode("ascii"), [half.size]
            return


def test_one_trusted_process_confirms_student_after_student(graded_reference):
    """The run's verifier outlives a student (its compiled programs stay warm): a student it failed leaves
    nothing behind for the next, and one that died is replaced."""
    grader, _, seen = graded_reference
    honest = {claim: seen["transcripts"][claim] for claim in replayable(seen)}
    [server] = grader.trusted.verifiers.started()
    grader.trusted.verify(replayable(seen), {claim: {} for claim in replayable(seen)})
    verdicts = grader.trusted.verify(replayable(seen), honest)
    assert {v.outcome for v in verdicts.values()} == {str(Status.PASSED)}, verdicts
    assert grader.trusted.verifiers.started() == [server] and server.alive()

    os.kill(server.handle.pid, signal.SIGKILL)
    while server.alive():
        time.sleep(0.05)
    verdicts = grader.trusted.verify(replayable(seen), honest)
    assert {v.outcome for v in verdicts.values()} == {str(Status.PASSED)}, verdicts
    [replaced] = grader.trusted.verifiers.started()
    assert replaced is not server and replaced.alive()
