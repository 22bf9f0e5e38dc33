"""Issue 42: the module-state checks are decided on the trusted side from the submission's source
(``decided("source", "module_state")``: :mod:`autograder.core.state_writes`), never from what the student's process
says of them.

The reference of ``at_updates`` is graded for real (grading process and verifier): the grader sends the file it
read, and every module-state check is confirmed from it (full marks). Then the verifier is asked again with the
grading process's word kept ("passed") and the source of a submission that writes module state: no such claim is
confirmed, and the verdict names the line; without a source there is no pass either. Last, two hostile students are
graded by the same grader: one appends to a module list and writes "passed" for every check on the event channel
(the forged claim arrives first); one advances a module-level iterator, a write the observation in its own process
cannot see (an iterator's state is opaque to it), which its own process now fails with the analysis's message.
Neither earns the module-state check of that function; the other functions keep theirs. A submission that needs
review (the screen) keeps its module-state checks: they are decided on the trusted side.
"""

from __future__ import annotations

import certificates
import pytest
from grade_fixtures import wrap
from support import reference_source
from test_grade_tamper_evidence import WRITES_CHANNEL

from autograder.core.status import Status

MODULE = "at_updates"
STATE_CHECKS = {
    fn: f"{MODULE}::test_{fn}_keeps_no_module_state_and_leaks_no_tracer"
    for fn in ("set_diagonal", "scatter_add", "clamp_at", "replace_negatives")
}
CHECK = STATE_CHECKS["replace_negatives"]


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), (MODULE,), timeout=120) as graded:
        yield graded


def test_the_references_module_state_checks_are_confirmed_from_its_source(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert seen["sources"] == {MODULE: reference_source(MODULE)}  # the file the grader read, sent as text
    for check in STATE_CHECKS.values():
        assert check in seen["claims"], check
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]
        assert seen["transcripts"][check] == {}  # nothing recorded: the source decides


WRITES = {
    "appends-to-a-module-list": ("_CALLS = []\n", "_CALLS.append(1)", "module-level variable '_CALLS'"),
    "rebinds-a-global": ("_N = 0\n", "global _N; _N = _N + 1", "rebinds the module-level variable '_N'"),
    # invisible to the observation in the student's process (an iterator's state is opaque to it)
    "advances-a-module-iterator": ("import itertools\n_TICKS = itertools.count()\n", "next(_TICKS)", "'_TICKS'"),
    "caches-through-a-helper": (
        "_SEEN = {}\n\n\ndef _remember(x):\n    _SEEN[id(x)] = x\n",
        "_remember(args[0])",
        "in _remember",
    ),
}


def _verify(grader, source: str | None):
    sources = {} if source is None else {MODULE: source}
    return grader.trusted.verify([CHECK], {CHECK: {}}, sources)[CHECK]


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_a_claimed_pass_of_a_submission_that_writes_module_state_earns_nothing(graded_reference, kind):
    grader, _, _ = graded_reference
    top, before, says = WRITES[kind]
    verdict = _verify(grader, wrap(reference_source(MODULE), "replace_negatives", before) + "\n" + top)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert says in verdict.message and f"{MODULE}.py:" in verdict.message, verdict.message


def test_no_source_is_no_pass_and_the_honest_source_passes_again(graded_reference):
    grader, _, _ = graded_reference
    assert str(_verify(grader, None).outcome) == str(Status.FAILED)
    assert str(_verify(grader, reference_source(MODULE)).outcome) == str(Status.PASSED)


HOSTILE = {
    # a forged claim on the event channel for every check, then a write the process's own check would see
    "forges-the-pass": (
        wrap(reference_source(MODULE), "replace_negatives", "_all_passed(); _CALLS.append(1)")
        + WRITES_CHANNEL
        + "\n_CALLS = []\n",
        "replace_negatives",
    ),
    # a write the process's observation cannot see: an iterator's state is opaque to it, so the process claims
    # the pass in good faith
    "advances-a-module-iterator": (
        wrap(reference_source(MODULE), "scatter_add", "next(_TICKS)")
        + "\nimport itertools\n_TICKS = itertools.count()\n",
        "scatter_add",
    ),
}


def _graded(grader, tmp_path, student: str, source: str):
    folder = tmp_path / student
    folder.mkdir()
    (folder / f"{MODULE}.py").write_text(source, encoding="utf-8")
    result = grader.grade_submission(student, folder)
    return result, {str(o.id): o for o in result.outcomes}


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_a_student_who_writes_module_state_earns_nothing_for_it(graded_reference, tmp_path, student):
    grader, reference_result, _ = graded_reference
    source, writer = HOSTILE[student]
    result, outcomes = _graded(grader, tmp_path, student, source)
    state = outcomes[STATE_CHECKS[writer]]
    assert state.status != Status.PASSED, state
    points = result.points_by_function()
    assert points[f"{MODULE}.{writer}"] < reference_result.points_by_function()[f"{MODULE}.{writer}"]
    if student == "advances-a-module-iterator":  # not tampering: the analysis's message, read in its own process
        assert f"{MODULE}.py:28: scatter_add" in state.message and "'_TICKS'" in state.message, state.message
        for fn, check in STATE_CHECKS.items():  # the functions that write nothing keep their module-state check
            if fn != writer:
                assert outcomes[check].status == Status.PASSED, outcomes[check]


def test_a_submission_that_needs_review_keeps_what_its_source_decides(graded_reference, tmp_path):
    """The static screen flags an import outside the course's list (needs review): what is observed in its process
    is withheld, what the trusted side decides (here every check of the module) is kept."""
    grader, reference_result, _ = graded_reference
    source = reference_source(MODULE) + "\nimport sys as _sys\n"
    result, outcomes = _graded(grader, tmp_path, "needs-review", source)
    assert result.review, result
    for check in STATE_CHECKS.values():
        assert outcomes[check].status == Status.PASSED, outcomes[check]
    assert result.points_by_function() == reference_result.points_by_function()
