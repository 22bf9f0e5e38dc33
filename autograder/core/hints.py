"""Hints in steps: the gentle ``hint`` first, the direct ``reveal`` only when the student is stuck.

A failed check shows the function's ``hint`` (which JAX idea, which part of the
docstring). The ``reveal`` (the direct hint) joins it once the same function
has failed in ``[hints] reveal_after_failed_runs`` separate local runs, or
after ``autograder hint FUNCTION --reveal``. Grading never shows it by this
route: there the hint is always the gentle one.
"""

from __future__ import annotations

from autograder.core.course import Course, Function
from autograder.core.outcomes import points_text
from autograder.core.progress import Progress


def gentle_hint(fn: Function) -> str:
    return f"hint: {fn.hint.strip()}"


def hint_block(course: Course, fn: Function, progress: Progress) -> str:
    """The hint lines of a failed check in a student's local run."""
    lines = [gentle_hint(fn)]
    if not fn.reveal:
        return lines[0]
    entry = progress.of(fn.qualname)
    if progress.should_reveal(course, fn):
        why = "you asked for it" if entry.revealed else f"{fn.name} failed in {entry.failed_runs} runs"
        lines.append(f"reveal ({why}): {fn.reveal.strip()}")
    else:
        left = course.hints.reveal_after_failed_runs - entry.failed_runs
        lines.append(
            f"still stuck? `autograder hint {fn.name} --reveal` shows the direct hint "
            f"(it also shows here after {left} more failed run{'s' * (left != 1)})"
        )
    return "\n  ".join(lines)


def find_function(course: Course, name: str) -> Function:
    """``name`` is ``function`` or ``module.function``."""
    module, _, function = name.rpartition(".")
    matches = [fn for fn in course.functions if fn.name == function and module in ("", fn.module)]
    if len(matches) != 1:
        known = ", ".join(fn.name for fn in course.functions)
        what = "is ambiguous; write MODULE.FUNCTION" if matches else "is not a function of this course"
        raise LookupError(f"{name!r} {what} (functions: {known})")
    return matches[0]


def describe(course: Course, fn: Function, progress: Progress, *, reveal: bool) -> str:
    """What ``autograder hint FUNCTION [--reveal]`` prints."""
    lines = [f"{fn.qualname} ({points_text(fn.points, None)} points)", f"  {gentle_hint(fn)}"]
    if reveal and fn.reveal:
        lines.append(f"  reveal: {fn.reveal.strip()}")
    elif reveal:
        lines.append("  (this function has no direct hint beyond the one above)")
    elif fn.reveal:
        runs = progress.of(fn.qualname).failed_runs
        lines.append(
            f"  failed in {runs} of your runs so far; the direct hint shows after "
            f"{course.hints.reveal_after_failed_runs}, or now with `autograder hint {fn.name} --reveal`"
        )
    return "\n".join(lines)
