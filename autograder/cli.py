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
        "--run-as",
        metavar="USER",
        help="run the students' code as this unprivileged user (grade itself runs as root; the trusted side stays root)",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="grade on an existing Dask scheduler (e.g. tcp://scheduler:8786): one task per submission, "
        "same limits and outputs as a local run",
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
    modules = _modules(course, args.only, "grade")
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
        run_as=args.run_as,
    )
    students = grading.find_students(args.submissions)
    try:
        if args.cluster:
            from autograder.grading import cluster

            grader = cluster.ClusterGrader(course, options, args.cluster)
        else:
            grader = grading.Grader(course, options)
    except ValueError as err:
        raise SystemExit(f"autograder grade: {err}") from None
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


def _modules(course, only: list[str] | None, command: str) -> tuple[str, ...]:
    """The modules ``--only`` names (all by default), in course order."""
    names = [m.name for m in course.modules]
    unknown = [m for m in only or () if m not in names]
    if unknown:
        raise SystemExit(f"autograder {command}: unknown module(s) {unknown}; course.toml has {names}")
    return tuple(m for m in names if not only or m in only)


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


def add_gradescope(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "gradescope",
        help="write a Gradescope autograder bundle (autograder.zip)",
        description="Write OUT.zip for Gradescope's 'Zip file upload': setup.sh, run_autograder, the course with its "
        "live reference (keep the zip private) and the kit.",
    )
    parser.add_argument("out", type=Path, metavar="OUT.zip")
    parser.add_argument("--only", action="append", metavar="MODULE", help="this assignment grades only this module (repeatable)")
    parser.add_argument("--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)")
    parser.set_defaults(handler=run_gradescope)
    return parser


def run_gradescope(args: argparse.Namespace) -> int:
    from autograder.platforms import gradescope

    course = _course(args.course)
    out = gradescope.build_bundle(course.root, args.out, _modules(course, args.only, "gradescope"))
    print(f"wrote {out} ({out.stat().st_size / 2**20:.2f} MiB): upload it as the assignment's autograder; keep it private")
    return 0


def add_actions_report(subparsers) -> argparse.ArgumentParser:
    from autograder.platforms import github_actions

    parser = github_actions.add_parser(subparsers)
    parser.set_defaults(handler=lambda args: github_actions.run(_course(args.course), args))
    return parser


def add_classroom50(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "classroom50",
        help="write an assignment's autograder folder for Classroom 50 (public: no reference)",
        description="Write OUT (CLASSROOM/autograders/SLUG/ of a Classroom 50 configuration repository) from a "
        "student release: autograder.py, the checks, the kit and the recorded oracle.",
    )
    parser.add_argument("out", type=Path, metavar="OUT")
    parser.add_argument("--slug", required=True, help="the assignment's slug")
    parser.add_argument("--only", action="append", metavar="MODULE", help="this assignment grades only this module (repeatable)")
    parser.add_argument("--release", type=Path, metavar="DIR", help="an existing student release (default: build one)")
    parser.add_argument("--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)")
    parser.set_defaults(handler=run_classroom50)
    return parser


def run_classroom50(args: argparse.Namespace) -> int:
    from autograder.platforms import classroom50, gradescope

    course = _course(args.course)
    modules = _modules(course, args.only, "classroom50")
    if args.release is None:
        raise SystemExit("autograder classroom50: pass --release DIR (a folder written by `autograder release`)")
    requirements = gradescope.requirements(gradescope.pyproject_of(course.root))
    try:
        out = classroom50.build(args.release, args.out, args.slug, course, modules, requirements)
    except ValueError as err:
        raise SystemExit(f"autograder classroom50: {err}") from None
    print(f"wrote {out}: commit it as CLASSROOM/autograders/{args.slug}/ in the classroom's configuration repository")
    return 0


SUBCOMMANDS = [add_grade, add_nbgrader, add_gradescope, add_actions_report, add_classroom50]


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
