"""One grader: the pool of grading processes, the trusted side, and the pipeline of one submission, together.

Runs in the grader's process (a local ``grade``, each Dask worker, Gradescope's runner). A :class:`Grader`
starts its pool (:mod:`autograder.grading.pool`: the students' sandboxes, the first of them started ahead so
that they import the libraries while the trusted side plans), has the trusted side plan the course's checks
(:mod:`autograder.grading.trusted.client`), and grades submissions with :mod:`autograder.grading.pipeline`:
:meth:`Grader.grade_submission` one at a time, :meth:`Grader.tasks` one task per module for an executor
(:mod:`autograder.grading.executor`). :meth:`Grader.close` ends every process and removes every folder.

Callers outside the grading wing never build one: they call :func:`autograder.grading.grade_class`.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import StudentResult
from autograder.core.submission import Submission
from autograder.grading import preflight
from autograder.grading.executor import LocalThreads
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.options import Options
from autograder.grading.pipeline import RunFault, SubmissionPipeline, SubmissionRun
from autograder.grading.pool import GradingPool
from autograder.grading.preflight.confirmations import KeptConfirmations
from autograder.grading.preflight.plans import KeptPlans
from autograder.grading.preflight.rehearsal import KeptRehearsal
from autograder.grading.trusted.client import TrustedSide
from autograder.grading.trusted.shared import sharing_enabled
from autograder.grading.verdicts import failed_result


class Grader:
    """Everything shared by the runs of one ``grade`` command."""

    def __init__(
        self,
        course: Course,
        options: Options,
        stop: threading.Event | None = None,
        snapshot: Snapshot | None = None,
        workers: int = 0,
    ):
        """``workers``: how many worker threads will grade (at most ``options.jobs``); their pre-imported
        processes start now, so they import the libraries while the trusted side lists the checks."""
        self.course = course
        self.options = options
        self.stop = stop if stop is not None else threading.Event()
        # the trusted side's compiled programs kept between calls (AUTOGRADER_CLASS_SHARING=0: this run's own)
        kept = preflight.kept_compile_cache if sharing_enabled() else None
        self.pool = GradingPool(course, options, self.stop, snapshot, trusted_cache=kept)
        try:
            workers = min(max(0, workers), options.jobs)
            self.pool.start_spares(workers)  # the first students' sandboxes import the libraries while the plan is made
            # the plan an earlier call of the same setting listed (AUTOGRADER_CLASS_SHARING=0: listed again)
            # and the verifier's answers to the very same requests (preflight.confirmations; =0: replayed again)
            # and the pre-flight's request of the reference, which a later call's verifier rehearses (=0: none)
            kept_plans, kept_confirmations, kept_rehearsal = None, None, None
            if sharing_enabled():
                snapshot, isolation = self.pool.snapshot, self.pool.isolation
                kept_plans = KeptPlans.of(snapshot, options, isolation)
                kept_confirmations = KeptConfirmations.of(snapshot, options, isolation)
                kept_rehearsal = KeptRehearsal.of(snapshot, options, isolation)
            self.trusted = TrustedSide(
                self.pool,
                options,
                self.stop,
                workers,
                kept_plans=kept_plans,
                kept_confirmations=kept_confirmations,
                kept_rehearsal=kept_rehearsal,
            )
        except BaseException:
            self.close()
            raise
        self.pipeline = SubmissionPipeline(course, options, self.pool, self.trusted, self.stop)
        # the programs of JAX's own operations the pre-flight's reference compiled, planted in every student's
        # sandbox (AUTOGRADER_CLASS_SHARING=0: none, each student compiles them all)
        if sharing_enabled():
            self.pipeline.seed = preflight.StudentSeed.of(self.pool.snapshot, options, self.pool.isolation)

    @property
    def snapshot(self) -> Snapshot:
        return self.pool.snapshot

    @property
    def isolation(self):
        """How this grader keeps students apart (:func:`~autograder.grading.isolation.bubblewrap.isolation`)."""
        return self.pool.isolation

    @property
    def plan(self):
        return self.trusted.plan

    @property
    def faults(self) -> list[RunFault]:
        """Every fault of a grading process (its module, the fault, its last stderr), read by
        :mod:`~autograder.grading.preflight`."""
        return self.pipeline.faults

    @property
    def trusted_only_modules(self) -> set[str]:
        return self.pipeline.trusted_only_modules

    @property
    def modules_with_givens(self) -> set[str]:
        return self.pipeline.modules_with_givens

    @contextlib.contextmanager
    def proving(self) -> Iterator[None]:
        """While the pre-flight grades the course's own submissions: the trusted side replays every claim (no
        answer kept by an earlier call stands in for one: the pre-flight proves that the verifier answers now), and
        no ``--jax-cache`` folder is the course's submissions' (a student named ``reference`` keeps one there)."""
        self.trusted.proving = True
        self.pipeline.proving = True
        try:
            yield
        finally:
            self.trusted.proving = False
            self.pipeline.proving = False

    def unconfirmable_functions(self) -> list[str]:
        """Functions with no correctness check: their passes cannot be confirmed by the trusted side."""
        confirmed = {(c.module, c.function) for c in self.plan if c.correctness}
        return [
            fn.qualname
            for fn in self.course.functions
            if fn.module in self.options.modules and (fn.module, fn.name) not in confirmed
        ]

    def grade_submission(self, student: str, folder: Path) -> StudentResult:
        """Grade the submission in ``folder`` (read here, once)."""
        return self.grade(student, Submission.read(folder, self.options.modules))

    def grade(self, student: str, submitted: Submission) -> StudentResult:
        """Grade one student's submission (as read by :meth:`Submission.read`), each module in its own processes;
        raises :class:`~autograder.grading.isolation.limits.Interrupted` on stop."""
        submission = SubmissionRun(student, submitted)
        for module in self.pipeline.modules_to_run(submission):
            submission.add(self.pipeline.grade_module(submission, module))
        return self.pipeline.finish(submission)

    def tasks(self, name: str, submitted: Submission) -> list[Callable[[], StudentResult | None]]:
        """One task per module of ``name``'s submission; the task that ends its last module returns the
        student's result (or raises what went wrong in any of them), the others return None."""
        pipeline = self.pipeline
        submission = SubmissionRun(name, submitted)
        modules = pipeline.modules_to_run(submission)
        if not modules:
            return [lambda: pipeline.finish(submission)]
        left = [len(modules)]
        errors: list[BaseException] = []

        def run(module: str) -> StudentResult | None:
            try:
                submission.add(pipeline.grade_module(submission, module))
            except BaseException as err:  # noqa: BLE001 - reported once, by the student's last task
                with submission.lock:
                    errors.append(err)
            with submission.lock:
                left[0] -= 1
                if left[0]:
                    return None
            if errors:
                raise errors[0]
            return pipeline.finish(submission)

        return [functools.partial(run, module) for module in modules]

    def grade_class(
        self, students: list[tuple[str, Path]], progress=None, *, finished=None, on_result=None, submissions=None
    ) -> list[StudentResult]:
        """:meth:`ClassExecutor.grade_class <autograder.grading.executor.ClassExecutor.grade_class>` on this
        machine's threads (:class:`~autograder.grading.executor.LocalThreads`)."""
        return LocalThreads(self).grade_class(
            students, progress, finished=finished, on_result=on_result, submissions=submissions
        )

    def failed_result(self, student: str, message: str) -> StudentResult:
        return failed_result(self.course, self.plan, student, message)

    def close(self) -> None:
        """End every zygote and remove every scratch folder (also after an interruption)."""
        self.pool.close()


def find_students(submissions: Path) -> list[tuple[str, Path]]:
    """Every visible sub-folder of ``submissions`` is a student, named after the folder."""
    return sorted((p.name, p) for p in Path(submissions).iterdir() if p.is_dir() and not p.name.startswith("."))
