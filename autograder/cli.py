"""The ``autograder`` command (also ``python -m autograder``).

Each subcommand is a function ``add_<name>(subparsers)`` that declares its
arguments and sets ``handler``; ``main`` dispatches. To add a subcommand, add
an ``add_...`` function and list it in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import os
import sys
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
    parser.add_argument("--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)")
    parser.add_argument(
        "--seed", type=int, metavar="N",
        help="draw the inputs from seed N (deterministic for one N, unlike the inputs a student release "
        "published answers for); keep N private",
    )
    parser.add_argument(
        "--gradebook",
        metavar="URL",
        help="also write the scores into an nbgrader gradebook (e.g. sqlite:///course/gradebook.db), "
        "so formgrader and `nbgrader export` see them",
    )
    parser.set_defaults(handler=run_grade)
    return parser


def run_grade(args: argparse.Namespace) -> int:
    from autograder.grading import class_report
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
        seed=args.seed,
    )
    students = grading.find_students(args.submissions)
    grader = grading.Grader(course, options)
    weak = grader.unconfirmable_functions()
    if weak:
        print(
            f"autograder grade: warning: {', '.join(weak)} have no @pytest.mark.correctness check; "
            "their passes are taken from the student's process without confirmation",
            file=sys.stderr,
        )
    progress = grading.Progress()
    progress(0, len(students))
    try:
        results = grader.grade_class(students, progress)
    finally:
        grader.close()
    progress.finish()
    class_report.write_all(out, course, modules, results)
    if args.gradebook:
        from autograder.notebooks.builder import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), args.gradebook, course)
        print(f"wrote {written} grades into the gradebook {args.gradebook}")
    total = sum(fn.points for fn in course.functions if fn.module in modules)
    print(f"graded {len(results)} students ({', '.join(modules)}; max {total:g} points): {out / 'grades.csv'}")
    return 0


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


def add_release(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "release",
        help="write the student repository (stubs, checks, recorded oracle; no solutions)",
        description="Write OUT: the student repository. The reference's answers are recorded "
        "(both hypothesis profiles) in place of solutions/.",
    )
    parser.add_argument("out", type=Path, help="an empty or new folder")
    parser.add_argument("--course", type=Path, help="the course folder (default: here or above)")
    parser.set_defaults(handler=run_release)
    return parser


def run_release(args: argparse.Namespace) -> int:
    from autograder.release.builder import ReleaseError, build_release

    try:
        release = build_release(_course(args.course), args.out)
    except ReleaseError as err:
        print(f"autograder release: {err}", file=sys.stderr)
        return 1
    print(
        f"released {release.out} in {release.seconds:.0f} s: oracle {release.oracle_bytes / 2**20:.2f} MiB, "
        f"everything {release.total_bytes / 2**20:.2f} MiB"
    )
    return 0


SUBCOMMANDS = [add_grade, add_nbgrader, add_release]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autograder", description="The JAX course kit's autograder.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
