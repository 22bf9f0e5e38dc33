"""The plumbing of checks decided from the source (``decided("source", analysis)``, issue 42): the mark names an
analysis of ``core.from_source.ANALYSES``; the plan carries the kind; the verifier decides a claimed pass from the
text the request carries (never running the check), and fails it when the text is missing or the analysis finds
something; the student's process raises the same failure before the check's body."""

from __future__ import annotations

import pytest

from autograder.core import from_source
from autograder.core.course import Function
from autograder.core.failures import CheckFailure
from autograder.grading.wire import PlannedCheck, Replay, Verdict, VerifierRequest
from autograder.pytest_plugin import decided


class _Item:
    """What ``decided`` reads of a pytest item: its markers."""

    def __init__(self, *marks: pytest.MarkDecorator):
        self.marks = {m.mark.name: m.mark for m in marks}

    def get_closest_marker(self, name: str):
        return self.marks.get(name)


def _writes_if_told(source: str, module: str, function: str) -> CheckFailure | None:
    """A stand-in analysis: fails where the source says so."""
    if f"WRITES {function}" in source:
        return CheckFailure(f"{function} writes nothing", f"{module}.py:1 writes in {function}", "a hint")
    return None


@pytest.fixture
def analysis(monkeypatch):
    monkeypatch.setattr(from_source, "ANALYSES", {**from_source.ANALYSES, "told": _writes_if_told})
    monkeypatch.setattr(decided, "ANALYSES", from_source.ANALYSES)
    return "told"


def test_the_mark_names_where_and_which_analysis(analysis):
    assert decided.decided_where(_Item(pytest.mark.decided("source", analysis))) == decided.SOURCE
    assert decided.source_analysis(_Item(pytest.mark.decided("source", analysis))) == analysis
    assert decided.decided_on_the_trusted_side(_Item(pytest.mark.decided("source", analysis)))
    assert not decided.replayed_on_the_trusted_side(_Item(pytest.mark.decided("source", analysis)))
    # no analysis, an unknown one, or a correctness check: not decided from the source
    for item in (
        _Item(pytest.mark.decided("source")),
        _Item(pytest.mark.decided("source", "no such analysis")),
        _Item(pytest.mark.decided("program")),
        _Item(pytest.mark.decided("source", analysis), pytest.mark.correctness),
    ):
        assert decided.source_analysis(item) is None
    assert decided.decided_where(_Item(pytest.mark.decided("source", "no such"))) == decided.OBSERVED
    assert decided.replayed_on_the_trusted_side(_Item(pytest.mark.decided("program")))


def test_the_plan_and_the_request_carry_the_kind_and_the_text():
    check = PlannedCheck("m::test_f_keeps_no_module_state", "m", "f", False, "source")
    assert PlannedCheck.from_wire(check.to_wire()) == check and check.confirmed
    request = VerifierRequest("verify", checks=[check.id], sources={"m": "def f(): pass\n"})
    assert VerifierRequest.from_wire(request.to_wire()).sources == {"m": "def f(): pass\n"}


def test_a_missing_text_or_an_unknown_analysis_fails(analysis):
    assert from_source.decide_from_source(analysis, "def f(): pass\n", "m", "f") is None
    assert "no source of m.py" in str(from_source.decide_from_source(analysis, None, "m", "f"))
    assert "no source analysis" in str(from_source.decide_from_source("nope", "def f(): pass\n", "m", "f"))
    assert "m.py:1 writes in f" in str(from_source.decide_from_source(analysis, b"# WRITES f\n", "m", "f"))


def test_the_verifier_decides_a_claim_from_the_text_without_running_it(analysis):
    from autograder.grading.trusted import verifier as verifier_module

    fn = Function("f", "m", 1.0, "hint")
    item = _Item(pytest.mark.decided("source", analysis))
    verdict = verifier_module.verdict_from_the_source  # the one place the verifier reaches a verdict from the source
    assert verdict(item, "def f(): pass\n", fn) == Verdict(Replay.PASSED)
    failed = verdict(item, "# WRITES f\n", fn)
    assert failed.outcome == Replay.FAILED and "m.py:1 writes in f" in failed.message and "a hint" in failed.message
    assert verdict(item, None, fn).outcome == Replay.FAILED  # no text: never a pass
    assert verdict(item, {"not": "text"}, fn).outcome == Replay.FAILED  # hostile wire data: never a pass
