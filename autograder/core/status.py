"""The one vocabulary of verdicts, for a check and for a function.

A ``str`` enum: it compares equal to, and serialises as, its value, so JSON
files, CSV rows and messages read ``"passed"``, ``"not started"``, ...
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # the check ran and found something wrong
    NOT_STARTED = "not started"  # the function is still the stub
    ERROR = "error"  # the check could not judge the submission (the grader's side failed)
    UNCONFIRMED = "unconfirmed"  # the student's process claimed a pass the trusted side did not confirm

    @property
    def mark(self) -> str:
        """One character for the score table."""
        return {Status.PASSED: "✓", Status.NOT_STARTED: "·"}.get(self, "✗")

    @classmethod
    def parse(cls, value: object, default: Status | None = None) -> Status:
        """The status named ``value`` (e.g. read from an untrusted channel), else ``default`` (FAILED)."""
        try:
            return cls(value)  # type: ignore[arg-type]  # any value: one that names no status raises ValueError
        except ValueError:
            return default or cls.FAILED
