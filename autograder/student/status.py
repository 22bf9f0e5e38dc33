"""``autograder status``: the whole course in one table, and the next function to work on.

By default it reads the last result of each function from the student's local
progress (every ``pytest exercises/`` and ``watch`` run records it) and looks
at the files for the rest: a function still raising ``NotImplementedError`` is
not started, any other is started. ``--run`` checks every module now instead,
with the deterministic grading profile. The output says which it did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from autograder.core import progress as local_progress
from autograder.core.course import Course, Function
from autograder.core.outcomes import points_text
from autograder.core.status import Status
from autograder.core.submission import stub_functions
from autograder.student.runs import run_modules

DONE, STARTED, NOT_YET = "done", "started", "not started"
_MARK = {DONE: "✓", STARTED: "✗", NOT_YET: "·"}


@dataclass
class Row:
    function: Function
    state: str  # DONE, STARTED or NOT_YET
    points: float
    note: str  # e.g. "failing", "not checked yet", "edited since the last run"


def _stubs(course: Course, module: str) -> set[str]:
    try:
        return stub_functions(course.exercise_path(module))
    except (OSError, SyntaxError):
        return set()


def rows(course: Course, progress: local_progress.Progress) -> list[Row]:
    out = []
    for module in course.modules:
        stubs = _stubs(course, module.name)
        path = course.exercise_path(module.name)
        modified = path.stat().st_mtime if path.exists() else 0.0
        for fn in module.functions:
            last = progress.of(fn.qualname)
            edited = " (edited since)" if last.status and modified > last.checked_at else ""
            if fn.name in stubs:
                out.append(Row(fn, NOT_YET, 0.0, ""))
            elif last.status == Status.PASSED:
                out.append(Row(fn, DONE, last.points, f"checked {_when(last.checked_at)}{edited}"))
            elif last.status in (Status.FAILED, Status.NOT_STARTED):
                out.append(Row(fn, STARTED, last.points, f"failing, checked {_when(last.checked_at)}{edited}"))
            else:
                out.append(Row(fn, STARTED, 0.0, "not checked yet"))
    return out


def _when(seconds: float) -> str:
    if time.time() - seconds < 20 * 3600:
        return time.strftime("%H:%M", time.localtime(seconds))
    return time.strftime("%Y-%m-%d", time.localtime(seconds))


def next_function(table: list[Row]) -> Row | None:
    """The first function in course order that is not done."""
    return next((row for row in table if row.state != DONE), None)


def render(course: Course, table: list[Row], source: str) -> str:
    width = max(len(row.function.name) for row in table) + 2
    lines = [f"{course.title} — status", f"({source})", ""]
    current = None
    for row in table:
        fn = row.function
        if fn.module != current:
            current = fn.module
            lines.append(f"{fn.module} — {course.module(fn.module).topic}")
        pts = f"{points_text(row.points, None)}/{points_text(fn.points, None)}"
        lines.append(f"  {_MARK[row.state]} {fn.name:<{width}}{pts:>7}  {row.state:<12}{row.note}".rstrip())
    got = sum(row.points for row in table)
    done = sum(row.state == DONE for row in table)
    lines += [
        "",
        f"total: {points_text(got, None)}/{points_text(course.points, None)} points, {done}/{len(table)} functions done",
    ]
    upcoming = next_function(table)
    if upcoming is None:
        lines.append("every function is done. Well done!")
    else:
        fn = upcoming.function
        lines.append(f"next: {fn.qualname} — open exercises/{fn.module}.py and run `autograder watch {fn.module}`")
    return "\n".join(lines)


def status(course: Course, *, run: bool = False) -> str:
    if run:
        for result in run_modules(course, [module.name for module in course.modules], grading=True):
            # status --run is not one of the student's attempts: it updates the last results only.
            local_progress.record_run(course.root, result.functions, profile="grading", count_failures=False)
        source = "checked just now: every module's checks, grading profile"
    else:
        source = "from your last local runs (pytest exercises/, autograder watch); `autograder status --run` checks everything now"
    return render(course, rows(course, local_progress.load(course.root)), source)
