"""``check-course`` and ``mutate``: the course author's verbs, handed to :mod:`autograder.authoring`."""

from __future__ import annotations

import argparse
from pathlib import Path

from autograder.cli.common import course_option, module_option, root_at


def add_check_course(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check-course",
        help="check every rule the kit relies on (for course authors)",
        description="Check course.toml against the contract, the stubs, the checks' names and markers and the "
        "hidden checks, then run every check on solutions/. Each problem says how to fix it; the exit status "
        "is 1 when there is any.",
    )
    course_option(parser)
    module_option(parser)
    parser.add_argument(
        "--skip-references", action="store_true", help="only the static rules (fast): do not run the references"
    )
    parser.add_argument(
        "--coverage-table",
        action="store_true",
        help="also print, per graded function, the values each argument took and which outputs were compared",
    )
    parser.set_defaults(handler=run_check_course)
    return parser


def run_check_course(args: argparse.Namespace) -> int:
    from autograder.authoring.check import check_course

    root = root_at(args.course)
    return check_course(root, args.modules, references=not args.skip_references, table=args.coverage_table)


def add_mutate(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutate",
        help="mutation testing of the checks (for course authors; slow)",
        description="Mutate every graded function of solutions/ (one small change at a time) and run the module's "
        "checks on each mutant as a submission. Prints the mutation score per module and every surviving mutant; "
        "the exit status is 1 when a survivor is neither listed as equivalent nor as killable in the list.",
    )
    course_option(parser)
    module_option(parser)
    parser.add_argument("--jobs", type=int, default=2, help="modules mutated side by side (default 2)")
    parser.add_argument(
        "--equivalent",
        type=Path,
        metavar="TOML",
        help="the list of equivalent and killable survivors (default: benchmarks/mutation-equivalent.toml)",
    )
    parser.add_argument("--report", type=Path, metavar="MD", help="also write the report there")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every mutant's outcome there")
    parser.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="run nothing: report the run saved with --json, classified by the current list",
    )
    parser.set_defaults(handler=run_mutate)
    return parser


def run_mutate(args: argparse.Namespace) -> int:
    from autograder.authoring.mutate import main_mutate

    root = root_at(args.course)
    listed = args.equivalent or root / "benchmarks" / "mutation-equivalent.toml"
    return main_mutate(
        root,
        args.modules,
        jobs=args.jobs,
        listed_path=listed,
        report_path=args.report,
        json_path=args.json,
        from_json=args.from_json,
    )
