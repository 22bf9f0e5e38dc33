"""Which modules are judged on the trusted side only: their grading processes hold no reference.

A module qualifies when no check needs the reference in the process that runs
the student's code, that is when

- its checks of other properties (purity, retracing, jit, ...) do not take the
  ``reference`` fixture themselves (a fixture of theirs may, see below), and
- its check file lends no reference helper (``reference_helpers``: without the
  reference there, a bug in the helper would fail the functions built on it too).

Its correctness checks take the reference themselves, to compare the student's
answer with the reference's on the same arguments. Its fixtures may build what
the checks are *given* with the reference (a start state, a sibling module's
loader): the trusted side records those calls first and the grading process
answers them from that recording (:mod:`autograder.recording.givens`); a
given is never the answer to a graded input (``tests/test_givens.py`` proves
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

import ast
from pathlib import Path
from types import ModuleType
from typing import Iterable

import pytest

REFERENCE = "reference"
# What a check file may not call for its module to be judged on the trusted side only.
NEEDS_THE_REFERENCE_HERE = ("reference_helpers",)


def modules_judged_on_the_trusted_side(items: Iterable[tuple[pytest.Item, str, bool]]) -> set[str]:
    """The modules of ``items`` ((item, module, is a correctness check)) that qualify (see the module)."""
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
            definitions = getattr(item, "_fixtureinfo").name2fixturedefs
            if any(REFERENCE in d.argnames for name, defs in definitions.items() if name != REFERENCE for d in defs):
                found.add(module)
    return found


def _needs_the_reference_here(item: pytest.Item, correctness: bool) -> bool:
    if REFERENCE not in set(getattr(item, "fixturenames", ())):
        return False
    # The check function's own arguments: pytest's FuncFixtureInfo (stable since 3.x) has no public accessor.
    takes_it_itself = REFERENCE in getattr(item, "_fixtureinfo").argnames
    return (takes_it_itself and not correctness) or _lends_reference_code(item.module)


def _lends_reference_code(module: ModuleType | None) -> bool:
    """Whether the check file calls ``reference_helpers`` anywhere (fixtures included)."""
    path = getattr(module, "__file__", None)
    if path is None:
        return False
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.Call) and _called_name(node.func) in NEEDS_THE_REFERENCE_HERE for node in ast.walk(tree)
    )


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
