"""``autograder watch [MODULE]``: re-run a module's checks every time a file in ``exercises/`` is saved.

The screen is redrawn after each run: the module's score table, the first
failing check's message, what to do next, and the checks that waited long for
JAX to compile. Saving ``exercises/<module>.py`` (or its checks) switches the
screen to that module. Ctrl-C leaves with one line and exit status 0.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from autograder.core import progress as local_progress
from autograder.core.course import Course
from autograder.core.status import Status
from autograder.pytest_plugin.compile_time import slow_compile_lines
from autograder.pytest_plugin.report import score_table
from autograder.student.reset import keep_pristine_copies
from autograder.student.runs import ModuleRun, run_module
from autograder.student.status import next_function, rows

CLEAR = "\x1b[H\x1b[2J\x1b[3J"
STOPPED = "autograder watch stopped."


def module_of_change(course: Course, paths: list[str]) -> str | None:
    """The module a saved file belongs to (``exercises/<m>.py`` or ``exercises/test_<m>.py``)."""
    names = {m.name for m in course.modules}
    for path in reversed(paths):
        stem = Path(path).stem.removeprefix("test_")
        if Path(path).suffix == ".py" and stem in names:
            return stem
    return None


def _is_exercise_file(change, path: str) -> bool:
    return path.endswith(".py") and "__pycache__" not in Path(path).parts


def next_step(course: Course, run: ModuleRun) -> str:
    failing = run.first_failure
    if failing is not None:
        return (
            f"next: fix {failing.function} in exercises/{run.module}.py: read the message above and its docstring again.\n"
            f"      `autograder hint {failing.function}` repeats the hint; `autograder reset {run.module}.{failing.function}` "
            "starts it over (your version is backed up)."
        )
    waiting = next((f for f in run.functions if f.status == Status.NOT_STARTED), None)
    if waiting is not None:
        return f"next: write {waiting.function} in exercises/{run.module}.py (replace its `raise NotImplementedError`)."
    if run.functions and all(f.status == Status.PASSED for f in run.functions):
        upcoming = next_function(rows(course, local_progress.load(course.root)))
        if upcoming is None:
            return "every function of the course is done. Well done!"
        return (
            f"{run.module} is done. next: {upcoming.function.qualname} in exercises/{upcoming.function.module}.py "
            "(saving it switches this screen there)."
        )
    return "the checks did not run; pytest's output is above."


def render(course: Course, run: ModuleRun, number: int) -> str:
    module = course.module(run.module)
    when = time.strftime("%H:%M:%S")
    lines = [f"autograder watch · {module.name} — {module.topic} · run {number} at {when} ({run.seconds:.1f} s)", ""]
    table = score_table(course, run.functions)
    if table:
        lines += table.splitlines()[2:]  # without the course title and the module line, said above
    else:
        lines += ["(no results: pytest said)", *run.output.strip().splitlines()[-25:]]
    failing = run.first_failure
    if failing is not None and failing.messages:
        lines += [
            "",
            f"first failing check of {failing.function}:",
            *("  " + line for line in failing.messages[0].splitlines()),
        ]
    lines += ["", next_step(course, run)]
    slow = slow_compile_lines(run.slow_compiles)
    if slow:
        lines += ["", *(f"slow: {line}" for line in slow)]
    lines += ["", "watching exercises/ — save a file to check it again · Ctrl-C to quit"]
    return "\n".join(lines)


def first_module(course: Course) -> str:
    upcoming = next_function(rows(course, local_progress.load(course.root)))
    return upcoming.function.module if upcoming else course.modules[0].name


def watch(course: Course, module: str | None = None, out: TextIO = sys.stdout) -> int:
    import watchfiles

    keep_pristine_copies(course)
    module = module or first_module(course)
    clear = CLEAR if out.isatty() else "\n" + "-" * 60 + "\n"
    number = 0

    def check(module: str) -> None:
        nonlocal number
        number += 1
        out.write(f"\nchecking {module} ...\n")
        out.flush()
        run = run_module(course, module)
        out.write(clear + render(course, run, number) + "\n")
        out.flush()

    try:
        check(module)
        # One watcher for the whole session: files saved during a run are seen after it.
        for changes in watchfiles.watch(course.root / "exercises", watch_filter=_is_exercise_file, debounce=300):
            keep_pristine_copies(course)
            module = module_of_change(course, sorted(path for _, path in changes)) or module
            check(module)
    except KeyboardInterrupt:
        pass
    out.write(f"\n{STOPPED}\n")
    out.flush()
    return 0
