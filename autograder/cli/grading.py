"""``grade`` and ``preflight``: their arguments, handed to :mod:`autograder.grading.command`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from autograder.cli.common import course_at


def add_grade(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "grade",
        help="grade a folder of submissions (one sub-folder per student)",
        description="Grade every student folder in SUBMISSIONS, each in its own limited process, "
        "and write OUT/grades.csv, OUT/<student>/results.json and OUT/summary.md.",
    )
    _add_limits(parser)
    _add_runs(parser)
    _add_late_work(parser)
    _add_exports(parser)
    _add_environment(parser)
    parser.set_defaults(handler=run_grade)
    return parser


def _add_limits(parser: argparse.ArgumentParser) -> None:
    """What to grade, where to, and each process's limits."""
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS")
    parser.add_argument("--out", type=Path, required=True, metavar="OUT")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, metavar="N", help="parallel workers (default: cores)"
    )
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per function (default: course.toml)")
    parser.add_argument("--memory", type=int, metavar="MB", help="memory limit per process (default: course.toml)")
    parser.add_argument("--only", action="append", metavar="MODULE", help="grade only this module (repeatable)")
    parser.add_argument(
        "--jax-cache",
        type=Path,
        metavar="DIR",
        help="keep each student's JAX compilation cache in DIR/<student> for a re-grade; their processes get a private copy (default: a temporary folder per student)",
    )
    parser.add_argument(
        "--no-zygote", action="store_true", help="start a fresh interpreter per run (slower; for comparison)"
    )


def _add_runs(parser: argparse.ArgumentParser) -> None:
    """How this run relates to one that wrote OUT before: continue it, regrade students, or clear it."""
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue a run into the same OUT: students it finished whose files did not change are not graded "
        "again; students added since (late arrivals) and students whose files changed are graded, and it says "
        "which (refused when the kit, course, options or libraries changed)",
    )
    parser.add_argument(
        "--student",
        action="append",
        default=[],
        metavar="NAME",
        help="regrade only this student folder of SUBMISSIONS into an existing OUT (repeatable); the others keep "
        "their recorded grades and every class file is rewritten; the options OUT was graded with (late policy, "
        "times, roster, exports, limits, seed) are reused (a different one given is refused)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="OUT holds another class's grades: clear what grade wrote there first (else such an OUT is refused)",
    )


def _add_late_work(parser: argparse.ArgumentParser) -> None:
    late = parser.add_argument_group("due dates and late work (default: [late] in course.toml)")
    late.add_argument(
        "--due", metavar="WHEN", help="the due date, ISO 8601 (e.g. 2026-03-01T23:59:00+00:00; UTC without a zone)"
    )
    late.add_argument(
        "--late-penalty", type=float, metavar="PERCENT", help="percent of the score lost per started day late"
    )
    late.add_argument("--late-cutoff", type=float, metavar="DAYS", help="later than this many days: score 0")
    late.add_argument(
        "--submitted-at",
        metavar="SOURCE",
        help="where each submission's time comes from: git (HEAD's commit time of a cloned repository), "
        "gradescope (submission_metadata.json's created_at), mtime (the newest <module>.py), or csv:PATH "
        "(columns student, submitted_at); grades.csv then has submitted_at, late_by, the penalty and final_score",
    )


def _add_exports(parser: argparse.ArgumentParser) -> None:
    exports = parser.add_argument_group("LMS exports")
    exports.add_argument(
        "--roster",
        type=Path,
        metavar="FILE",
        help="CSV mapping student folders to LMS ids: student, and any of name, canvas_id, sis_user_id, "
        "sis_login_id, section, email, idnumber, username",
    )
    exports.add_argument(
        "--canvas",
        metavar="ASSIGNMENT",
        help="write OUT/canvas_import.csv for Canvas's gradebook import, in this assignment's column",
    )
    exports.add_argument(
        "--canvas-assignment-id", metavar="ID", help="the Canvas assignment's id (its column becomes 'ASSIGNMENT (ID)')"
    )
    exports.add_argument(
        "--moodle",
        metavar="ITEM",
        help="write OUT/moodle_import.csv for Moodle's CSV grade import, in this grade item's column",
    )


def _add_environment(parser: argparse.ArgumentParser) -> None:
    """The course, the inputs' seed, the user and machines that run the code, the proof, the gradebook."""
    parser.add_argument(
        "--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="draw the inputs from seed N (deterministic for one N, unlike the inputs a student release "
        "published answers for); keep N private. Default: an instructor seed drawn from the references (as the "
        "Gradescope bundle's); --resume and --student keep the seed of the run they continue",
    )
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
        "--preflight",
        action="store_true",
        help="prove the environment again before grading (the reference full marks, the stubs nothing) instead "
        "of reusing the proof an earlier run of the same course, kit and environment kept under the same limits or tighter ones",
    )
    parser.add_argument(
        "--gradebook",
        metavar="URL",
        help="also write the scores into an nbgrader gradebook (e.g. sqlite:///course/gradebook.db), "
        "so formgrader and `nbgrader export` see them",
    )


def run_grade(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.grading.desk.record import Desk
    from autograder.grading.options import Options

    course = course_at(args.course)
    if args.run_as:
        from autograder.grading.isolation.limits import RunAs

        try:
            RunAs.lookup(args.run_as)
        except ValueError as err:
            raise SystemExit(f"autograder grade: {err}") from None
    options = Options(
        modules=command.select_modules(course, args.only),
        timeout_per_function=args.timeout or course.grading.timeout_per_function,
        memory_mb=args.memory or course.grading.memory_limit_mb,
        jobs=args.jobs,
        cache_dir=args.jax_cache,
        zygote=not args.no_zygote,
        seed=args.seed,
        run_as=args.run_as,
        prove_again=args.preflight,
    )
    desk = Desk(
        students=args.student,
        due=args.due,
        late_penalty=args.late_penalty,
        late_cutoff=args.late_cutoff,
        submitted_at=args.submitted_at,
        roster=args.roster,
        canvas=args.canvas,
        canvas_assignment_id=args.canvas_assignment_id,
        moodle=args.moodle,
        force=args.force,
        given={
            "modules": command.select_modules(course, args.only) if args.only else None,
            "timeout_per_function": args.timeout,
            "memory_mb": args.memory,
            "seed": args.seed,
        },
    )
    code = command.grade(
        course,
        args.submissions,
        args.out,
        options,
        gradebook=args.gradebook,
        resume=args.resume,
        cluster=args.cluster,
        desk=desk,
    )
    args.interrupted = code in command.INTERRUPTED
    return code


def add_preflight(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "preflight",
        help="check that this machine grades correctly: the reference full marks, the stubs nothing (exit 0/1)",
        description="Grade the course's reference and its stubs exactly as `grade` would (the same sandbox, "
        "limits, XLA flags and backend): exit 0 when the reference gets full marks and the stubs nothing, "
        "else 1 with the cause. `grade` does this itself before its first student, and reuses the proof this "
        "command keeps (for the same course, kit, environment and machine, under the same limits or looser ones).",
    )
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="parallel workers (default: 2)")
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per function (default: course.toml)")
    parser.add_argument("--memory", type=int, metavar="MB", help="memory limit per process (default: course.toml)")
    parser.add_argument("--only", action="append", metavar="MODULE", help="check only this module (repeatable)")
    parser.add_argument("--no-zygote", action="store_true", help="start a fresh interpreter per run")
    parser.add_argument("--run-as", metavar="USER", help="as `grade --run-as USER`")
    parser.add_argument(
        "--course", type=Path, metavar="DIR", help="the instructor's course folder (default: found from here)"
    )
    parser.set_defaults(handler=run_preflight)
    return parser


def run_preflight(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.grading.options import Options

    course = course_at(args.course)
    options = Options(
        modules=command.select_modules(course, args.only),
        timeout_per_function=args.timeout or course.grading.timeout_per_function,
        memory_mb=args.memory or course.grading.memory_limit_mb,
        jobs=max(1, args.jobs),
        zygote=not args.no_zygote,
        run_as=args.run_as,
        prove_again=True,  # this command proves; `grade` reuses what it kept
    )
    return command.preflight(course, options)
