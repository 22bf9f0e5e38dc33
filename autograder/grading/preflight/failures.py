"""What a grading environment that fails raises, and how the grader quotes a crashed process.

:class:`PreflightFailed` (the course's own submissions did not get their known scores) and :class:`GraderError`
(a grading process died before the student's code was imported: the grader's failure, never a student's score),
with the helpers that write their messages: :func:`last_lines` quotes a process's last stderr lines (its fatal
lines kept, Python's stack dumps dropped) and :func:`no_terminal_control` strips what a student's process may have
written to move a terminal's cursor.
"""

from __future__ import annotations

import re

from autograder.grading.events import ImportBegin

TAIL_LINES = 15


class PreflightFailed(Exception):
    """The environment failed its pre-flight check; ``str(err)`` is the instructor's message."""


class GraderError(Exception):
    """A grading process died before the student's code ran: the grader's failure, not the student's."""


def fault_before_student(run) -> bool:
    """Whether a grading run's fault (a :class:`~autograder.grading.isolation.limits.RunResult` with one) happened
    before the student's code was imported: no ``import_begin`` event came, so no student code had run."""
    return run.fault is not None and not any(isinstance(event, ImportBegin) for event in run.events)


def grader_error(module: str, run, limits: str) -> GraderError:
    """The :class:`GraderError` for ``run`` of ``module``, which died before the student's code ran."""
    fault = run.fault
    how = fault.detail or fault.kind
    return GraderError(
        f"a grading process of {module} stopped before the student's code was imported ({how}; {limits}): "
        "this is the grader's environment failing, not the student; nothing more is graded."
        + last_lines(getattr(run, "stderr_tail", ""))
    )


def last_lines(tail: str, n: int = TAIL_LINES) -> str:
    """``tail`` (a process's last stderr) as the message's last part: its last ``n`` lines, and every fatal
    line of it (XLA's ``F...`` lines) even when it is further up."""
    tail = no_terminal_control(tail)  # a student's process may have written there
    lines = [line for line in tail.splitlines() if line.strip() and not _STACK.match(line)]
    if not lines:
        return ""
    shown = lines[-n:]
    fatal = [line for line in lines[:-n] if _fatal(line)]
    return "\nthe grading process's last lines:\n" + "\n".join(f"  | {line}" for line in (*fatal, *shown))


# a terminal's escape sequences (CSI, OSC, and the other ESC forms), then any control character left but a line's
# end and a tab
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b.?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def no_terminal_control(text: str) -> str:
    """``text`` (written by a process that may be a student's) without terminal control sequences or control
    characters (line ends and tabs kept), so that quoting it in the grader's messages moves no cursor, sets no
    title and hides nothing."""
    return _CONTROL.sub("", _ESCAPE.sub("", text.replace("\r\n", "\n")))


# Python's faulthandler dump (every frame of every thread, the extension modules): not the cause, which is
# the line before it (XLA's fatal line, "terminate called ...", an OpenBLAS error)
_STACK = re.compile(
    r"^\s+@\s+0x|^\s+File \".*\", line \d+ in |^(Current thread|Thread) 0x|^Extension modules: |^\s*<no Python frame>|^Stack \(most recent call first\)"
)


def _fatal(line: str) -> bool:
    return (len(line) > 5 and line[0] == "F" and line[1:5].isdigit()) or "Fatal Python error" in line or "FATAL" in line
