"""``watch``, ``status``, ``hint`` and ``reset``: the student's verbs, handed to :mod:`autograder.student.commands`."""

from __future__ import annotations

import argparse

from autograder.cli.common import student_verb


def add_watch(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return student_verb(
        subparsers,
        "watch",
        "re-run a module's checks every time you save a file in exercises/",
        "Check MODULE (default: the first one not done) and again after every save in exercises/; "
        "saving another module's file switches to it. Ctrl-C to quit.",
        lambda course, args: commands.watch(course, args.module),
        (("module",), dict(nargs="?", metavar="MODULE")),
    )


def add_status(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return student_verb(
        subparsers,
        "status",
        "the whole course in one table: done, started, not started, points, what to do next",
        "By default from your last local runs; --run checks every module now (grading profile).",
        lambda course, args: commands.status(course, args.run),
        (("--run",), dict(action="store_true", help="run every module's checks now (takes minutes)")),
    )


def add_hint(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return student_verb(
        subparsers,
        "hint",
        "show a function's hint; --reveal shows the direct one",
        "FUNCTION is a function name (or MODULE.FUNCTION).",
        lambda course, args: commands.hint(course, args.function, args.reveal),
        (("function",), dict(metavar="FUNCTION")),
        (
            ("--reveal",),
            dict(action="store_true", help="also show the direct hint (failed checks show it from now on)"),
        ),
    )


def add_reset(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return student_verb(
        subparsers,
        "reset",
        "put a module's (or one function's) stub back as released, keeping a backup of yours",
        "Your current file is first copied to .autograder/backups/<module>.py.<timestamp>.",
        lambda course, args: commands.reset_stub(course, args.target, args.yes),
        (("target",), dict(metavar="MODULE[.FUNCTION]")),
        (("--yes",), dict(action="store_true", help="do not ask")),
    )
