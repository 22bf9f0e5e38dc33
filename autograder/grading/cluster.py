"""``grade --cluster ADDRESS``: the class's submissions as tasks on an existing Dask scheduler.

The instructor's side reads the course and the kit once (a
:class:`~autograder.grading.isolation.scratch.Snapshot`), ships it to the cluster once
as a task's result (workers fetch it from each other; a lost copy is
computed again, which scattered data would not be), and submits one task per student with the
student's submission as the run read it (:class:`~autograder.core.submission.Submission`, read once).
A worker grades with the very same :class:`~autograder.grading.grader.Grader`
a local run uses (sandboxed children, limits, trusted verification, the
grading profile's seeds), built once per worker process from the shipped
snapshot, so a submission gets the same verdicts and messages wherever it
runs and the outputs are byte-identical to a local run.

A worker that dies mid-submission is the scheduler's business: the task is
rescheduled on another worker (``distributed.scheduler.allowed-failures``
times); if that is exhausted (``KilledWorker``) it is submitted once more, and
only then does the student get a row saying the grader failed. Every student
gets a row.

Workers need the kit installed (the same version: the task's code is imported
by name) and Python with the pinned stack; the course itself comes with the task.
"""

from __future__ import annotations

import atexit
import hashlib
import pickle
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from autograder.core.course import Course, load_course
from autograder.core.outcomes import StudentResult
from autograder.core.submission import Submission
from autograder.grading import preflight
from autograder.grading.executor import ClassResults
from autograder.grading.grader import Grader, Options
from autograder.grading.isolation.limits import POLL
from autograder.grading.isolation.processes import child_env
from autograder.grading.isolation.scratch import Snapshot, scratch_dir
from autograder.grading.verdicts import failed_result
from autograder.grading.wire import PlannedCheck
from autograder.runtime import stores

RESUBMISSIONS = 1  # after a KilledWorker (the scheduler already retried on other workers)

_graders: dict[str, tuple[Grader, Path]] = stores.register("grading.cluster.graders", {})
_failed: dict[str, preflight.PreflightFailed] = stores.register(
    "grading.cluster.failed", {}
)  # graders whose environment failed its pre-flight check
_lock = threading.Lock()


def _worker_grader(snapshot: Snapshot, options: Options) -> Grader:
    """This worker process's grader for ``snapshot`` (built on first use, then reused). A new grader first
    proves this worker's environment (:mod:`autograder.grading.preflight`): if it fails, this and every later
    task of the worker raise :class:`~autograder.grading.preflight.PreflightFailed`, and ``grade`` stops."""
    key = hashlib.sha256(pickle.dumps((snapshot.course, snapshot.kit, options))).hexdigest()
    with _lock:
        if key in _failed:
            raise _failed[key]
        if key not in _graders:
            scratch = scratch_dir()
            course_root, _ = snapshot.materialize(scratch)
            grader = None
            try:
                preflight.check_interpreter(child_env())
                grader = Grader(load_course(course_root), options, snapshot=snapshot)
                preflight.check(grader, stream=sys.stdout)
            except (preflight.PreflightFailed, RuntimeError, OSError) as err:
                if grader is not None:
                    grader.close()
                shutil.rmtree(scratch, ignore_errors=True)
                failed = (
                    err
                    if isinstance(err, preflight.PreflightFailed)
                    else preflight.PreflightFailed(f"the grader could not start on this worker: {err}")
                )
                _failed[key] = preflight.PreflightFailed(f"on the Dask worker {socket.gethostname()}: {failed}")
                raise _failed[key] from None
            _graders[key] = (grader, scratch)
        return _graders[key][0]


@atexit.register
def _close_graders() -> None:
    with _lock:
        for grader, scratch in _graders.values():
            grader.close()
            shutil.rmtree(scratch, ignore_errors=True)
        _graders.clear()


def _course_snapshot(snapshot: Snapshot) -> Snapshot:
    """On a worker: the snapshot the task carries (a result the scheduler can compute again)."""
    return snapshot


def plan_task(snapshot: Snapshot, options: Options) -> tuple[list[PlannedCheck], list[str]]:
    """On a worker: the course's checks and the functions without a correctness check."""
    grader = _worker_grader(snapshot, options)
    return grader.plan, grader.unconfirmable_functions()


def grade_task(snapshot: Snapshot, options: Options, student: str, submitted: Submission) -> StudentResult:
    """On a worker: grade one submission (as the run read it) exactly as a local run does."""
    result = _worker_grader(snapshot, options).grade(student, submitted)
    result.timings = {}
    return result


class ClusterGrader:
    """:class:`~autograder.grading.executor.ClassExecutor` on a Dask cluster: each worker grades with a
    :class:`~autograder.grading.grader.Grader` of its own."""

    def __init__(
        self,
        course: Course,
        options: Options,
        address: str,
        stop: threading.Event | None = None,
        snapshot: Snapshot | None = None,
    ):
        from distributed import Client

        self.course = course
        self.stop = stop if stop is not None else threading.Event()
        # Worker-local paths: each worker has its own compilation cache.
        self.options = replace(options, cache_dir=None, jobs=1)
        self.client = Client(address)
        snapshot = snapshot or Snapshot.take(course.root)
        # A task's result, not scattered data: a worker that dies holding the only copy costs a recomputation
        # (scattered data would be lost for good, and every task needing it cancelled).
        self.snapshot = self.client.submit(_course_snapshot, snapshot, pure=False)
        plan = self.client.submit(plan_task, self.snapshot, self.options, pure=False)
        self.plan, self._unconfirmable = plan.result()

    def unconfirmable_functions(self) -> list[str]:
        return list(self._unconfirmable)

    def grade_class(
        self,
        students: list[tuple[str, Path]],
        progress: Callable[[int, int], None] | None = None,
        *,
        finished: dict[str, StudentResult] | None = None,
        on_result: Callable[[StudentResult], None] | None = None,
        submissions: Mapping[str, Submission] | None = None,
    ) -> list[StudentResult]:
        """:meth:`ClassExecutor.grade_class <autograder.grading.executor.ClassExecutor.grade_class>`, on the cluster."""
        from distributed import wait

        results = ClassResults(students, finished, progress, on_result)
        inputs = dict(results.to_grade(self.options.modules, submissions))
        attempts = dict.fromkeys(inputs, 0)
        pending = {self._submit(name, inputs[name]): name for name in inputs}
        try:
            while pending and not self.stop.is_set():
                try:
                    done, _ = wait(list(pending), timeout=POLL, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    continue
                for future in done:
                    name = pending.pop(future)
                    try:
                        result = future.result()
                    except (preflight.PreflightFailed, preflight.GraderError):
                        raise  # the grader's environment, not the student: grade stops, nothing is scored
                    except Exception as err:  # noqa: BLE001 - a lost worker or a grader bug must not lose a row
                        if _killed_worker(err) and attempts[name] < RESUBMISSIONS:
                            attempts[name] += 1
                            pending[self._submit(name, inputs[name])] = name
                            continue
                        result = self.failed_result(
                            name, f"the grader failed on this submission: {type(err).__name__}: {err}"
                        )
                    results.add(name, result)
        finally:
            if pending:
                self.client.cancel(list(pending))
        return results.sorted()

    def _submit(self, name: str, submitted: Submission):
        return self.client.submit(grade_task, self.snapshot, self.options, name, submitted, pure=False)

    def failed_result(self, student: str, message: str) -> StudentResult:
        return failed_result(self.course, self.plan, student, message)

    def close(self) -> None:
        self.client.close()


def _killed_worker(err: BaseException) -> bool:
    from distributed.scheduler import KilledWorker

    return isinstance(err, KilledWorker)
