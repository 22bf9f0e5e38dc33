"""Grading a class: the one interface (:class:`ClassExecutor`), and its local implementation on threads.

Runs in the grader's process. :class:`LocalThreads` runs a :class:`~autograder.grading.grader.Grader`'s tasks
over a thread pool, one task per module of a student (one supervised process per worker at a time, so a class
smaller than the pool still keeps every worker busy; students are queued in order, and the task that ends a
student's last module confirms and scores it), and never lets an error lose a student's row. Setting the stop
event (``grade`` does on Ctrl-C and SIGTERM) ends it within a fraction of a second: running processes are
killed and unfinished students are left out. :class:`~autograder.grading.cluster.ClusterGrader` implements the
same interface on a Dask cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Protocol

from autograder.core.outcomes import StudentResult
from autograder.core.submission import Submission
from autograder.grading import preflight
from autograder.grading.isolation.limits import POLL, Interrupted, MemoryLimitTooLow
from autograder.grading.options import Options
from autograder.grading.wire import PlannedCheck


class ClassExecutor(Protocol):
    """What grades a class: locally (:class:`LocalThreads`) or on a Dask cluster
    (:class:`~autograder.grading.cluster.ClusterGrader`)."""

    stop: threading.Event
    plan: list[PlannedCheck]  # the course's checks of the selected modules, as the trusted side planned them

    def unconfirmable_functions(self) -> list[str]:
        """Functions with no correctness check: their passes cannot be confirmed by the trusted side."""

    def grade_class(
        self,
        students: list[tuple[str, Path]],
        progress: Callable[[int, int], None] | None = None,
        *,
        finished: dict[str, StudentResult] | None = None,
        on_result: Callable[[StudentResult], None] | None = None,
        submissions: Mapping[str, Submission] | None = None,
    ) -> list[StudentResult]:
        """Every student's result, sorted by name; ``finished`` ones (an interrupted run's) are taken as
        they are, and ``on_result`` gets each new one as soon as it is known. ``submissions``: the students'
        submissions as the run read them (once); a student not in it is read from its folder here.

        When :attr:`stop` is set, returns at once with the students finished so far (the caller tells by
        ``stop.is_set()``); a student being graded then is left out, not half-graded. A failure of the
        grader's side raises :class:`~autograder.grading.preflight.GraderError` (or
        :class:`~autograder.grading.preflight.PreflightFailed`): no row is scored for it."""

    def close(self) -> None:
        """End every process and remove every folder of the run."""


class ClassResults:
    """A class's results as they come in, for either executor: the ``finished`` ones first, each new one told
    to ``on_result`` and counted on ``progress`` as soon as it is known; in the end, sorted by student."""

    def __init__(
        self,
        students: list[tuple[str, Path]],
        finished: dict[str, StudentResult] | None,
        progress: Callable[[int, int], None] | None,
        on_result: Callable[[StudentResult], None] | None,
    ):
        self.students, self.progress, self.on_result = students, progress, on_result
        self.by_name = {name: finished[name] for name, _ in students if finished and name in finished}
        self.todo = [(name, folder) for name, folder in students if name not in self.by_name]
        self.count()

    def count(self) -> None:
        if self.progress:
            self.progress(len(self.by_name), len(self.students))

    def add(self, name: str, result: StudentResult) -> None:
        self.by_name[name] = result
        if self.on_result:
            self.on_result(result)
        self.count()

    def sorted(self) -> list[StudentResult]:
        return [self.by_name[name] for name, _ in sorted(self.students) if name in self.by_name]

    def to_grade(
        self, modules: tuple[str, ...] | list[str], submissions: Mapping[str, Submission] | None
    ) -> list[tuple[str, Submission]]:
        """The students left to grade, each with their submission: as the run read it (``submissions``), or read
        from their folder now, once."""
        read = submissions or {}
        return [(name, read.get(name) or Submission.read(folder, modules)) for name, folder in self.todo]


class Tasks(Protocol):
    """What :class:`LocalThreads` runs: a grader's tasks, one per module of a student
    (:class:`~autograder.grading.grader.Grader` is one; the executor does not import it)."""

    stop: threading.Event
    options: Options

    @property
    def plan(self) -> list[PlannedCheck]:
        """The trusted side's plan of the course's checks (read-only)."""

    def tasks(self, name: str, submitted: Submission) -> list[Callable[[], StudentResult | None]]:
        """One callable per module of the student; the one that ends the student's last module returns its result."""

    def failed_result(self, name: str, message: str) -> StudentResult:
        """A row for a student the grader failed on (every function 0, the message said)."""

    def unconfirmable_functions(self) -> list[str]: ...

    def close(self) -> None: ...


class LocalThreads:
    """:class:`ClassExecutor` on this machine: ``grader``'s tasks over ``grader.options.jobs`` threads."""

    def __init__(self, grader: Tasks):
        self.grader = grader
        self.stop = grader.stop
        self.plan = grader.plan

    def unconfirmable_functions(self) -> list[str]:
        return self.grader.unconfirmable_functions()

    def close(self) -> None:
        self.grader.close()

    def grade_class(
        self,
        students: list[tuple[str, Path]],
        progress: Callable[[int, int], None] | None = None,
        *,
        finished: dict[str, StudentResult] | None = None,
        on_result: Callable[[StudentResult], None] | None = None,
        submissions: Mapping[str, Submission] | None = None,
    ) -> list[StudentResult]:
        results = ClassResults(students, finished, progress, on_result)
        grader_errors: list[preflight.GraderError] = []
        pool = ThreadPoolExecutor(max_workers=max(1, self.grader.options.jobs))
        # One task per module of a student (a class smaller than the pool still uses every worker); the
        # task that finishes a student's last module confirms and scores it. Students are queued in order.
        pending: dict[Future, str] = {}
        try:
            for name, submitted in results.to_grade(self.grader.options.modules, submissions):
                for task in self.grader.tasks(name, submitted):
                    pending[pool.submit(task)] = name
            # progress per module graded (the desk's Progress; any callable of (done, total) still works)
            getattr(progress, "tasks", lambda _n: None)(len(pending))
            while pending and not self.stop.is_set():
                done, _ = wait(pending, timeout=POLL, return_when=FIRST_COMPLETED)
                for future in done:
                    name = pending.pop(future)
                    getattr(progress, "task_done", lambda: None)()
                    if _ends_a_student(future):
                        self._keep(results, grader_errors, name, future)
        except BaseException:  # e.g. KeyboardInterrupt when no signal handler is installed
            self.stop.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        for future, name in pending.items():  # finished just before the stop: complete results
            if future.done() and not future.cancelled() and _ends_a_student(future):
                self._keep(results, grader_errors, name, future)
        if grader_errors:
            raise grader_errors[0]
        return results.sorted()

    def _keep(self, results: ClassResults, grader_errors: list[preflight.GraderError], name: str, future) -> None:
        """A student's finished task into ``results``; a failure of the grader's own into ``grader_errors`` (the
        run stops, no row is scored for it)."""
        stop = self.stop
        try:
            result = future.result()
        except Interrupted:
            return
        except preflight.GraderError as err:  # not the student's: the run stops, no row is scored
            grader_errors.append(err)
            stop.set()
            return
        except MemoryLimitTooLow as err:  # the grader's own failure: nobody is graded, nobody gets 0
            grader_errors.append(preflight.GraderError(f"stopped before grading: {err}"))
            stop.set()
            return
        except Exception as err:  # noqa: BLE001 - a grader bug must not lose a row
            if stop.is_set():
                return
            result = self.grader.failed_result(
                name, f"the grader failed on this submission: {type(err).__name__}: {err}"
            )
        results.add(name, result)


def _ends_a_student(future) -> bool:
    """Whether a finished task of :meth:`Grader.tasks` carries its student's result (or error)."""
    return future.exception() is not None or future.result() is not None
