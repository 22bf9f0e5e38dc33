"""What ``autograder watch | status | reset | hint`` do once their arguments are parsed (see :mod:`autograder.cli.student`)."""

from __future__ import annotations

import sys

from autograder.core import hints
from autograder.core import progress as local_progress
from autograder.core.course import Course
from autograder.student.reset import ResetError, keep_pristine_copies, plan, reset


def watch(course: Course, module: str | None) -> int:
    from autograder.student.watch import watch as run_watch

    if module is not None and module not in {m.name for m in course.modules}:
        raise SystemExit(
            f"autograder watch: {module!r} is not a module of this course ({', '.join(m.name for m in course.modules)})"
        )
    return run_watch(course, module)


def status(course: Course, run: bool) -> int:
    from autograder.student.status import status as render_status

    keep_pristine_copies(course)
    print(render_status(course, run=run))
    return 0


def hint(course: Course, name: str, reveal: bool) -> int:
    keep_pristine_copies(course)
    try:
        fn = hints.find_function(course, name)
    except LookupError as err:
        raise SystemExit(f"autograder hint: {err}") from None
    if reveal and fn.reveal:
        local_progress.mark_revealed(course.root, fn.qualname)
    print(hints.describe(course, fn, local_progress.load(course.root), reveal=reveal))
    return 0


def reset_stub(course: Course, target: str, yes: bool) -> int:
    keep_pristine_copies(course)
    try:
        module, functions = plan(course, target)
    except ResetError as err:
        raise SystemExit(f"autograder reset: {err}") from None
    what = f"{module}.{functions[0]}" if len(functions) == 1 and "." in target else f"every function of {module}"
    if not yes:
        if not sys.stdin.isatty():
            raise SystemExit("autograder reset: not asking without a terminal; add --yes to reset anyway")
        answer = input(f"Put {what} back as released in exercises/{module}.py? Your version is backed up first. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing changed.")
            return 1
    try:
        backup, source = reset(course, target)
    except ResetError as err:
        raise SystemExit(f"autograder reset: {err}") from None
    print(f"reset {what} (from {source}); your version is in {backup.relative_to(course.root)}")
    return 0
