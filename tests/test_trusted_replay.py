"""The trusted side replays every check it can, including checks that jit the student's function.

``prng``'s correctness checks compare ``structure.jit_once(student.fn)`` with the jitted reference. The
student's process records the jitted function's answers with concrete arguments (``fn|jit[...]``), and the
verifier replays them the same way, so these passes are confirmed rather than taken on the student's word
(before, jit traced the recording with tracers, nothing could be recorded, and the claimed pass stood).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from autograder.core.course import load_course
from autograder.core.status import Status
from autograder.grading.grader import Grader, Options
from autograder.grading.verifier import UNVERIFIABLE
from support import ROOT

MODULE = "prng"


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    """The reference graded for real (child and verifier), with what the verifier was given and said."""
    student = tmp_path_factory.mktemp("reference")
    (student / f"{MODULE}.py").write_bytes((ROOT / "solutions" / f"{MODULE}.py").read_bytes())
    grader = Grader(load_course(ROOT), Options((MODULE,), 60, 4000, 1), workers=1)
    seen = {}
    verify = grader.verify

    def spy(claims, transcripts):
        seen["claims"], seen["transcripts"] = claims, transcripts
        seen["verdicts"] = verify(claims, transcripts)
        return seen["verdicts"]

    grader.verify = spy
    try:
        result = grader.grade_submission("reference", Path(student))
        yield grader, result, seen
    finally:
        grader.close()


def test_the_references_jitted_answers_are_replayed_and_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert seen["claims"] and {v["outcome"] for v in seen["verdicts"].values()} == {str(Status.PASSED)}


def test_a_pass_claimed_without_answers_is_not_confirmed(graded_reference):
    grader, _, seen = graded_reference
    verdicts = grader.verify(seen["claims"], {claim: {} for claim in seen["claims"]})
    assert {v["outcome"] for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def test_a_pass_claimed_with_wrong_answers_is_not_confirmed(graded_reference):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"])
    for calls in forged.values():  # every recorded float array gets 1 added to its first element
        for encoded in calls.values():
            _nudge(encoded)
    verdicts = grader.verify(seen["claims"], forged)
    assert UNVERIFIABLE not in {v["outcome"] for v in verdicts.values()}
    assert {v["outcome"] for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def _nudge(encoded) -> None:
    import base64

    import numpy as np

    if isinstance(encoded, dict) and encoded.get("t") in ("np", "jax") and encoded["dtype"].endswith("f4"):
        arr = np.frombuffer(base64.b64decode(encoded["b"]), dtype=np.dtype(encoded["dtype"])).copy()
        if arr.size:
            arr.flat[0] += 1.0
            encoded["b"] = base64.b64encode(arr.tobytes()).decode("ascii")
    elif isinstance(encoded, dict):
        for value in encoded.values():
            _nudge(value)
    elif isinstance(encoded, list):
        for value in encoded:
            _nudge(value)
