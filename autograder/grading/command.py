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
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.core import versions
from autograder.core.course import Course
from autograder.core.outcomes import points_text
from autograder.core.submission import Submission, read_submission
from autograder.grading import api
from autograder.grading import preflight as preflight_check
from autograder.grading.desk import exports as desk_exports
from autograder.grading.desk import late as late_policy
from autograder.grading.desk import lms
from autograder.grading.desk import record as desk_record_of
from autograder.grading.desk.record import Desk, desk_record
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


def given_code_notes(course: Course, submissions: Mapping[str, Submission], graded: list[str]) -> dict[str, list[str]]:
    """Per student, one line per module whose given code differs from the course's (the checks used the course's
    own: it costs nothing, the student is told); ``submissions``: as the run read them."""
    from autograder.core.submission import changed_givens, given_note

    notes: dict[str, list[str]] = {}
    for name, submitted in submissions.items():
        if name not in graded:
            continue
        for module, data in submitted.files.items():
            try:
                course_source = (course.root / "exercises" / f"{module}.py").read_text(encoding="utf-8")
                names = changed_givens(
                    data.decode("utf-8"), course_source, {fn.name for fn in course.module(module).functions}
                )
            except (OSError, ValueError, KeyError):
                continue
            if names:
                notes.setdefault(name, []).append(given_note(module, names))
    return notes


def claim_out(out: Path, submissions: Path, force: bool) -> None:
    """A fresh run: ``out`` belongs to one class. One that holds another class's grades is refused (with what to
    do), or with ``force`` cleared first."""
    saved = run_state.read_run(out)
    if saved is None and not (out / "grades.csv").is_file():
        return
    record = (saved or {}).get("desk")
    owner = record.get("class") if isinstance(record, dict) else None
    here = str(submissions.resolve())
    if owner == here:
        return
    whose = f"the class {owner}" if owner else "a class graded before classes were recorded"
    if not force:
        raise SystemExit(
            f"autograder grade: {out} already holds the grades of {whose}; grading {here} there would replace "
            f"them and leave that class's files behind. Grade into a new folder (--out NEW_FOLDER), or add --force "
            f"to clear {out} first"
        )
    class_files.clear(out, run_state.STATE)
    print(f"--force: cleared {out} (it held the grades of {whose})")


def class_of(submissions: Path, course: Course, out: Path, regrade: Sequence[str] = ()) -> list[tuple[str, Path]]:
    """The students of ``submissions``: its sub-folders, or the folder itself when it is one submission
    (it holds ``<module>.py`` files of the course itself, or in ``exercises/``). Raises SystemExit with a
    clear message when there is no student at all, never grading nobody, or when a student of ``regrade``
    (``--student``) has no folder."""
    students = _students_of(submissions, course, out)
    names = [name for name, _ in students]
    unknown = [s for s in regrade if s not in names]
    if unknown:
        raise SystemExit(
            f"autograder grade: --student {', '.join(map(repr, unknown))}: no such folder in {submissions}"
        )
    return students


def _students_of(submissions: Path, course: Course, out: Path) -> list[tuple[str, Path]]:
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
    desk = desk or Desk()
    if not submissions.is_dir():
        raise SystemExit(f"autograder grade: {submissions} is not a folder")
    say_environment()
    out = out.resolve()
    if desk.force and (resume or desk.students):
        raise SystemExit("autograder grade: --force starts OUT afresh; it cannot go with --resume or --student")
    record: dict = {}
    if resume or desk.students:
        options, record = reuse_recorded(out, submissions, options, desk, "--resume" if resume else "--student")
    modules = options.modules
    students = class_of(submissions, course, out, desk.students)
    times, late = late_work(course, desk, students, modules, record)
    try:
        roster = desk_exports.checked_roster(desk, [name for name, _ in students])
    except lms.ExportError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    if not (resume or desk.students):
        claim_out(out, submissions, desk.force)
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
                on_notice=say_notice,
                log=sys.stderr,
                desk=desk_record(submissions, desk, times),
            )
        except run_state.ResumeError as err:
            raise SystemExit(f"autograder grade: {err}") from None
        progress.finish()
    if grades.failure is not None and not caught:
        return grader_failed(grades.failure, len(grades.results))
    if stop.is_set():
        signum = caught[0] if caught else signal.SIGINT
        return interrupted(out, course, modules, grades.results, grades.total, signum, late)
    return write_class(course, out, modules, students, grades, desk, roster, late, gradebook, resume)


def reuse_recorded(out: Path, submissions: Path, options: Options, desk: Desk, how: str) -> tuple[Options, dict]:
    """``--student``/``--resume``: the options ``out`` was graded with, for every one not given now (said on the
    console); a given one that differs is refused (SystemExit). Returns the options and the record's desk."""
    try:
        found = desk_record_of.reuse_recorded(out, submissions, options, desk, how)
    except desk_record_of.DeskError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    if found.reused:
        print(f"{how}: reusing the options {out} was graded with: {' '.join(found.reused)}")
    return found.options, found.record


def late_work(
    course: Course, desk: Desk, students: list[tuple[str, Path]], modules: tuple[str, ...], record: dict
) -> tuple[dict, dict | None]:
    """Each student's submission time and lateness (None without ``--submitted-at``); a student whose time cannot
    be read is named on stderr (no late penalty)."""
    try:
        policy, times, no_time = desk_exports.submission_times(course.root, desk, students, modules)
    except late_policy.LateError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    names = [name for name, _ in students]
    no_time = desk_exports.keep_recorded_times(desk, record, names, times, no_time)
    if no_time:
        print(
            f"autograder grade: warning: no submission time ({desk.submitted_at}) for {', '.join(no_time)}: no late penalty for them",
            file=sys.stderr,
        )
    return times, desk_exports.judge_class(policy, desk, names, times)


def say_notice(notice: api.Notice) -> None:
    """What the grading says on the way: the isolation in force, who is regraded or resumed, unconfirmed passes."""
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
    elif isinstance(notice, api.Misnamed):  # a module file with a look-alike name: found, not graded
        for why in notice.found:
            print(f"autograder grade: warning: {notice.student}: {why}", file=sys.stderr)
    elif isinstance(notice, api.Unconfirmed):
        print(
            f"autograder grade: warning: {', '.join(notice.functions)} have no @pytest.mark.correctness check; "
            "their passes are taken from the student's process without confirmation",
            file=sys.stderr,
        )


def write_class(
    course: Course,
    out: Path,
    modules: tuple[str, ...],
    students: list[tuple[str, Path]],
    grades: api.ClassGrades,
    desk: Desk,
    roster: dict | None,
    late: dict | None,
    gradebook: str | None,
    resume: bool,
) -> int:
    """A finished run: the LMS files, the class files (stale ones of an earlier run removed), the gradebook; what
    was written, said on the console. Exit status 0."""
    results, finished = grades.results, set(grades.kept)
    total = sum(fn.points for fn in course.functions if fn.module in modules)
    exports = {}
    if roster is not None:
        try:
            exports = desk_exports.lms_files(desk, roster, course, modules, results, late, total)
        except lms.ExportError as err:
            raise SystemExit(f"autograder grade: {err}; no class file was rewritten") from None
    if not (resume or desk.students):
        removed = class_files.remove_stale(out, [r.student for r in results], list(exports))
        if removed:
            print(f"removed what an earlier run of this class left in {out}: {', '.join(removed)}")
    notes = given_code_notes(course, grades.submissions, [r.student for r in results])
    for name, lines in notes.items():
        for line in lines:
            print(f"autograder grade: note: {name}: {line}", file=sys.stderr)
    class_files.write_all(out, course, modules, results, late=late, exports=exports, notes=notes)
    say_exports(out, exports, roster, results)
    if gradebook:
        from autograder.grading.desk.gradebook import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), gradebook, course)
        print(f"wrote {written} grades into the gradebook {gradebook}")
    regraded = [r.student for r in results if r.student not in finished]
    if desk.students or resume:
        print(f"graded now: {', '.join(regraded) or 'nobody'}; the class files list {len(results)} students")
    print(
        f"graded {len(results)} students ({', '.join(modules)}; max {points_text(total, None)} points): {out / 'grades.csv'}"
    )
    return 0


def say_exports(out: Path, exports: dict[str, str], roster: dict | None, results: list) -> None:
    """Where each LMS file goes, and the roster's entries that had no folder."""
    for name in exports:
        where = "Canvas: Grades > Import" if name.startswith("canvas") else "Moodle: Grades > Import > CSV file"
        print(f"wrote {out / name} ({where})")
    if roster is not None:
        missing = lms.unmatched(roster, [r.student for r in results])
        if missing:
            print(
                f"autograder grade: roster entries with no folder (no submission: 0 in the imports): {', '.join(missing)}",
                file=sys.stderr,
            )


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
