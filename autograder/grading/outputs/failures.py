"""What kind of failure a function's score is, shared by every output (class files, report, feedback).

A function that is not passed failed for one of three reasons, which the outputs count apart:
its module file was not submitted (:data:`MISSING`), it is still the stub (:data:`NOT_STARTED`),
or a real mistake (:data:`MISTAKE`).
"""

from __future__ import annotations

from autograder.core.outcomes import FunctionScore, StudentResult
from autograder.core.status import Status

MISSING, NOT_STARTED, MISTAKE = "missing", "not started", "mistake"
# what read_submission says of a module file it could not take (the student's folder lacks it)
_MISSING_FILE = ("is missing from your submission", "is a symbolic link; submit the file itself", "is larger than ")


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return line if len(line) <= 160 else line[:157] + "..."


def failure_kind(score: FunctionScore) -> str | None:
    """None when the function passed; :data:`MISSING` when its module file was not submitted,
    :data:`NOT_STARTED` when it is still the stub, else :data:`MISTAKE` (a real one)."""
    if score.status == Status.PASSED:
        return None
    if score.messages and all(
        m.startswith(f"{score.module}.py ") and any(k in m for k in _MISSING_FILE) for m in score.messages
    ):
        return MISSING
    if score.status == Status.NOT_STARTED:
        return NOT_STARTED
    return MISTAKE


def failure_lines(score: FunctionScore) -> list[str]:
    """The distinct first lines of a failed function's messages (each counts once per student)."""
    return list(dict.fromkeys(_first_line(m) for m in score.messages or ["(no message)"]))


def submitted_nothing(result: StudentResult) -> bool:
    """No module file of the graded modules was in the student's folder."""
    return bool(result.scores) and all(failure_kind(s) == MISSING for s in result.scores)


def submission_warnings(result: StudentResult) -> list[str]:
    """What the student's folder held instead of a module file ("... found X; expected Y", said by
    :func:`~autograder.core.submission.read_submission`), once per module."""
    return list(
        dict.fromkeys(
            m.strip() for s in result.scores if failure_kind(s) == MISSING for m in s.messages if ": found " in m
        )
    )
