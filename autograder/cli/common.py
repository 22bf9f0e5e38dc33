"""What several verbs share: the course a command runs on, ``--course``, a student's verb."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograder.core.course import Course, CourseError, find_root, load_course


def root_at(folder: Path | None) -> Path:
    """The course's root: ``folder`` (``--course``) or the folder above here that holds ``course.toml``."""
    root = find_root(folder or Path.cwd())
    if root is None:
        raise SystemExit("autograder: no course.toml here or above; run it in the course folder or pass --course")
    return root


def course_at(folder: Path | None, verify_files: bool = True) -> Course:
    root = root_at(folder)
    try:
        return load_course(root, verify_files=verify_files)
    except CourseError as err:
        raise SystemExit(f"autograder: {err}") from None


def course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")


def module_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--module", action="append", dest="modules", metavar="MODULE", help="only this module (repeatable)"
    )


def student_verb(subparsers, name: str, help: str, description: str, run, *arguments: tuple) -> argparse.ArgumentParser:
    """A student's verb: its own arguments (``(flags, options)`` pairs), ``--course``, and ``run(course, args)``
    on the course found from here (its files are not validated: a student's file may not import)."""
    parser = subparsers.add_parser(name, help=help, description=description)
    for flags, options in arguments:
        parser.add_argument(*flags, **options)
    course_option(parser)
    parser.set_defaults(handler=lambda args: run(course_at(args.course, verify_files=False), args))
    return parser
