"""What ships a course: ``nbgrader``, ``release``, ``gradescope``, ``classroom50`` and the two verbs GitHub Actions
runs in a student's repository (``actions-report``, ``actions-preflight``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli.common import course_at, course_option, module_option


def add_nbgrader(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "nbgrader",
        help="build or update an nbgrader course directory from course.toml",
        description=(
            "Write nbgrader_config.py and source/<module>/<module>.ipynb for every module: teaching text, "
            "one solution cell per function (the reference inside BEGIN/END SOLUTION) and one autograded "
            "check cell per function worth its course.toml points; and what grading needs without this kit's "
            "checkout or venv: course/ (the files the check cells read), kit/ (the kit's wheel), requirements.txt "
            "and setup.sh, which builds COURSE_DIR/.venv and proves it (the reference full marks, its stubs "
            "nothing: the pre-flight autograde also runs before the first submission). Then run `bash setup.sh` "
            "and `.venv/bin/nbgrader generate_assignment <module>` in COURSE_DIR."
        ),
    )
    parser.add_argument("course_dir", metavar="COURSE_DIR", help="the nbgrader course directory to build or update")
    parser.add_argument("--kit", default=None, help="the kit folder with course.toml (default: found from here)")
    module_option(parser)
    parser.set_defaults(handler=run_nbgrader)
    return parser


def run_nbgrader(args: argparse.Namespace) -> int:
    from autograder.notebooks import api

    return api.build(args.course_dir, args.kit, args.modules)


def add_release(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "release",
        help="write the student repository (stubs, checks, recorded oracle; no solutions)",
        description="Write OUT: the student repository. The reference's answers are recorded "
        "(both hypothesis profiles) in place of solutions/.",
    )
    parser.add_argument("out", type=Path, help="an empty or new folder")
    parser.add_argument("--course", type=Path, help="the course folder (default: here or above)")
    parser.add_argument(
        "--only",
        metavar="M1,M2",
        type=lambda text: [m for m in text.split(",") if m],
        help="release only these modules (a quick release, e.g. for the kit's own tests)",
    )
    parser.set_defaults(handler=run_release)
    return parser


def run_release(args: argparse.Namespace) -> int:
    from autograder.release.builder import ReleaseError, build_release

    try:
        release = build_release(course_at(args.course), args.out, args.only)
    except ReleaseError as err:
        print(f"autograder release: {err}", file=sys.stderr)
        return 1
    print(
        f"released {release.out} in {release.seconds:.0f} s: oracle {release.oracle_bytes / 2**20:.2f} MiB, "
        f"everything {release.total_bytes / 2**20:.2f} MiB"
    )
    for function, why in release.unrecordable.items():
        print(f"  not recorded: {function}: {why} (its checks skip in the release)")
    return 0


def add_gradescope(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "gradescope",
        help="write a Gradescope autograder bundle (autograder.zip)",
        description="Write OUT.zip for Gradescope's 'Zip file upload': setup.sh, run_autograder, the course with its "
        "live reference (keep the zip private) and the kit.",
    )
    parser.add_argument("out", type=Path, metavar="OUT.zip")
    parser.add_argument(
        "--only", action="append", metavar="MODULE", help="this assignment grades only this module (repeatable)"
    )
    course_option(parser)
    parser.set_defaults(handler=run_gradescope)
    return parser


def run_gradescope(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.platforms import gradescope

    course = course_at(args.course)
    out = gradescope.build_bundle(course.root, args.out, command.select_modules(course, args.only))
    print(
        f"wrote {out} ({out.stat().st_size / 2**20:.2f} MiB): upload it as the assignment's autograder; keep it private"
    )
    return 0


def add_actions_report(subparsers) -> argparse.ArgumentParser:
    from autograder.platforms import github_actions

    parser = github_actions.add_parser(subparsers)
    parser.set_defaults(handler=lambda args: github_actions.run(course_at(args.course), args))
    return parser


def add_actions_preflight(subparsers) -> argparse.ArgumentParser:
    from autograder.platforms import github_actions

    parser = github_actions.add_preflight_parser(subparsers)
    parser.set_defaults(handler=lambda args: github_actions.run_preflight(course_at(args.course)))
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
    parser.add_argument(
        "--only", action="append", metavar="MODULE", help="this assignment grades only this module (repeatable)"
    )
    parser.add_argument(
        "--release", type=Path, metavar="DIR", required=True, help="a student release (`autograder release`)"
    )
    course_option(parser)
    parser.set_defaults(handler=run_classroom50)
    return parser


def run_classroom50(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.platforms import classroom50
    from autograder.shipped import stack

    course = course_at(args.course)
    requirements = stack.requirements(stack.pyproject_of(course.root))
    try:
        out = classroom50.build(
            args.release, args.out, args.slug, course, command.select_modules(course, args.only), requirements
        )
    except ValueError as err:
        raise SystemExit(f"autograder classroom50: {err}") from None
    print(f"wrote {out}: commit it as CLASSROOM/autograders/{args.slug}/ in the classroom's configuration repository")
    return 0
