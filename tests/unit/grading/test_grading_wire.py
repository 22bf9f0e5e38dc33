"""The grading wing's typed messages (``autograder/grading/wire.py``) and its rules that must be one:
hostile events decode to claims that are never more than what they scored before, the verifier's answers
decode to verdicts, a fault's kind is typed, and the wing's modules import each other without a circle."""

import ast
from pathlib import Path

from support import ROOT

from autograder.core.status import Status
from autograder.grading.events import Tampered, decode
from autograder.grading.wire import (
    CLAIMABLE,
    UNVERIFIABLE,
    Claim,
    Event,
    FaultKind,
    PlannedCheck,
    Replay,
    Verdict,
)


def test_a_claim_is_never_more_than_what_the_child_may_claim():
    end = {"event": "end", "check": "m::test_x", "message": "why"}
    assert Claim.from_event({**end, "outcome": "passed"}).outcome == Status.PASSED
    for outcome in ("skipped", "error", "unconfirmed", "PASSED", None, [], {"a": 1}):
        claim = Claim.from_event({**end, "outcome": outcome})
        assert claim.outcome == Status.FAILED and claim.message == "why", outcome
    assert set(CLAIMABLE) == {Status.PASSED, Status.FAILED, Status.NOT_STARTED}
    # a message that is not text is none; a transcript only comes with a pass, and only as a mapping
    assert Claim.from_event({**end, "outcome": "failed", "message": ["x"]}).message == ""
    assert Claim.from_event({**end, "outcome": "failed", "transcript": {"a": 1}}).transcript is None
    assert Claim.from_event({**end, "outcome": "passed", "transcript": ["a"]}).transcript is None
    assert Claim.from_event({**end, "outcome": "passed", "transcript": {"a": 1}}).transcript == {"a": 1}
    # not a claim at all
    assert Claim.from_event({"event": "begin", "check": "m::test_x"}) is None
    assert Claim.from_event({**end, "check": ["m::test_x"], "outcome": "passed"}) is None


def test_a_claim_round_trips_through_its_event():
    claim = Claim("m::test_x", Status.PASSED, "", {"digest": {"x": 1}})
    event = claim.to_event()
    assert event["event"] == Event.END == "end" and Claim.from_event(event) == claim
    assert "transcript" not in Claim("m::test_x", Status.FAILED, "no").to_event()


def test_tampered_events_and_fault_kinds_are_typed():
    assert decode({"event": "tampered", "what": ["pytest.fail", 3]}) == Tampered(("pytest.fail", "3"))
    assert decode({"event": "tampered", "what": "everything"}) == Tampered(())
    assert not isinstance(decode({"event": "end"}), Tampered)
    assert [str(k) for k in FaultKind] == ["timeout", "memory", "crash", "flood", "stalled"]
    assert f"{FaultKind.MEMORY}" == "memory"


def test_verdicts_and_the_plan_decode_what_the_verifier_wrote():
    assert Verdict.from_wire({"outcome": "passed"}) == Verdict(Replay.PASSED)
    assert Verdict.from_wire({"outcome": "unverifiable"}).outcome is UNVERIFIABLE
    assert Verdict.from_wire({"outcome": "maybe", "message": "m", "missing": 1}) == Verdict(Replay.FAILED, "m", True)
    assert Verdict.from_wire(Verdict(Replay.FAILED, "x", True).to_wire()) == Verdict(Replay.FAILED, "x", True)
    check = PlannedCheck("m::test_f_y[1]", "m", "f", True, trusted_only=True, takes_reference=False, givens=True)
    assert PlannedCheck.from_wire(check.to_wire()) == check
    assert check.test == "test_f_y[1]" and check.qualname == "m.f"
    old = {"check": "m::test_f", "module": "m", "function": "f", "correctness": False}  # a plan without the flags
    assert PlannedCheck.from_wire(old) == PlannedCheck("m::test_f", "m", "f", False)
    assert not PlannedCheck.from_wire(old).confirmed and check.confirmed and check.decided == "values"
    program = PlannedCheck("m::test_f_works_under_jit", "m", "f", False, "program")
    assert PlannedCheck.from_wire(program.to_wire()) == program and program.confirmed
    retraces = PlannedCheck("m::test_f_does_not_retrace", "m", "f", False, "program", analysed=True)
    assert PlannedCheck.from_wire(retraces.to_wire()) == retraces
    # a plan without the flag: every check decided from the source or a program may depend on the source
    unflagged = {key: value for key, value in program.to_wire().items() if key != "analysed"}
    assert PlannedCheck.from_wire(unflagged).analysed and not PlannedCheck.from_wire(old).analysed
    forged = {**old, "decided": "by me"}  # an unknown place is the student's process
    assert PlannedCheck.from_wire(forged).decided == "observed"


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` that ``path`` imports anywhere (function-level included; not TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if (ROOT / (full.replace(".", "/") + ".py")).is_file() else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(package)}
    return found


def test_the_grading_wing_has_no_import_circle():
    package = "autograder.grading"
    graph = {}
    for path in (ROOT / "autograder" / "grading").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = {m for m in _imports(path, package) if m != name and m != package}
    circles = []

    def visit(node, trail):
        for nxt in graph.get(node, ()):
            if nxt in trail:
                circles.append(trail[trail.index(nxt) :] + [nxt])
            elif len(trail) < 40:
                visit(nxt, trail + [nxt])

    for start in graph:
        visit(start, [start])
    assert not circles, circles[:5]
    assert "autograder.grading.outputs.html_report" not in graph["autograder.grading.outputs.class_report"]
    assert not any(
        m.startswith("autograder.notebooks") for m in _imports(ROOT / "autograder/grading/command.py", "autograder")
    )


def test_a_claimed_pass_that_fails_before_it_runs_on_the_trusted_side_is_a_failed_verdict():
    """A claimed check whose fixture fails on the trusted side never reaches its replay (no replay state): its
    verdict is a failure with the course's message (the hook once read the missing state's flag and broke)."""
    import pytest

    from autograder.core.course import Function
    from autograder.grading.trusted.verifier import Verifier
    from autograder.grading.wire import VerifierRequest

    verifier = Verifier(VerifierRequest("verify", checks=["m::test_f_x"]))
    verifier.ids["test_m.py::test_f_x"] = ("m::test_f_x", Function("f", "m", 1.0, "hint"))  # as collected
    setup = pytest.TestReport("test_m.py::test_f_x", ("test_m.py", 1, "test_f_x"), {}, "failed", "a fixture", "setup")
    verifier.pytest_runtest_logreport(setup)
    assert verifier.verdicts == {"m::test_f_x": Verdict(Replay.FAILED, "a fixture", False)}
