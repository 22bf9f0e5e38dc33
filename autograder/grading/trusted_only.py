"""Which modules are judged on the trusted side only: their grading processes hold no reference.

A module qualifies when no check needs the reference in the process that runs
the student's code, that is when

- its checks of other properties (purity, retracing, jit, ...) do not take the
  ``reference`` fixture at all, and
- its correctness checks take it only themselves, to compare the student's
  answer with the reference's on the same arguments: no fixture they use is
  built with the reference (a scenario of reference states, a sibling
  module's loader), and the check file lends no reference helper
  (``reference_helpers``: without the reference there, a bug in the helper
  would fail the functions built on it too) and takes no sibling reference.

In such a module's grading process the student's own answers stand in for the
reference (:class:`autograder.core.oracle.OwnAnswers`): the correctness checks
only record what the student's functions return, and the verifier, which has
the reference, decides them (its failures are the student's messages). A check
may judge a function with another of the student's own (``pytrees``' ``fit``
runs the student's ``sgd_update``): those calls are recorded too and replayed
by the verifier.
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
NEEDS_THE_REFERENCE_HERE = ("reference_helpers", "sibling")


def modules_judged_on_the_trusted_side(items: Iterable[tuple[pytest.Item, str, bool]]) -> set[str]:
    """The modules of ``items`` ((item, module, is a correctness check)) that qualify (see the module)."""
    seen: set[str] = set()
    disqualified: set[str] = set()
    for item, module, correctness in items:
        seen.add(module)
        if module not in disqualified and _needs_the_reference_here(item, correctness):
            disqualified.add(module)
    return seen - disqualified


def _needs_the_reference_here(item: pytest.Item, correctness: bool) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if REFERENCE not in names:
        return False
    if not correctness:
        return True
    # The fixtures' own arguments: pytest has no public way to ask for them (FuncFixtureInfo is stable since 3.x).
    definitions = getattr(item, "_fixtureinfo").name2fixturedefs
    built_with_it = any(
        REFERENCE in definition.argnames
        for name in names - {REFERENCE}
        for definition in definitions.get(name, ())
    )
    return built_with_it or _lends_reference_code(item.module)


def _lends_reference_code(module: ModuleType | None) -> bool:
    """Whether the check file calls ``reference_helpers`` or ``sibling`` anywhere (fixtures included)."""
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
