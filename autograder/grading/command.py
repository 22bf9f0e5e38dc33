"""``autograder grade`` and ``autograder preflight``: the commands' handlers, for :mod:`autograder.cli` (which
only parses). Runs in the grader's process; the only part of the grading wing that prints, exits or handles
signals: the grading itself is :func:`autograder.grading.grade_class`.

A run can be stopped (Ctrl-C, SIGTERM) and resumed: every finished student is
written at once (``results.json`` and the record ``--resume`` reads), a stop
ends every process of the run, and what was finished is written marked
incomplete.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import versions
from autograder.core.course import Course
from autograder.core.outcomes import points_text
from autograder.core.submission import read_submission
from autograder.grading import api
from autograder.grading import preflight as preflight_check
from autograder.grading.grader import find_students
from autograder.grading.options import Options
from autograder.grading.outputs import class_files, class_report, run_state
from autograder.grading.outputs.progress import Progress
from autograder.runtime import devices

INTERRUPTED = {128 + signal.SIGINT, 128 + signal.SIGTERM}


def select_modules(course: Course, only: list[str] | None) -> tuple[str, ...]:
    """The modules to grade, in course order; raises SystemExit naming an unknown one."""
    names = [m.name for m in course.modules]
    unknown = [m for m in only or () if m not in names]
    if unknown:
        raise SystemExit(f"autograder grade: unknown module(s) {unknown}; course.toml has {names}")
    return tuple(m for m in names if not only or m in only)


@dataclass
class Desk:
    """The instructor's options of ``grade`` beyond grading itself (see ``autograder grade --help``)."""

    students: list[str] = field(default_factory=list)  # --student: regrade only these into an existing OUT
    due: str | None = None  # --due (else [late] of course.toml)
    late_penalty: float | None = None  # --late-penalty: percent per started day
    late_cutoff: float | None = None  # --late-cutoff: days
    submitted_at: str | None = None  # --submitted-at SOURCE (autograder.grading.outputs.late)
    roster: Path | None = None  # --roster: student folder -> LMS ids
    canvas: str | None = None  # --canvas ASSIGNMENT: write OUT/canvas_import.csv
    canvas_assignment_id: str | None = None
    moodle: str | None = None  # --moodle ITEM: write OUT/moodle_import.csv


def class_of(submissions: Path, course: Course, out: Path) -> list[tuple[str, Path]]:
    """The students of ``submissions``: its sub-folders, or the folder itself when it is one submission
    (it holds ``<module>.py`` files of the course itself, or in ``exercises/``). Raises SystemExit with a
    clear message when there is no student at all, never grading nobody."""
    modules = tuple(m.name for m in course.modules)
    own_files, _ = read_submission(submissions, modules)
    students = find_students(submissions)
    if own_files and not any(read_submission(folder, modules)[0] for _, folder in students):
        if (out / run_state.STATE / "run.json").is_file() and (out / "grades.csv").is_file():
            raise SystemExit(
                f"autograder grade: {submissions} is one student's submission ({', '.join(f'{m}.py' for m in own_files)}), "
                f"and {out} already holds a graded class that grading it alone would replace; to regrade this "
                f"student into that class run `autograder grade {submissions.parent} --student {submissions.name} --out {out}`"
            )
        print(f"{submissions} is one student's submission: grading it as the student {submissions.name!r}")
        return [(submissions.name, submissions)]
    if not students:
        raise SystemExit(
            f"autograder grade: {submissions} has no student folders (SUBMISSIONS holds one folder per student, "
            "each with the course's <module>.py files) and is not a submission itself; nothing was graded"
        )
    return students


def grade(
    course: Course,
    submissions: Path,
    out: Path,
    options: Options,
    gradebook: str | None = None,
    resume: bool = False,
    cluster: str | None = None,
    desk: Desk | None = None,
) -> int:
    """Grade every student folder of ``submissions`` and write ``out/grades.csv``, ``out/<student>/results.json``
    and ``out/summary.md`` (and the gradebook, when given), locally or on the Dask scheduler at ``cluster``.
    Returns the exit status (128 + signal when stopped)."""
    from autograder.grading.outputs import late as late_work
    from autograder.grading.outputs import lms

    desk = desk or Desk()
    if not submissions.is_dir():
        raise SystemExit(f"autograder grade: {submissions} is not a folder")
    say_environment()
    out = out.resolve()
    modules = options.modules
    students = class_of(submissions, course, out)
    names = [name for name, _ in students]
    unknown = [s for s in desk.students if s not in names]
    if unknown:
        raise SystemExit(
            f"autograder grade: --student {', '.join(map(repr, unknown))}: no such folder in {submissions}"
        )
    try:
        policy = late_work.policy(course.root, desk.due, desk.late_penalty, desk.late_cutoff)
        if policy.active and not desk.submitted_at:
            raise late_work.LateError(
                f"a due date needs the submission times: add --submitted-at SOURCE ({', '.join(late_work.SOURCES)})"
            )
        times, no_time = (
            late_work.submission_times(desk.submitted_at, students, modules) if desk.submitted_at else ({}, [])
        )
    except late_work.LateError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    if no_time:
        print(
            f"autograder grade: warning: no submission time ({desk.submitted_at}) for {', '.join(no_time)}: no late penalty for them",
            file=sys.stderr,
        )
    late = {name: late_work.judge(policy, times.get(name)) for name in names} if desk.submitted_at else None
    roster = None
    if desk.canvas or desk.moodle:
        if desk.roster is None:
            raise SystemExit("autograder grade: --canvas and --moodle need --roster FILE (student folder -> LMS ids)")
        try:
            roster = lms.read_roster(desk.roster)
            if desk.canvas:
                lms.check_canvas(roster, names)
            if desk.moodle:
                lms.moodle_identifier(roster, names)
        except lms.ExportError as err:
            raise SystemExit(f"autograder grade: {err}") from None

    def say(notice: api.Notice) -> None:
        if isinstance(notice, api.IsolationInForce):
            if not notice.cluster:
                print(f"autograder grade: isolation: {notice.description}", flush=True)
        elif isinstance(notice, api.Regrading):
            print(
                f"regrading {', '.join(notice.students)} into {notice.out}; {notice.kept} other students keep their grades"
            )
            if notice.left_out:
                print(
                    f"autograder grade: warning: {', '.join(notice.left_out)} have no grades in {notice.out} and are left out "
                    "(add them with --student, or grade the rest with --resume)",
                    file=sys.stderr,
                )
        elif isinstance(notice, api.Resuming):
            print(
                f"resuming {notice.out}: {notice.kept} already graded and unchanged; to grade: "
                f"{len(notice.changed)} changed since graded ({', '.join(notice.changed) or 'none'}), "
                f"{len(notice.new)} not graded before ({', '.join(notice.new) or 'none'})"
            )
        elif isinstance(notice, api.Unconfirmed):
            print(
                f"autograder grade: warning: {', '.join(notice.functions)} have no @pytest.mark.correctness check; "
                "their passes are taken from the student's process without confirmation",
                file=sys.stderr,
            )

    stop = threading.Event()
    progress = Progress()
    with stop_on_signals(stop) as caught:
        try:
            grades = api.grade_class(
                course,
                students,
                options,
                out=out,
                resume=resume,
                regrade=desk.students,
                cluster=cluster,
                stop=stop,
                progress=progress,
                on_notice=say,
                log=sys.stderr,
            )
        except run_state.ResumeError as err:
            raise SystemExit(f"autograder grade: {err}") from None
        progress.finish()
    results, finished = grades.results, set(grades.kept)
    if grades.failure is not None and not caught:
        return grader_failed(grades.failure, len(results))
    if stop.is_set():
        return interrupted(out, course, modules, results, grades.total, caught[0] if caught else signal.SIGINT, late)
    class_files.write_all(out, course, modules, results, late=late)
    total = sum(fn.points for fn in course.functions if fn.module in modules)
    if roster is not None:
        columns = class_report.function_columns(course, modules)
        finals = {
            r.student: (late[r.student].final if late else float)(class_report.student_total(r, columns))
            for r in results
        }
        if desk.canvas:
            class_files.write_text(
                out / "canvas_import.csv", lms.canvas_csv(roster, finals, total, desk.canvas, desk.canvas_assignment_id)
            )
            print(f"wrote {out / 'canvas_import.csv'} (Canvas: Grades > Import)")
        if desk.moodle:
            class_files.write_text(out / "moodle_import.csv", lms.moodle_csv(roster, finals, desk.moodle))
            print(f"wrote {out / 'moodle_import.csv'} (Moodle: Grades > Import > CSV file)")
        missing = lms.unmatched(roster, [r.student for r in results])
        if missing:
            print(
                f"autograder grade: roster entries with no graded folder (not in the imports): {', '.join(missing)}",
                file=sys.stderr,
            )
    if gradebook:
        from autograder.grading.outputs.gradebook import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), gradebook, course)
        print(f"wrote {written} grades into the gradebook {gradebook}")
    regraded = [r.student for r in results if r.student not in finished]
    if desk.students or resume:
        print(f"graded now: {', '.join(regraded) or 'nobody'}; the class files list {len(results)} students")
    print(
        f"graded {len(results)} students ({', '.join(modules)}; max {points_text(total, None)} points): {out / 'grades.csv'}"
    )
    return 0


def preflight(course: Course, options: Options) -> int:
    """``autograder preflight``: grade the course's reference and stubs as ``grade`` would; 0 when the
    reference got full marks and the stubs nothing, else 1 with the cause on stderr."""
    say_environment()
    try:
        api.preflight_only(course, options, log=sys.stdout)
    except (preflight_check.PreflightFailed, preflight_check.GraderError) as err:
        print(f"autograder preflight: {err}", file=sys.stderr)
        return 1
    return 0


def say_environment() -> None:
    """The first lines of a run: an accelerator set aside for JAX's CPU backend, a library newer than tested."""
    devices.use_cpu_backend()
    for line in (devices.backend_note(), versions.newer_than_tested()):
        if line:
            print(line, file=sys.stderr, flush=True)


def grader_failed(err: Exception, graded: int) -> int:
    """A failure of the grader's side (its pre-flight check, a grading process that died before any student
    code ran): nothing is scored; one message on stderr; exit status 1."""
    print(f"autograder grade: {err}", file=sys.stderr)
    if isinstance(err, preflight_check.GraderError):
        print(
            "autograder grade: no grades.csv was written; students finished before the failure keep their "
            "results.json: fix the environment and run the same command with --resume",
            file=sys.stderr,
        )
    return 1


def interrupted(
    out: Path,
    course: Course,
    modules: tuple[str, ...],
    results: list,
    total: int,
    signum: int,
    late: dict | None = None,
) -> int:
    """Write what was finished, marked incomplete; one line on stderr; exit status 128 + the signal."""
    note = (
        f"grading was interrupted after {len(results)} of {total} students; the others are not in this file. "
        "Run the same command with --resume to grade them."
    )
    class_files.write_all(out, course, modules, results, incomplete=note, late=late)
    name = signal.Signals(signum).name
    print(
        f"autograder grade: interrupted ({name}): {len(results)} of {total} students graded, written to {out} "
        "(grades.csv and summary.md marked incomplete); add --resume to the same command to continue",
        file=sys.stderr,
    )
    return 128 + signum


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event):
    """While active, SIGINT (Ctrl-C) and SIGTERM set ``stop``; yields the list of signals caught."""
    caught: list[int] = []

    def handler(signum, _frame) -> None:
        caught.append(signum)
        stop.set()

    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
