"""A correctness check whose verdict the trusted side cannot confirm from recorded values earns nothing unless
the README lists it as observed in the student's process (issue 32, 2c: a ``make_loader`` returning ``[]``,
which the verifier could not replay, kept the grading process's "passed")."""

from autograder.core.status import Status
from autograder.grading import verdicts
from autograder.grading.trusted import trusted_only
from autograder.grading.wire import UNVERIFIABLE, Verdict


def test_an_unreplayable_correctness_check_earns_nothing_unless_listed(monkeypatch):
    check = "data::test_make_loader_gives_numpy_batches[False]"
    outcome, message = verdicts.trusted_verdict(check, "data.make_loader", Verdict(UNVERIFIABLE))
    assert outcome != Status.PASSED and "could not judge" in message
    monkeypatch.setattr(trusted_only, "OBSERVED_CORRECTNESS", frozenset({"data::test_make_loader_gives_numpy_batches"}))
    assert verdicts.trusted_verdict(check, "data.make_loader", Verdict(UNVERIFIABLE))[0] == Status.PASSED
    assert (
        verdicts.trusted_verdict(check, "data.make_loader", Verdict.from_wire({"outcome": Status.PASSED}))[0]
        == Status.PASSED
    )


def test_the_list_of_unreplayable_correctness_checks_is_the_readmes():
    """Every correctness check of the course is replayed today: the list is empty, and the README says so."""
    from support import ROOT

    assert trusted_only.OBSERVED_CORRECTNESS == frozenset()
    assert "none\nis today: `trusted_only.OBSERVED_CORRECTNESS`" in (ROOT / "README.md").read_text()
