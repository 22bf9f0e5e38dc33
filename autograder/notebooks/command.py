"""The ``nbgrader`` subcommand: ``python -m autograder nbgrader COURSE_DIR``.

Wiring into ``autograder/cli.py``::

    from autograder.notebooks import command as cli_nbgrader
    cli_nbgrader.add_parser(subparsers)        # registers `nbgrader`
    ...
    if args.command == "nbgrader":
        return cli_nbgrader.run(args)

For ``grade ... --gradebook sqlite:///path/gradebook.db`` call
:func:`autograder.notebooks.builder.write_gradebook` with the scores
(``{student: {"<module>.<function>": points}}``), the course and the URL.
"""

from __future__ import annotations

import argparse

from autograder.notebooks import builder as nbgrader_course


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "nbgrader",
        help="build or update an nbgrader course directory from course.toml",
        description=(
            "Write nbgrader_config.py and source/<module>/<module>.ipynb for every module: teaching text, "
            "one solution cell per function (the reference inside BEGIN/END SOLUTION) and one autograded "
            "check cell per function worth its course.toml points. Then run `nbgrader generate_assignment "
            "<module>` in COURSE_DIR."
        ),
    )
    nbgrader_course.add_arguments(parser)
    parser.set_defaults(command="nbgrader")
    return parser


def run(args: argparse.Namespace) -> int:
    return nbgrader_course.run(args)
