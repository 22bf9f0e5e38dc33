"""Which modules are judged on the trusted side only: their grading processes hold no reference.

A module qualifies when no check needs the reference in the process that runs
the student's code, that is when its checks of other properties (purity,
retracing, jit, ...) do not take the ``reference`` fixture themselves (a
fixture of theirs may, see below).

Its correctness checks take the reference themselves, to compare the student's
answer with the reference's on the same arguments. Its fixtures may build what
the checks are *given* with the reference (a start state, a sibling module's
loader): the trusted side records those calls first and the grading process
answers them from that recording (:mod:`autograder.recording.givens`); a
given is never the answer to a graded input (``tests/system/test_givens.py`` proves
it for the course).

In such a module's grading process the student's own answers stand in for the
reference in the checks (:class:`autograder.core.oracle.OwnAnswers`): the
correctness checks only record what the student's functions return, and the
verifier, which has the reference, decides them (its failures are the
student's messages). A check may judge a function with another of the
student's own (``pytrees``' ``fit`` runs the student's ``sgd_update``), or
along the student's own path (each training step from the state the student's
previous step returned, ``oracle.continue_from``): those calls are recorded
too and replayed by the verifier.
Decided on the trusted side while planning, from the checks it collected.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the grader's process never imports pytest for this module: only the verifier runs its checks
    import pytest

REFERENCE = "reference"


def modules_judged_on_the_trusted_side(items: Iterable[tuple[pytest.Item, str, bool]]) -> set[str]:
    """The modules of ``items`` ((item, module, decided on the trusted side)) that qualify (see the module)."""
    seen: set[str] = set()
    disqualified: set[str] = set()
    for item, module, correctness in items:
        seen.add(module)
        if module not in disqualified and _needs_the_reference_here(item, correctness):
            disqualified.add(module)
    return seen - disqualified


def modules_with_givens(items: Iterable[tuple[pytest.Item, str, bool]], modules: set[str]) -> set[str]:
    """The ``modules`` (judged on the trusted side only) whose checks use a fixture built with the reference:
    the trusted side records those fixtures' calls for their grading processes (see the module)."""
    found = set()
    for item, module, _ in items:
        if module in modules and module not in found:
            definitions = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]  # a pytest.Function's
            if any(REFERENCE in d.argnames for name, defs in definitions.items() if name != REFERENCE for d in defs):
                found.add(module)
    return found


def _needs_the_reference_here(item: pytest.Item, confirmed: bool) -> bool:
    # A check the trusted side decides compares with the reference there; any other that takes the reference
    # needs it in the grading process. The check function's own arguments: pytest's FuncFixtureInfo (stable
    # since 3.x) has no public accessor.
    return not confirmed and REFERENCE in item._fixtureinfo.argnames  # type: ignore[attr-defined]


# Correctness checks whose verdict the trusted side cannot confirm from recorded values (their results are
# not data it can replay against the reference), and whose pass the grading process's verdict still decides,
# by the check's name without its parameters: the README lists them under "observed in the student's
# process". Every other correctness check the verifier cannot replay earns nothing. Empty: every correctness
# check of the course is replayed (make_loader's batches are recorded as data since this list exists).
OBSERVED_CORRECTNESS: frozenset[str] = frozenset()


def observed_in_the_students_process(check: str) -> bool:
    """Whether the correctness check ``check`` (``module::test[params]``) may keep the grading process's pass
    when the verifier cannot replay it (see :data:`OBSERVED_CORRECTNESS`)."""
    return check.split("[", 1)[0] in OBSERVED_CORRECTNESS
