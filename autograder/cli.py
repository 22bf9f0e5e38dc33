"""The ``autograder`` command (also ``python -m autograder``): argument parsing only.

Each verb declares its arguments in ``add_<verb>(subparsers)`` (listed in :data:`SUBCOMMANDS`) and hands the
parsed values to the small api of its subpackage (``tests/unit/test_maps.py`` holds this list to the parser):

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
from pathlib import Path

from autograder.core.course import Course, CourseError, find_root, load_course


def add_grade(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "grade",
        help="grade a folder of submissions (one sub-folder per student)",
        description="Grade every student folder in SUBMISSIONS, each in its own limited process, "
        "and write OUT/grades.csv, OUT/<student>/results.json and OUT/summary.md.",
    )
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
        "of reusing the proof an earlier run of the same course, kit, environment and limits kept",
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
    from autograder.grading import command
    from autograder.grading.options import Options

    course = _course(args.course)
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
    desk = command.Desk(
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
        "command keeps (for the same course, kit, environment, machine and limits).",
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

    course = _course(args.course)
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
    parser.add_argument("--module", action="append", dest="modules", help="only this module (repeatable)")
    parser.set_defaults(handler=run_nbgrader)
    return parser


def run_nbgrader(args: argparse.Namespace) -> int:
    from autograder.notebooks import api

    return api.build(args.course_dir, args.kit, args.modules)


def add_check_course(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "check-course",
        help="check every rule the kit relies on (for course authors)",
        description="Check course.toml against the contract, the stubs, the checks' names and markers and the "
        "hidden checks, then run every check on solutions/. Each problem says how to fix it; the exit status "
        "is 1 when there is any.",
    )
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")
    parser.add_argument(
        "--module", action="append", dest="modules", metavar="MODULE", help="only this module (repeatable)"
    )
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

    root = find_root(args.course or Path.cwd())
    if root is None:
        raise SystemExit("autograder: no course.toml here or above; run it in the course folder or pass --course")
    return check_course(root, args.modules, references=not args.skip_references, table=args.coverage_table)


def add_mutate(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutate",
        help="mutation testing of the checks (for course authors; slow)",
        description="Mutate every graded function of solutions/ (one small change at a time) and run the module's "
        "checks on each mutant as a submission. Prints the mutation score per module and every surviving mutant; "
        "the exit status is 1 when a survivor is neither listed as equivalent nor as killable in the list.",
    )
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")
    parser.add_argument(
        "--module", action="append", dest="modules", metavar="MODULE", help="only this module (repeatable)"
    )
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

    root = find_root(args.course or Path.cwd())
    if root is None:
        raise SystemExit("autograder: no course.toml here or above; run it in the course folder or pass --course")
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


def _course(folder: Path | None, verify_files: bool = True) -> Course:
    root = find_root(folder or Path.cwd())
    if root is None:
        raise SystemExit("autograder: no course.toml here or above; run it in the course folder or pass --course")
    try:
        return load_course(root, verify_files=verify_files)
    except CourseError as err:
        raise SystemExit(f"autograder: {err}") from None


def _course_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")


def _student_verb(
    subparsers, name: str, help: str, description: str, run, *arguments: tuple
) -> argparse.ArgumentParser:
    """A student's verb: its own arguments (``(flags, options)`` pairs), ``--course``, and ``run(course, args)``
    on the course found from here (its files are not validated: a student's file may not import)."""
    parser = subparsers.add_parser(name, help=help, description=description)
    for flags, options in arguments:
        parser.add_argument(*flags, **options)
    _course_option(parser)
    parser.set_defaults(handler=lambda args: run(_course(args.course, verify_files=False), args))
    return parser


def add_watch(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return _student_verb(
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

    return _student_verb(
        subparsers,
        "status",
        "the whole course in one table: done, started, not started, points, what to do next",
        "By default from your last local runs; --run checks every module now (grading profile).",
        lambda course, args: commands.status(course, args.run),
        (("--run",), dict(action="store_true", help="run every module's checks now (takes minutes)")),
    )


def add_hint(subparsers) -> argparse.ArgumentParser:
    from autograder.student import commands

    return _student_verb(
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

    return _student_verb(
        subparsers,
        "reset",
        "put a module's (or one function's) stub back as released, keeping a backup of yours",
        "Your current file is first copied to .autograder/backups/<module>.py.<timestamp>.",
        lambda course, args: commands.reset_stub(course, args.target, args.yes),
        (("target",), dict(metavar="MODULE[.FUNCTION]")),
        (("--yes",), dict(action="store_true", help="do not ask")),
    )


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
        release = build_release(_course(args.course), args.out, args.only)
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
    _course_option(parser)
    parser.set_defaults(handler=run_gradescope)
    return parser


def run_gradescope(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.platforms import gradescope

    course = _course(args.course)
    out = gradescope.build_bundle(course.root, args.out, command.select_modules(course, args.only))
    print(
        f"wrote {out} ({out.stat().st_size / 2**20:.2f} MiB): upload it as the assignment's autograder; keep it private"
    )
    return 0


def add_actions_report(subparsers) -> argparse.ArgumentParser:
    from autograder.platforms import github_actions

    parser = github_actions.add_parser(subparsers)
    parser.set_defaults(handler=lambda args: github_actions.run(_course(args.course), args))
    return parser


def add_actions_preflight(subparsers) -> argparse.ArgumentParser:
    from autograder.platforms import github_actions

    parser = github_actions.add_preflight_parser(subparsers)
    parser.set_defaults(handler=lambda args: github_actions.run_preflight(_course(args.course)))
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
    _course_option(parser)
    parser.set_defaults(handler=run_classroom50)
    return parser


def run_classroom50(args: argparse.Namespace) -> int:
    from autograder.grading import command
    from autograder.platforms import classroom50, gradescope

    course = _course(args.course)
    requirements = gradescope.requirements(gradescope.pyproject_of(course.root))
    try:
        out = classroom50.build(
            args.release, args.out, args.slug, course, command.select_modules(course, args.only), requirements
        )
    except ValueError as err:
        raise SystemExit(f"autograder classroom50: {err}") from None
    print(f"wrote {out}: commit it as CLASSROOM/autograders/{args.slug}/ in the classroom's configuration repository")
    return 0


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
