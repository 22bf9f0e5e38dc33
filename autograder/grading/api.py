"""``autograder grade``: what the command does, for :mod:`autograder.cli` (which only parses).

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
from pathlib import Path

from autograder.core.course import Course
from autograder.grading import class_report, run_state, sandbox
from autograder.grading.grader import Grader, Options, Progress, StudentResult, find_students

INTERRUPTED = {128 + signal.SIGINT, 128 + signal.SIGTERM}


def select_modules(course: Course, only: list[str] | None) -> tuple[str, ...]:
    """The modules to grade, in course order; raises SystemExit naming an unknown one."""
    names = [m.name for m in course.modules]
    unknown = [m for m in only or () if m not in names]
    if unknown:
        raise SystemExit(f"autograder grade: unknown module(s) {unknown}; course.toml has {names}")
    return tuple(m for m in names if not only or m in only)


def grade(
    course: Course, submissions: Path, out: Path, options: Options, gradebook: str | None = None, resume: bool = False,
    cluster: str | None = None,
) -> int:
    """Grade every student folder of ``submissions`` and write ``out/grades.csv``, ``out/<student>/results.json``
    and ``out/summary.md`` (and the gradebook, when given), locally or on the Dask scheduler at ``cluster``.
    Returns the exit status (128 + signal when stopped)."""
    if not submissions.is_dir():
        raise SystemExit(f"autograder grade: {submissions} is not a folder")
    out = out.resolve()
    modules = options.modules
    students = find_students(submissions)
    snapshot = sandbox.Snapshot.take(course.root)
    isolation = sandbox.isolation()
    if not cluster:
        print(f"autograder grade: isolation: {isolation.describe()}", flush=True)
    run = run_state.fingerprint(
        snapshot.course, snapshot.kit,
        {
            "modules": list(modules), "timeout_per_function": options.timeout_per_function, "memory_mb": options.memory_mb,
            "seed": options.seed, "isolation": isolation.describe() if not cluster else "cluster",
        },
    )
    try:
        state = run_state.RunState.start(out, run, resume=resume)
    except run_state.ResumeError as err:
        raise SystemExit(f"autograder grade: {err}") from None
    finished = state.finished(students, modules)
    if finished:
        print(f"resuming {out}: {len(finished)} already graded, {len(students) - len(finished)} to grade")

    def keep(result: StudentResult) -> None:
        """A student is finished: its results.json now, and the record --resume reads."""
        class_report.write_student(out, course, modules, result)
        state.record(result)

    stop = threading.Event()
    progress = Progress()
    results: list[StudentResult] = []
    with stop_on_signals(stop) as caught:
        grader = None
        try:
            if cluster:
                from autograder.grading.cluster import ClusterGrader

                grader = ClusterGrader(course, options, cluster, stop, snapshot=snapshot)
            else:
                grader = Grader(course, options, stop, snapshot=snapshot, workers=len(students) - len(finished))
            weak = grader.unconfirmable_functions()
            if weak:
                print(
                    f"autograder grade: warning: {', '.join(weak)} have no @pytest.mark.correctness check; "
                    "their passes are taken from the student's process without confirmation",
                    file=sys.stderr,
                )
            results = grader.grade_class(students, progress, finished=finished, on_result=keep)
        except Exception:  # noqa: BLE001 - whatever a stop broke (a killed process) is not an error
            if not stop.is_set():
                raise
        finally:
            if grader is not None:
                grader.close()
        progress.finish()
    if stop.is_set():
        results = results or [finished[name] for name, _ in students if name in finished]
        return interrupted(out, course, modules, results, len(students), caught[0] if caught else signal.SIGINT)
    class_report.write_all(out, course, modules, results)
    if gradebook:
        from autograder.notebooks.builder import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), gradebook, course)
        print(f"wrote {written} grades into the gradebook {gradebook}")
    total = sum(fn.points for fn in course.functions if fn.module in modules)
    print(f"graded {len(results)} students ({', '.join(modules)}; max {total:g} points): {out / 'grades.csv'}")
    return 0


def interrupted(out: Path, course: Course, modules: tuple[str, ...], results: list, total: int, signum: int) -> int:
    """Write what was finished, marked incomplete; one line on stderr; exit status 128 + the signal."""
    note = (
        f"grading was interrupted after {len(results)} of {total} students; the others are not in this file. "
        "Run the same command with --resume to grade them."
    )
    class_report.write_all(out, course, modules, results, incomplete=note)
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
