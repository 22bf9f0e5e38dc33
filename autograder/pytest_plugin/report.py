"""Reporting: what a student reads, and the score.

- :func:`student_message` turns any failure of a check (a :class:`CheckFailure`,
  an exception raised by the student's code, a stub, an import error) into a
  short message: what was checked, the smallest failing input, expected vs
  got, and the hint from ``course.toml``.
- (points per function: :func:`autograder.core.outcomes.score_functions`)
- :func:`score_table` renders the table printed at the end of a run.
"""

from __future__ import annotations

import textwrap
import traceback
from collections.abc import Iterable
from pathlib import Path

import pytest

from autograder.core.course import Course, Function
from autograder.core.failures import CheckFailure, NotStarted
from autograder.core.outcomes import FunctionScore, points_text
from autograder.core.status import Status
from autograder.core.submission import SubmissionImportError


def _student_frame(exc: BaseException, files: Iterable[Path]) -> str:
    names = {str(Path(f).resolve()) for f in files}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(Path(f.filename).resolve()) in names]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (at {Path(frame.filename).name} line {frame.lineno}: {(frame.line or '').strip()})"


def exception_line(excinfo: pytest.ExceptionInfo) -> str:
    """What a failed check's report holds until the student's message replaces it: the exception's line."""
    return excinfo.exconly()


def failing_input(exc: BaseException, fixture_names: Iterable[str] = ()) -> str:
    """The shrunk example hypothesis attached to ``exc``, without fixture arguments."""
    notes = getattr(exc, "__notes__", None) or []
    skip = tuple(f"{name}=" for name in fixture_names)
    lines: list[str] = []
    for note in notes:
        if not note.startswith(("Falsifying", "Failing")):
            continue
        body = [
            line.rstrip() for line in note.splitlines()[1:] if line.strip() != ")" and not line.strip().startswith(skip)
        ]
        lines += textwrap.indent(textwrap.dedent("\n".join(body)), "    ").splitlines()
    return "\n".join(lines)


def describe_exception(exc: BaseException, function: Function, student_files: Iterable[Path]) -> str:
    """One paragraph saying what went wrong, without a traceback."""
    if isinstance(exc, NotStarted):
        return str(exc)
    if isinstance(exc, NotImplementedError):
        return f"{function.qualname} is not started yet (it still raises NotImplementedError)"
    if isinstance(exc, SubmissionImportError):
        return str(exc)
    if isinstance(exc, CheckFailure):
        text = str(exc)
        if text.startswith(function.name + " "):  # "clamp_at modified ..." -> "at_updates.clamp_at modified ..."
            return f"{function.module}.{text}"
        return f"{function.qualname}: {text}"
    from autograder.checks.structure import jit_error_explanation  # imports JAX: only once a check failed

    explanation = jit_error_explanation(exc)
    where = _student_frame(exc, student_files)
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if explanation:
        what, instead = explanation
        return f"{function.qualname} cannot be traced by JAX: {what}{where}\n  {instead}"
    if isinstance(exc, AttributeError) and f"'{function.name}'" in str(exc) and "module" in str(exc):
        return f"{function.module}.py does not define {function.name}"
    return f"{function.qualname} raised {type(exc).__name__}: {first_line}{where}"


def student_message(
    exc: BaseException,
    function: Function,
    student_files: Iterable[Path] = (),
    fixture_names: Iterable[str] = (),
    hint: str | None = None,
) -> str:
    """The full student-facing message for a failed check.

    ``hint`` replaces the default ``hint: <course.toml hint>`` line (a student's
    local run adds the direct hint when they are stuck, see ``autograder.core.hints``).
    """
    text = describe_exception(exc, function, student_files)
    if isinstance(exc, (NotStarted, NotImplementedError, SubmissionImportError)):
        return text
    example = failing_input(exc, fixture_names)
    if example:
        text += f"\n  {_which_failing_input()}:\n" + example
    return text + "\n  " + (hint or f"hint: {function.hint.strip()}")


def _which_failing_input() -> str:
    """Hypothesis shrinks a failing input to the smallest it can find, except on the trusted side of
    ``grade`` (see :func:`autograder.pytest_plugin.profiles.without_shrinking`)."""
    from hypothesis import Phase, settings

    assert settings.default is not None  # hypothesis loads its default profile when imported
    return "smallest failing input" if Phase.shrink in settings.default.phases else "first failing input drawn"


def score_table(course: Course, scores: list[FunctionScore]) -> str:
    """The per-module, per-function table with the total."""
    if not scores:
        return ""
    width = max(len(s.function) for s in scores) + 4
    lines = [f"{course.title} — score"]
    current = None
    for s in scores:
        if s.module != current:
            current = s.module
            module = course.module(s.module)
            lines.append(f"{module.name} — {module.topic}")
        detail = {Status.PASSED: "", Status.NOT_STARTED: "not started"}.get(
            s.status, f"{s.passed}/{s.total} checks pass"
        )
        pts = f"{points_text(s.points, None)}/{points_text(s.max_points, None)}"
        lines.append(f"  {s.status.mark} {s.function:<{width}}{pts:>9}  {detail}".rstrip())
    got = sum(s.points for s in scores)
    total = sum(s.max_points for s in scores)
    lines.append(f"total: {points_text(got)}/{points_text(total, None)}")
    return "\n".join(lines)
