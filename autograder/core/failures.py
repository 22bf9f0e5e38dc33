"""The one exception every check raises, carrying what a student needs to act."""

from __future__ import annotations

import re

from autograder.core.status import Status

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour codes (pytest colours what it reports; a message is read as plain text)."""
    return _ANSI.sub("", text)


class CheckFailure(AssertionError):
    """A check found something wrong with the student's function.

    ``check`` says what was checked (one short sentence), ``problem`` what is
    wrong, ``details`` optional lines (expected vs got, an explanation).
    The string form is the full student-facing message.
    """

    def __init__(self, check: str, problem: str, details: str = ""):
        self.check = check
        self.problem = problem
        self.details = details.rstrip()
        super().__init__(self._render())

    def _render(self) -> str:
        text = f"{self.problem}\n  checked: {self.check}"
        if self.details:
            text += "\n" + "\n".join("  " + line for line in self.details.splitlines())
        return text


class NotStarted(Exception):
    """The student's function is still the stub."""


def status_of(exc: BaseException) -> Status:
    """The status a check that raised ``exc`` gets: the one place "not started" is recognised."""
    if isinstance(exc, (NotStarted, NotImplementedError)):
        return Status.NOT_STARTED
    return Status.FAILED
