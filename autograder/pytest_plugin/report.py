"""Reporting: what a student reads, and the score.

- :func:`student_message` turns any failure of a check (a :class:`CheckFailure`,
  an exception raised by the student's code, a stub, an import error) into a
  short message: what was checked, the smallest failing input, expected vs
  got, and the hint from ``course.toml``.
- :func:`score_functions` turns check outcomes into points per function.
- :func:`score_table` renders the table printed at the end of a run.
"""

from __future__ import annotations

import json
import re
import textwrap
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from autograder.core.course import Course, Function
from autograder.core.failures import CheckFailure, NotStarted
from autograder.checks.structure import jit_error_explanation
from autograder.core.submission import SubmissionImportError

PASSED, FAILED, NOT_STARTED = "passed", "failed", "not started"


@dataclass
class CheckOutcome:
    """One check (pytest test) of one function."""

    module: str
    function: str
    check: str
    outcome: str  # PASSED, FAILED or NOT_STARTED
    correctness: bool = False
    message: str = ""


@dataclass
class FunctionScore:
    module: str
    function: str
    points: float
    max_points: float
    status: str
    passed: int
    total: int
    messages: list[str] = field(default_factory=list)


def _student_frame(exc: BaseException, files: Iterable[Path]) -> str:
    names = {str(Path(f).resolve()) for f in files}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(Path(f.filename).resolve()) in names]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (at {Path(frame.filename).name} line {frame.lineno}: {(frame.line or '').strip()})"


def failing_input(exc: BaseException, fixture_names: Iterable[str] = ()) -> str:
    """The shrunk example hypothesis attached to ``exc``, without fixture arguments."""
    notes = getattr(exc, "__notes__", None) or []
    skip = tuple(f"{name}=" for name in fixture_names)
    lines: list[str] = []
    for note in notes:
        if not note.startswith(("Falsifying", "Failing")):
            continue
        body = [
            line.rstrip()
            for line in note.splitlines()[1:]
            if line.strip() != ")" and not line.strip().startswith(skip)
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
    local run adds the direct hint when they are stuck, see ``autograder.student.hints``).
    """
    text = describe_exception(exc, function, student_files)
    if isinstance(exc, (NotStarted, NotImplementedError, SubmissionImportError)):
        return text
    example = failing_input(exc, fixture_names)
    if example:
        text += "\n  smallest failing input:\n" + example
    return text + "\n  " + (hint or f"hint: {function.hint.strip()}")


def is_not_started(exc: BaseException) -> bool:
    return isinstance(exc, (NotStarted, NotImplementedError))


def score_functions(course: Course, outcomes: Iterable[CheckOutcome]) -> list[FunctionScore]:
    """Points per function, in ``course.toml`` order, for every function that was checked.

    A function earns ``points * passed / total``, and nothing while one of
    its correctness checks (its values against the reference) fails: a wrong
    answer earns no points for being pure or fast.
    """
    by_function: dict[tuple[str, str], list[CheckOutcome]] = {}
    for outcome in outcomes:
        by_function.setdefault((outcome.module, outcome.function), []).append(outcome)
    scores = []
    for fn in course.functions:
        checks = by_function.get((fn.module, fn.name))
        if not checks:
            continue
        passed = sum(c.outcome == PASSED for c in checks)
        if any(c.outcome == NOT_STARTED for c in checks) and passed == 0:
            status = NOT_STARTED
        elif passed == len(checks):
            status = PASSED
        else:
            status = FAILED
        gate_failed = any(c.correctness and c.outcome != PASSED for c in checks)
        points = 0.0 if gate_failed else round(fn.points * passed / len(checks), 2)
        messages = [c.message for c in checks if c.outcome != PASSED and c.message]
        scores.append(FunctionScore(fn.module, fn.name, points, fn.points, status, passed, len(checks), messages))
    return scores


_MARK = {PASSED: "✓", FAILED: "✗", NOT_STARTED: "·"}


def _points(value: float) -> str:
    return f"{value:g}"


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
        detail = {PASSED: "", NOT_STARTED: "not started"}.get(s.status, f"{s.passed}/{s.total} checks pass")
        pts = f"{_points(s.points)}/{_points(s.max_points)}"
        lines.append(f"  {_MARK[s.status]} {s.function:<{width}}{pts:>9}  {detail}".rstrip())
    got = sum(s.points for s in scores)
    total = sum(s.max_points for s in scores)
    lines.append(f"total: {_points(round(got, 2))}/{_points(total)}")
    return "\n".join(lines)


def write_results(
    path: Path, scores: list[FunctionScore], outcomes: list[CheckOutcome], slow_compiles: dict[str, float] | None = None
) -> None:
    """Machine-readable results: per-function scores, every check's outcome, and the checks that compiled long."""
    payload = {
        "score": round(sum(s.points for s in scores), 2),
        "max_score": sum(s.max_points for s in scores),
        "functions": [asdict(s) for s in scores],
        "checks": [asdict(o) for o in outcomes],
        "slow_compiles": slow_compiles or {},
    }
    Path(path).write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
