"""The ``autograder`` command (also ``python -m autograder``): argument parsing only.

Each verb declares its arguments in ``add_<verb>(subparsers)`` (listed in :data:`SUBCOMMANDS`) and hands the
parsed values to the small api of its subpackage (``tests/unit/test_maps.py`` holds this list to the parser).
One module per group of verbs: :mod:`.grading` (``grade``, ``preflight``), :mod:`.authoring` (``check-course``,
``mutate``), :mod:`.shipping` (``nbgrader``, ``release``, the platforms' verbs), :mod:`.student` (the student's);
:mod:`.common` holds what they share.

The instructor's:

- ``grade``              -> :func:`autograder.grading.command.grade`
- ``preflight``          -> :func:`autograder.grading.command.preflight`
- ``nbgrader``           -> :func:`autograder.notebooks.api.build`
- ``check-course``       -> :func:`autograder.authoring.check.check_course`
- ``mutate``             -> :func:`autograder.authoring.mutate.main_mutate`
- ``release``            -> :func:`autograder.release.builder.build_release`
- ``gradescope``         -> :func:`autograder.platforms.gradescope.build_bundle`
- ``classroom50``        -> :func:`autograder.platforms.classroom50.build`

In a student's repository (GitHub Actions runs the last two):

- ``watch``              -> :func:`autograder.student.commands.watch`
- ``status``             -> :func:`autograder.student.commands.status`
- ``hint``               -> :func:`autograder.student.commands.hint`
- ``reset``              -> :func:`autograder.student.commands.reset_stub`
- ``actions-report``     -> :func:`autograder.platforms.github_actions.run`
- ``actions-preflight``  -> :func:`autograder.platforms.github_actions.run_preflight`
"""

from __future__ import annotations

import argparse
import os
import sys

from autograder.cli.authoring import add_check_course, add_mutate
from autograder.cli.grading import add_grade, add_preflight
from autograder.cli.shipping import (
    add_actions_preflight,
    add_actions_report,
    add_classroom50,
    add_gradescope,
    add_nbgrader,
    add_release,
)
from autograder.cli.student import add_hint, add_reset, add_status, add_watch

SUBCOMMANDS = [
    add_grade,
    add_preflight,
    add_nbgrader,
    add_check_course,
    add_mutate,
    add_release,
    add_watch,
    add_status,
    add_hint,
    add_reset,
    add_gradescope,
    add_actions_report,
    add_actions_preflight,
    add_classroom50,
]


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
