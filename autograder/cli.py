"""The ``autograder`` command (also ``python -m autograder``).

Each subcommand is a function ``add_<name>(subparsers)`` that declares its
arguments and sets ``handler``; ``main`` dispatches. To add a subcommand, add
an ``add_...`` function and list it in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from autograder.core.course import CourseError, find_root, load_course


def add_grade(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "grade",
        help="grade a folder of submissions (one sub-folder per student)",
        description="Grade every student folder in SUBMISSIONS, each in its own limited process, "
        "and write OUT/grades.csv, OUT/<student>/results.json and OUT/summary.md.",
    )
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N", help="parallel workers (default: cores)")
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per function (default: course.toml)")
    parser.add_argument("--memory", type=int, metavar="MB", help="memory limit per process (default: course.toml)")
    parser.add_argument("--only", action="append", metavar="MODULE", help="grade only this module (repeatable)")
    parser.add_argument("--jax-cache", type=Path, metavar="DIR", help="keep JAX's compilation cache of the grading processes here (default: a temporary folder per run)")
    parser.add_argument("--no-zygote", action="store_true", help="start a fresh interpreter per run (slower; for comparison)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run into the same OUT: students it finished are not graded again "
        "(refused when the kit, course, options or libraries changed)",
    )
    parser.add_argument("--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)")
    parser.add_argument(
        "--gradebook",
        metavar="URL",
        help="also write the scores into an nbgrader gradebook (e.g. sqlite:///course/gradebook.db), "
        "so formgrader and `nbgrader export` see them",
    )
    parser.set_defaults(handler=run_grade)
    return parser


def run_grade(args: argparse.Namespace) -> int:
    from autograder.grading import class_report, run_state, sandbox
    from autograder.grading import grader as grading

    course = _course(args.course)
    names = [m.name for m in course.modules]
    modules = tuple(args.only or names)
    unknown = [m for m in modules if m not in names]
    if unknown:
        raise SystemExit(f"autograder grade: unknown module(s) {unknown}; course.toml has {names}")
    modules = tuple(m for m in names if m in modules)
    if not args.submissions.is_dir():
        raise SystemExit(f"autograder grade: {args.submissions} is not a folder")
    out = args.out.resolve()
    options = grading.Options(
        modules=modules,
        timeout_per_function=args.timeout or course.grading.timeout_per_function,
        memory_mb=args.memory or course.grading.memory_limit_mb,
        jobs=args.jobs,
        cache_dir=args.jax_cache,
        zygote=not args.no_zygote,
    )
    students = grading.find_students(args.submissions)
    snapshot = sandbox.Snapshot.take(course.root)
    run = run_state.fingerprint(
        snapshot.course, snapshot.kit,
        {"modules": list(modules), "timeout_per_function": options.timeout_per_function, "memory_mb": options.memory_mb},
    )
    try:
        state = run_state.RunState.start(out, run, resume=args.resume)
    except run_state.ResumeError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    finished = state.finished(students, modules)
    if finished:
        print(f"resuming {out}: {len(finished)} already graded, {len(students) - len(finished)} to grade")

    def keep(result: grading.StudentResult) -> None:
        """A student is finished: its results.json now, and the record --resume reads."""
        class_report.write_student(out, course, modules, result)
        state.record(result)

    stop = threading.Event()
    progress = grading.Progress()
    results: list[grading.StudentResult] = []
    with _stop_on_signals(stop) as caught:
        grader = None
        try:
            grader = grading.Grader(course, options, stop, snapshot=snapshot)
            weak = grader.unconfirmable_functions()
            if weak:
                print(
                    f"autograder grade: warning: {', '.join(weak)} have no @pytest.mark.correctness check; "
                    "their passes are taken from the student's process without confirmation",
                    file=sys.stderr,
                )
            results = grader.grade_class(students, progress, finished=finished, on_result=keep)
        except Exception:  # noqa: BLE001 - whatever a stop broke (a killed process) is not an error
            if not stop.is_set():
                raise
        finally:
            if grader is not None:
                grader.close()
        progress.finish()
    if stop.is_set():
        results = results or [finished[name] for name, _ in students if name in finished]
        args.interrupted = True
        return _interrupted(out, course, modules, results, len(students), caught[0] if caught else signal.SIGINT)
    class_report.write_all(out, course, modules, results)
    if args.gradebook:
        from autograder.notebooks.builder import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), args.gradebook, course)
        print(f"wrote {written} grades into the gradebook {args.gradebook}")
    total = sum(fn.points for fn in course.functions if fn.module in modules)
    print(f"graded {len(results)} students ({', '.join(modules)}; max {total:g} points): {out / 'grades.csv'}")
    return 0


def _interrupted(out: Path, course, modules: tuple[str, ...], results: list, total: int, signum: int) -> int:
    """Write what was finished, marked incomplete; one line on stderr; exit status 128 + the signal."""
    from autograder.grading import class_report

    note = (
        f"grading was interrupted after {len(results)} of {total} students; the others are not in this file. "
        "Run the same command with --resume to grade them."
    )
    class_report.write_all(out, course, modules, results, incomplete=note)
    name = signal.Signals(signum).name
    print(
        f"autograder grade: interrupted ({name}): {len(results)} of {total} students graded, written to {out} "
        "(grades.csv and summary.md marked incomplete); add --resume to the same command to continue",
        file=sys.stderr,
    )
    return 128 + signum


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event):
    """While active, SIGINT (Ctrl-C) and SIGTERM set ``stop``; yields the list of signals caught."""
    caught: list[int] = []

    def handler(signum, _frame) -> None:
        caught.append(signum)
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _course(folder: Path | None):
    root = find_root(folder or Path.cwd())
    if root is None:
        raise SystemExit("autograder: no course.toml here or above; run it in the course folder or pass --course")
    try:
        return load_course(root)
    except CourseError as err:
        raise SystemExit(f"autograder: {err}") from None


def add_nbgrader(subparsers) -> argparse.ArgumentParser:
    from autograder.notebooks import command as cli_nbgrader

    parser = cli_nbgrader.add_parser(subparsers)
    parser.set_defaults(handler=cli_nbgrader.run)
    return parser


SUBCOMMANDS = [add_grade, add_nbgrader]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autograder", description="The JAX course kit's autograder.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code = args.handler(args)
    if getattr(args, "interrupted", False) and argv is None:
        # Everything is written and every process ended: exit now rather than spend seconds
        # tearing down the interpreter (JAX and NumPy are loaded), which a Ctrl-C should not wait for.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
