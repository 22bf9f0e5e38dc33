"""One grading process of one module, laid out and run in the student's sandbox.

:class:`ChildRuns` is the part of :class:`autograder.grading.pipeline.SubmissionPipeline` that lays a run's
folder out (by the grader, then handed to the student's uid) and supervises its process; the files helpers copy
what a sandbox keeps without following what a submission may have left there.
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import replace
from pathlib import Path

from autograder.core.failures import strip_ansi
from autograder.grading.events import ChannelEvent, Review, Tampered
from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.limits import WALL_FACTOR, Limits, RunResult
from autograder.grading.isolation.scratch import no_space, withhold_hidden
from autograder.grading.isolation.supervise import supervise
from autograder.grading.options import Options
from autograder.grading.pool import GradingPool
from autograder.grading.trusted.client import TrustedSide
from autograder.grading.wire import ChildRequest, Claim, PlannedCheck


def _withheld(event: ChannelEvent, hidden: frozenset[str], paths: tuple[str, ...]) -> ChannelEvent:
    """``event`` with no hidden check's line and no grader's path in what it says (a claim's message; a review's or a
    tampering report's ``what``, hostile too: a forged one)."""
    if isinstance(event, Claim):
        message = event.message
        for path in paths:
            message = message.replace(path, "<sandbox>")
        return replace(event, message=withhold_hidden(strip_ansi(message), hidden))
    if isinstance(event, Review):
        return replace(event, what=withhold_hidden(event.what, hidden))
    if isinstance(event, Tampered):
        return replace(event, what=tuple(withhold_hidden(w, hidden) for w in event.what))
    return event


class NoSpace(Exception):
    """The student's sandbox has no room left for the grader to lay out a run (their quota is full)."""


class ChildRuns:
    """Runs one grading process of a module (:meth:`run_child`); the pipeline sets what it reads."""

    options: Options
    pool: GradingPool
    trusted: TrustedSide
    stop: threading.Event
    plan: list[PlannedCheck]
    function_of: dict[str, str]
    trusted_only_modules: set[str]
    modules_with_givens: set[str]

    def run_child(self, module: str, source: bytes, box: Box, skip: list[str]) -> RunResult:
        """One grading process for ``module`` (only its file is in its folder), skipping checks in ``skip``, in
        its student's sandbox ``box`` (:meth:`box_of`). Raises :class:`NoSpace` when the student's own files
        left no room in their sandbox to lay the run out."""
        scratch = box.folder / box.run_name()  # made in the grader's own folder, handed over once laid out
        stderr_path = box.private / f"{scratch.name}-stderr.txt"  # opened by name: never where the student writes
        shared = self.pool.shared
        try:
            try:
                cfg, handed = self._lay_out(module, source, box, skip, scratch)
            except OSError as err:
                if no_space(err) and box.quota_mb is not None:  # the student's quota, not the machine's disk
                    raise NoSpace() from None
                raise
            remaining = {self.function_of[c.id] for c in self.plan if c.module == module}
            limits = Limits(
                self.options.timeout_per_function,
                self.options.memory_mb,
                total_timeout=WALL_FACTOR * self.options.timeout_per_function * (len(remaining) + 3) + 120,
            )
            starter = self.pool.starter(box)

            def start(*args):
                handle = starter(*args)
                box.student_ran = True  # a process that imports the student's module runs in the box from now on
                return handle

            run = supervise(start, scratch / "work", cfg, limits, self.function_of, self.stop, stderr_path, handed)
            hidden = self.pool.snapshot.hidden_lines(module)
            paths = (str(scratch), str(shared))
            run.events = [_withheld(event, hidden, paths) for event in run.events]
            run.stderr_tail = withhold_hidden(run.stderr_tail, hidden)
            return run
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            stderr_path.unlink(missing_ok=True)

    def _lay_out(
        self, module: str, source: bytes, box: Box, skip: list[str], scratch: Path
    ) -> tuple[dict, bytes | None]:
        """``scratch`` made and laid out for one run (by the grader, in its own folder), then handed to the
        student's uid; the run's request, and the module's checks compiled to hand over through a descriptor
        (their file on the sandbox's disk a placeholder: no hidden check's text for the student's code to read).
        Only with a seed: without one, Hypothesis derives each check's inputs from its source text, which the
        verifier reads, so the file stays (never for grades: ``grade_class`` always draws from a seed)."""
        scratch.mkdir()
        own_answers = module in self.trusted_only_modules
        kit = self.pool.shared / "kit"
        if own_answers:  # this module's checks only (never another module's, hidden ones included), the grader's
            course_root = self.pool.snapshot.module_course(scratch, module)
        else:  # a module whose grading process takes the reference (none of this course's)
            course_root, _ = self.pool.snapshot.materialize(scratch, solutions=True, kit=False)
        givens = ""
        if own_answers and module in self.modules_with_givens:
            shutil.copytree(self.trusted.givens_dir, scratch / "givens")
            givens = str(scratch / "givens")
        checks = course_root / "exercises" / f"test_{module}.py"
        handed = self.pool.snapshot.hand_checks(course_root, module) if self.options.seed is not None else None
        submission = scratch / "submission"
        submission.mkdir()
        (submission / f"{module}.py").write_bytes(source)
        for folder in ("work", "tmp"):
            (scratch / folder).mkdir()
        # all of it readable by the student while it is all the grader's; then the folders their process writes in
        # are handed over, and the run's folder and the course copy stay the grader's (read-only to the student,
        # so no name in them can be replaced)
        _readable(scratch)
        for folder in ("submission", "work", "tmp"):
            box.give(scratch / folder)
        return ChildRequest(
            str(course_root),
            str(submission),
            [module],
            skip,
            str(kit),
            seed=self.options.seed,
            own_answers=own_answers,
            givens=givens,
            own_folder=str(box.home),
            tmp=str(scratch / "tmp"),
            handed_checks=str(checks) if handed is not None else "",
        ).to_wire(), handed


def _readable(folder: Path) -> None:
    """``folder`` (made by the grader, none of it handed over yet) readable, not writable, by other users."""
    for root, _dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
