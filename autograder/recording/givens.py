"""Givens: what a module's fixtures build with the reference, recorded on the trusted side and shipped as data.

A module judged on the trusted side only (:mod:`autograder.grading.trusted.trusted_only`)
has grading processes that hold no reference. Its fixtures may still build what
the checks are *given* with the reference — a start state, the batches of a
loader, a state trained elsewhere — because the trusted side records those calls
first (``--setup-only`` with a recording oracle: fixtures run, checks do not)
and the grading process answers them from the recording. The checks' own calls
of ``reference.<fn>`` are answered by the student's own functions
(:class:`autograder.core.oracle.OwnAnswers`), and the verifier decides them,
its fixtures answered from the same givens.

A given is never an answer to a graded input: a fixture builds its states on
other seeds, keys and data than the checks judge. ``tests/system/test_givens.py``
proves it on the course: no array the givens hold equals an expected value of
a check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from autograder.core.oracle import Reference
from autograder.recording.recorded import NotRecorded, RecordedFunction, RecordedOracle, call_text
from autograder.runtime import stores

# fixtures being set up
_DEPTH: list[int] = stores.register("recording.givens.depth", [0], clear=lambda: _DEPTH.__setitem__(0, 0))


@contextlib.contextmanager
def setting_up_fixtures() -> Iterator[None]:
    """While active, ``reference.<fn>`` answers from the givens (the grading process wraps each fixture's setup)."""
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1


def in_fixture_setup() -> bool:
    return _DEPTH[0] > 0


class FixturesFromGivens:
    """pytest plugin of a process that has givens (a grading process, the verifier): while a fixture is set up,
    ``reference.<fn>`` answers from them (:func:`setting_up_fixtures`)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        with setting_up_fixtures():
            return (yield)


class GivensMissing(RuntimeError):
    """A fixture asked the reference something the trusted side did not record: the course's fixtures
    do not build the same inputs on both sides (a course bug, never the student's)."""


class GivensFirst(Reference):
    """A module's oracle where its fixtures are answered from the givens: while fixtures are set up, the
    recorded givens; in a check, ``then``. In a grading process ``then`` is the student's own answers (it
    holds no reference), on the trusted side the live reference: both sides then build the checks' inputs
    from the same recorded data (a checkpoint's files, which Orbax never writes twice alike, included).

    The classes the course gives (``DropoutClassifier``) are the stub's in a grading process (never the
    student's), the reference's on the trusted side. ``then`` is None for a sibling module in a grading
    process: its functions may build fixtures only.
    """

    knows_only_its_own_path = False  # a check continues along the student's path (oracle.continue_from)

    def __init__(self, module_name: str, givens: RecordedOracle | None, then: Any, *, live: bool = False):
        self.module_name, self.givens, self.then, self.live = module_name, givens, then, live

    @property
    def __name__(self) -> str:  # the reference module's name, for the course's classes on the trusted side
        return getattr(self.then, "__name__", self.module_name)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        given = getattr(self.givens, name, None)
        if given is not None and not isinstance(given, RecordedFunction):
            return getattr(self.then, name) if self.live else given  # a given class or constant
        if in_fixture_setup():
            if given is None:
                raise GivensMissing(f"no givens were recorded for {self.module_name}")
            return _Given(given)
        if self.then is None:
            raise RuntimeError(f"{self.module_name}'s reference may be used by fixtures only here")
        return getattr(self.then, name)

    def __repr__(self) -> str:
        return f"<givens, then {self.then!r}, for {self.module_name}>"

    def sibling(self, module: str) -> GivensFirst:
        givens = self.givens.sibling(module) if self.givens is not None else None
        then = self.then.sibling(module) if self.live else None
        return GivensFirst(module, givens, then, live=self.live)

    def transformed(self, name: str, label: str, transform: Callable) -> Callable:
        if in_fixture_setup():
            if self.givens is None:
                raise GivensMissing(f"no givens were recorded for {self.module_name}")
            return _Given(self.givens.transformed(name, label, transform))
        return self.then.transformed(name, label, transform)


class _Given:
    """A reference function answering a fixture from the givens; an input they do not hold is a course bug."""

    reference_function = True  # a function to the checks (see oracle.is_reference_function)

    def __init__(self, recorded: RecordedFunction):
        self.recorded = recorded
        self.__name__ = self.__qualname__ = recorded.__name__

    def __call__(self, *args, **kwargs):
        try:
            return self.recorded.lookup(args, kwargs)
        except NotRecorded:
            raise GivensMissing(
                f"the grader's givens hold no answer of reference.{self.__name__}{call_text(args, kwargs)}"
            ) from None
