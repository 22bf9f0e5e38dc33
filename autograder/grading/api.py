"""The one library entry of the grading wing: :func:`grade_class`.

Runs in the grader's process. Everything that grades a class calls it: ``autograder grade`` (through its
handler :mod:`autograder.grading.command`, which alone prints, exits and handles signals), the Gradescope
runner, the Dask cluster path (``cluster=``), ``benchmarks/grade_class.py`` and ``scripts/grade_agreement.py``.
It never prints (what a person should be told comes back as a :data:`Notice` through ``on_notice``, in the order
it happens, and the pre-flight line goes to ``log`` when one is given), never exits, never installs a signal
handler (a caller stops it by setting ``stop``), and returns a :class:`ClassGrades`.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from autograder.core.course import Course
from autograder.core.outcomes import StudentResult
from autograder.core.submission import Submission
from autograder.grading import preflight
from autograder.grading.executor import ClassExecutor, LocalThreads
from autograder.grading.grader import Grader
from autograder.grading.isolation import bubblewrap
from autograder.grading.isolation.processes import child_env
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options
from autograder.grading.outputs import class_files, run_state
from autograder.runtime import cpus


@dataclass(frozen=True)
class IsolationInForce:
    """How students' processes are kept apart in this run (said before any student is graded)."""

    description: str
    cluster: bool  # on a Dask cluster: each worker's own (not known here)


@dataclass(frozen=True)
class Resuming:
    """``resume``: the students kept from the earlier run, and those graded now."""

    out: Path
    kept: int
    changed: list[str]  # changed since graded
    new: list[str]  # not graded before


@dataclass(frozen=True)
class Regrading:
    """``regrade``: only the named students are graded; the others keep the grades recorded in ``out``."""

    out: Path
    students: list[str]
    kept: int
    left_out: list[str]  # no grades in ``out`` and not named: in no class file


@dataclass(frozen=True)
class Unconfirmed:
    """Functions with no correctness check: their passes are taken from the student's process unconfirmed."""

    functions: list[str]


@dataclass(frozen=True)
class Misnamed:
    """A student graded now whose module file has a look-alike name (found, not graded): why, per module."""

    student: str
    found: list[str]


Notice = IsolationInForce | Resuming | Regrading | Unconfirmed | Misnamed


@dataclass
class ClassGrades:
    """What :func:`grade_class` found."""

    results: list[StudentResult]  # every student's result, sorted by name (kept ones included)
    total: int  # the students of this run, kept ones included (with ``regrade``: the named and the kept)
    fingerprint: dict[str, str]  # the run's digests (autograder.grading.outputs.run_state.fingerprint)
    isolation: str  # the isolation in force, in words ("cluster" on a Dask cluster)
    kept: list[str] = field(default_factory=list)  # students taken as an earlier run graded them (resume, regrade)
    trusted_only_modules: list[str] = field(default_factory=list)  # judged on the trusted side only (the plan's)
    interrupted: bool = False  # ``stop`` was set: the students not finished are left out
    # the grader's own failure (its pre-flight check, a grading process that died before any student code ran):
    # no row is scored for it; ``results`` holds the kept students only
    failure: preflight.PreflightFailed | preflight.GraderError | None = None
    # every student's submission as the run read it (once), kept and left-out ones included
    submissions: dict[str, Submission] = field(default_factory=dict)

    @property
    def graded(self) -> list[StudentResult]:
        """The students graded in this run (not kept)."""
        return [r for r in self.results if r.student not in self.kept]


def grade_class(
    course: Course,
    students: list[tuple[str, Path]],
    options: Options,
    *,
    out: Path | None = None,
    resume: bool = False,
    regrade: Sequence[str] = (),
    cluster: str | None = None,
    stop: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_notice: Callable[[Notice], None] | None = None,
    log: TextIO | None = None,
    workers: int | None = None,
    prove: bool = True,
    desk: dict | None = None,
) -> ClassGrades:
    """Grade ``students`` (``(name, folder)`` pairs) with ``course``'s checks, locally or on the Dask scheduler at
    ``cluster``, after proving the grader's environment on the course's reference and stubs (pre-flight).

    ``out``: each finished student's ``results.json`` and the record ``--resume`` reads are written there as soon
    as the student is graded; with ``resume`` the students an earlier run into ``out`` finished (same fingerprint,
    same files) are kept; with ``regrade`` only those students are graded and every other keeps its recorded
    grades. ``workers``: the local grader's pre-started sandboxes (default: one per student to grade).
    ``prove=False`` skips the local pre-flight check: only for measurements and comparisons that are not grades
    (``benchmarks/grade_class.py --breakdown``, ``scripts/grade_agreement.py``, which compares with the checks run
    in-process on the published inputs). Grades (``prove=True``) are drawn from ``options.seed``, or when it is None
    from the seed the run in ``out`` recorded (``resume``, ``regrade``), else from :func:`default_seed`: never from
    the inputs a student release published answers for.
    ``desk``: what ``out``'s record keeps beside the fingerprint (the class and the export options,
    :mod:`~autograder.grading.outputs.run_state`).
    Raises :class:`~autograder.grading.outputs.run_state.ResumeError` when ``out`` cannot be resumed."""
    stop = stop if stop is not None else threading.Event()
    notify = on_notice or (lambda _notice: None)
    run = start_run(course, students, options, out, resume, regrade, cluster, prove, desk, notify)
    kept = [name for name, _ in run.students if name in run.finished]
    grades = ClassGrades([], len(run.students), run.fingerprint, run.isolation, kept, submissions=run.submissions)
    executor: ClassExecutor | None = None
    try:
        pre_started = workers if workers is not None else max(2, len(run.to_grade()))
        executor = start_executor(
            course, run.options, cluster, stop, run.snapshot, pre_started, prove, log, run.alone()
        )
        grades.trusted_only_modules = sorted({c.module for c in executor.plan if c.trusted_only})
        weak = executor.unconfirmable_functions()
        if weak:
            notify(Unconfirmed(weak))
        grades.results = run.grade(executor, progress)
    except (preflight.PreflightFailed, preflight.GraderError) as err:
        grades.failure = err
    except Exception:  # noqa: BLE001 - whatever a stop broke (a killed process) is not an error
        if not stop.is_set():
            raise
    finally:
        if executor is not None:
            executor.close()
    if stop.is_set() or grades.failure is not None:
        grades.interrupted = stop.is_set()
        grades.results = grades.results or [run.finished[name] for name, _ in run.students if name in run.finished]
    return grades


@dataclass
class Run:
    """A class's run as :func:`start_run` set it up: the options (with the seed drawn), the course's snapshot, the
    isolation in force, the fingerprint and record of ``out`` (None without one), the students to grade and the
    ones kept from the record, and every student's submission, read once."""

    course: Course
    out: Path | None
    options: Options
    snapshot: Snapshot
    isolation: str
    fingerprint: dict[str, str]
    state: run_state.RunState | None
    students: list[tuple[str, Path]]
    finished: dict[str, StudentResult]
    submissions: dict[str, Submission]

    def grade(self, executor: ClassExecutor, progress: Callable[[int, int], None] | None) -> list[StudentResult]:
        """``executor``'s results of this run's students: the kept ones as they were, each new one kept as soon as
        it is known (with a record), every submission as read once."""
        keep = self.keep if self.state is not None else None
        return executor.grade_class(
            self.students, progress, finished=self.finished, on_result=keep, submissions=self.submissions
        )

    def to_grade(self) -> list[str]:
        """The students this run grades (not kept from the record)."""
        return [name for name, _ in self.students if name not in self.finished]

    def alone(self) -> str | None:
        """The digest of the one submission this run grades, if it grades exactly one."""
        left = self.to_grade()
        return self.submissions[left[0]].digest if len(left) == 1 else None

    def keep(self, result: StudentResult) -> None:
        """A student is finished: its results.json now, and the record --resume reads."""
        assert self.out is not None and self.state is not None  # passed on only with a run record
        class_files.write_student(self.out, self.course, self.options.modules, result)
        self.state.record(result)


def start_run(
    course: Course,
    students: list[tuple[str, Path]],
    options: Options,
    out: Path | None,
    resume: bool,
    regrade: Sequence[str],
    cluster: str | None,
    prove: bool,
    desk: dict | None,
    notify: Callable[[Notice], None],
) -> Run:
    """What :func:`grade_class` does before any grading: the seed, the isolation said, ``out``'s record started
    (or continued: the students it keeps, said)."""
    modules = options.modules
    snapshot = Snapshot.take(course.root)
    if options.seed is None and prove:  # grades: never the inputs a student release published answers for
        recorded_seed = run_state.recorded_seed(out) if out is not None and (resume or regrade) else None
        options = replace(options, seed=recorded_seed if recorded_seed is not None else default_seed(snapshot))
    isolation = "cluster" if cluster else bubblewrap.isolation().describe()
    notify(IsolationInForce(isolation, bool(cluster)))
    run = run_state.fingerprint(
        snapshot.course,
        snapshot.kit,
        {
            "modules": list(modules),
            "timeout_per_function": options.timeout_per_function,
            "memory_mb": options.memory_mb,
            "seed": options.seed,
            "isolation": isolation,
        },
    )
    state = run_state.RunState.start(out, run, resume=resume or bool(regrade), desk=desk) if out is not None else None
    submissions = read_class(students, modules, regrade, notify)
    finished: dict[str, StudentResult] = {}
    if out is not None and state is not None and regrade:  # a state only with OUT
        recorded = state.recorded(submissions)
        names = [name for name, _ in students]
        finished = {n: r for n, r in recorded.items() if n not in regrade}
        left_out = [n for n in names if n not in regrade and n not in finished]
        students = [(n, f) for n, f in students if n in regrade or n in finished]
        notify(Regrading(out, list(regrade), len(finished), left_out))
    elif out is not None and state is not None:
        finished = state.finished(submissions)
        if resume:
            notify(Resuming(out, len(finished), list(state.changed), list(state.new)))
    return Run(course, out, options, snapshot, isolation, run, state, students, finished, submissions)


def read_class(
    students: list[tuple[str, Path]], modules: tuple[str, ...], regrade: Sequence[str], notify: Callable[[Notice], None]
) -> dict[str, Submission]:
    """Every student's submission, read once for the whole run (the record's digests, the grading, the notes on
    given code); a student graded now whose module file has a look-alike name is said (:class:`Misnamed`)."""
    submissions = {name: Submission.read(folder, modules) for name, folder in students}
    for name, submitted in submissions.items():
        found = list(dict.fromkeys(why for why in submitted.missing.values() if ": found " in why))
        if found and (not regrade or name in regrade):
            notify(Misnamed(name, found))
    return submissions


def start_executor(
    course: Course,
    options: Options,
    cluster: str | None,
    stop: threading.Event,
    snapshot: Snapshot,
    pre_started: int,
    prove: bool,
    log: TextIO | None,
    alone: str | None = None,
) -> ClassExecutor:
    """The class's executor: on the Dask scheduler at ``cluster`` (each worker proves its environment before its
    first submission: :mod:`autograder.grading.cluster`), else a local grader with ``pre_started`` sandboxes,
    proven first with ``prove`` (the reference and the stubs, graded; closed again when that fails).

    ``alone``: the digest of the one submission graded (a Gradescope submission, a regrade, a late arrival). When
    its setting's proof was reused and a CPU is idle (:func:`~autograder.runtime.cpus.spare`), the verifier rehearses
    the pre-flight's request of the reference while the student's code runs
    (:mod:`autograder.grading.preflight.rehearsal`): the student's own request then meets a warm verifier instead of a
    cold one after the grading process ends; unless an earlier call kept the answer for these very files. (A class
    warms its verifiers on its first students; a proof made now left the verifier warm.)"""
    if cluster:
        from autograder.grading.cluster import ClusterGrader

        return ClusterGrader(course, options, cluster, stop, snapshot=snapshot)
    # A setting proven earlier (its proof reused by preflight.check) needs no interpreter probe of its own: the
    # grader's own processes are it (its sandboxes import the libraries, its trusted side's first process makes
    # the course's devices compute: verifier.devices_compute), and the first student follows sooner.
    proven = prove and preflight.kept_proof(snapshot, options, bubblewrap.isolation())[1] is not None
    grader = start_grader(
        lambda: Grader(course, options, stop, snapshot=snapshot, workers=pre_started), probe=not proven
    )
    executor = LocalThreads(grader)
    if prove:  # before the first student
        try:
            preflight.check(grader, stream=log if log is not None else io.StringIO())
        except BaseException:
            executor.close()
            raise
    if proven and alone is not None and cpus.spare():
        grader.trusted.rehearse(alone)
    return executor


def default_seed(snapshot: Snapshot) -> int:
    """The instructor seed ``grade`` draws its inputs from when no ``--seed`` is given: drawn from the references
    (which students never see) as the Gradescope bundle's is, so a release's recorded answers (for the published
    inputs) earn nothing in any mode, and the same course grades the same way every run."""
    from autograder.shipped.references import instructor_seed

    solutions = {Path(rel).name: data for rel, data in snapshot.course.items() if rel.startswith("solutions/")}
    return instructor_seed(solutions)


def _nothing() -> None:
    pass


def start_grader(make, probe: bool = True):
    """``make()`` (a new :class:`Grader`), while this Python shows beside it that it can start a grading process
    (:func:`~autograder.grading.preflight.check_interpreter`, in a thread of its own: the probe's interpreter,
    the trusted side and the first sandboxes import the libraries at the same time). The probe's verdict comes
    first: an interpreter that cannot grade raises its :class:`~autograder.grading.preflight.PreflightFailed`
    (the grader, if it started, is closed); a grader that cannot start here (its trusted side or its grading
    processes fail to start) raises one saying why. ``probe=False``: no probe beside it (a proven setting)."""
    verdict: list[BaseException] = []

    def check() -> None:
        try:
            preflight.check_interpreter(child_env())
        except BaseException as err:  # noqa: BLE001 - raised in the caller's thread below
            verdict.append(err)

    prober = threading.Thread(target=check if probe else _nothing, name="interpreter-probe", daemon=True)
    prober.start()
    try:
        grader = make()
    except (RuntimeError, OSError) as err:
        prober.join()
        if verdict:
            raise verdict[0] from None
        text = str(err)
        first, _, rest = text.partition("\n")
        raise preflight.PreflightFailed(
            f"the grader could not start in this environment, so nothing was graded: {first}"
            + preflight.last_lines(rest)
        ) from None
    except BaseException:
        prober.join()
        raise
    prober.join()
    if verdict:
        grader.close()
        raise verdict[0]
    return grader


def preflight_only(course: Course, options: Options, log: TextIO | None = None) -> preflight.Passed:
    """``autograder preflight``: grade the course's reference and stubs as :func:`grade_class` would, on a grader
    of two workers; raises :class:`~autograder.grading.preflight.PreflightFailed` (or ``GraderError``) unless the
    reference got full marks and the stubs nothing. Its line goes to ``log``."""
    grader = None
    try:
        grader = start_grader(lambda: Grader(course, options, workers=2))
        return preflight.check(grader, stream=log if log is not None else io.StringIO())
    finally:
        if grader is not None:
            grader.close()
