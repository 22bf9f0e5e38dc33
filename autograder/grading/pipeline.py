"""One submission as a pipeline: its modules run in the student's sandbox, its claims confirmed, its score.

Runs in the grader's process. For one submission:

1. :meth:`~autograder.core.submission.Submission.read` took the student's ``<module>.py`` files (regular files,
   at most 1 MB) into a :class:`~autograder.core.submission.Submission`; a :class:`SubmissionRun` carries it;
2. :meth:`SubmissionPipeline.grade_module` decides a module that cannot run or is the stub untouched at once
   (:mod:`~autograder.grading.unrun`), and runs each other module in its own grading processes in the student's
   sandbox (so what one module's code does to the grader reaches no other module), which run the checks and
   stream :class:`~autograder.grading.wire.Claim` s; when a process hangs, crashes, exits or blows its memory,
   the function (or the module import) it was in gets a clear failure (:func:`blame`), and a new process grades
   what is left; a module found changing the grader's own functions earns nothing (:func:`void_tampered`).
   Each step returns the verdicts it found; nothing is passed in to be filled;
3. :meth:`SubmissionPipeline.finish` has the correctness checks it claims to pass confirmed on the trusted side
   (:func:`confirmed`; a pass that is not confirmed is a failure), and scores the outcomes with the one rule
   (:func:`autograder.core.outcomes.score_functions`).
"""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from autograder.core.course import Course
from autograder.core.outcomes import CheckOutcome, StudentResult, score_functions
from autograder.core.screen import needs_review
from autograder.core.status import Status
from autograder.core.submission import Submission
from autograder.grading import preflight
from autograder.grading.events import Tampered
from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.channel import out_of_order
from autograder.grading.isolation.limits import Fault, Interrupted, RunResult
from autograder.grading.isolation.limits import check as stop_if_set
from autograder.grading.isolation.scratch import copy_plain_files
from autograder.grading.pool import GradingPool
from autograder.grading.runs import ChildRuns, NoSpace
from autograder.grading.trusted.client import TrustedSide
from autograder.grading.trusted.trusted_only import observed_in_the_students_process
from autograder.grading.unrun import decided_unrun
from autograder.grading.verdicts import (
    MAX_REVIEW,
    CheckVerdict,
    Verdicts,
    blame,
    broken_box,
    clean_message,
    last_claim,
    out_of_space,
    quota_note,
    reviewed,
    trusted_verdict,
    unconfirmed,
    void_tampered,
    withheld,
)
from autograder.grading.wire import Claim, PlannedCheck, Replay, Verdict
from autograder.runtime import compile_cache


@dataclass
class ModuleResult:
    """What one module's grading processes found: a verdict per check, the transcripts of its claimed passes,
    how long it took."""

    verdicts: Verdicts = field(default_factory=dict)
    transcripts: dict[str, dict] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"runs": 0, "run_seconds": 0.0})
    review: list[str] = field(default_factory=list)  # needs review: what, file:line
    module: str = ""


class RunFault(NamedTuple):
    """A fault of a grading process, for :mod:`autograder.grading.preflight`: its module, the fault, its last
    stderr."""

    module: str
    fault: Fault
    stderr_tail: str


@dataclass
class SubmissionRun:
    """One student's :class:`~autograder.core.submission.Submission` being graded, and what their modules' grading
    processes found so far (:meth:`add`, module by module: the workers grading one student's modules share it)."""

    student: str
    submitted: Submission
    verdicts: Verdicts = field(default_factory=dict)  # check id -> its verdict
    transcripts: dict[str, dict] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"runs": 0, "run_seconds": 0.0, "verify_seconds": 0.0})
    review: dict[str, list[str]] = field(default_factory=dict)  # module -> needs review: what, file:line
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The student's sandbox (SubmissionPipeline.box_of): a folder (JAX's compilation cache, HOME), a uid, a control
    # group and a zygote of their own, for all of their grading processes: nothing one student's code writes
    # reaches another's.
    box: Box | None = None
    fresh_boxes: int = 0  # boxes started in place of one the student's code broke (at most one)

    def add(self, found: ModuleResult) -> None:
        with self.lock:
            self.verdicts.update(found.verdicts)
            self.transcripts.update(found.transcripts)
            if found.review:
                self.review[found.module] = list(found.review)
            for key, value in found.timings.items():
                self.timings[key] = self.timings.get(key, 0.0) + value


class SubmissionPipeline(ChildRuns):
    """The steps of one submission, shared by every submission of a grader (module docstring)."""

    def __init__(self, course: Course, options, pool: GradingPool, trusted: TrustedSide, stop: threading.Event):
        self.course = course
        self.options = options
        self.pool = pool
        self.trusted = trusted
        self.stop = stop
        self.plan: list[PlannedCheck] = trusted.plan
        self.function_of = {c.id: c.qualname for c in self.plan}
        self.trusted_only_modules = {c.module for c in self.plan if c.trusted_only}
        self.modules_with_givens = trusted.modules_with_givens
        self.faults: list[RunFault] = []  # every fault of a grading process, read by autograder.grading.preflight
        # while the pre-flight grades the course's own submissions (Grader.proving): no --jax-cache folder is theirs
        # (a student named ``reference`` keeps one there, written by their own processes)
        self.proving = False
        # planted in each student's new sandbox (preflight.seed; the Grader sets the setting's where caches are shared)
        self.seed = preflight.StudentSeed(None)

    def modules_to_run(self, submission: SubmissionRun) -> list[str]:
        """The modules of ``submission`` that need a grading process (present, with checks)."""
        missing = submission.submitted.missing
        return [m for m in self.options.modules if m not in missing and any(c.module == m for c in self.plan)]

    def box_of(self, submission: SubmissionRun) -> Box:
        """``submission``'s sandbox, taken on first use. With ``--jax-cache DIR`` its folder starts with a copy of
        ``DIR/<student>``'s cache, copied back when the student is done (:meth:`finish`): no student process is
        given ``DIR``, where every student's cache is kept.

        One per student, never shared: a compilation cache is a folder of executables that every process using
        it writes and loads, so a shared one would let a submission read the programs compiled from a
        classmate's code, or plant programs that later students' processes run."""
        with submission.lock:
            if submission.box is None:
                submission.box = self._new_box(submission)
            return submission.box

    def _new_box(self, submission: SubmissionRun) -> Box:
        box = self.pool.take_box()
        cache = box.home / compile_cache.FOLDER
        planted = 0 if self.proving else self.seed.plant(cache)  # JAX's own operations (preflight.seed)
        kept = self.kept_cache(submission)
        if kept is not None:
            copy_plain_files(kept, cache)
        if planted or kept is not None:
            box.give(cache)
        return box

    def kept_cache(self, submission: SubmissionRun) -> Path | None:
        """``--jax-cache DIR``'s folder of the student; None without, and for the pre-flight's (see ``proving``)."""
        if self.options.cache_dir is None or self.proving:
            return None
        return Path(self.options.cache_dir) / submission.student

    def fresh_box(self, submission: SubmissionRun, broken: Box) -> Box | None:
        """A new sandbox for ``submission`` in place of ``broken``, which the student's own code broke (its zygote
        stopped, killed or wedged after their code ran in it): ``broken`` is killed and removed. Once per student:
        None when the student already had their fresh box (their remaining functions then earn nothing)."""
        with submission.lock:
            if submission.box is not broken:  # another of the student's modules replaced it already
                return submission.box
            if submission.fresh_boxes >= 1:
                return None
            submission.fresh_boxes += 1
            broken.condemned = True
            self.pool.discard_box(broken)
            submission.box = None
        return self.box_of(submission)

    def grade_module(self, submission: SubmissionRun, module: str) -> ModuleResult:
        """Run ``module``'s checks in fresh processes until each has a verdict (a fault costs only what it hit);
        independent of the submission's other modules (workers may share a student)."""
        checks = [c for c in self.plan if c.module == module]
        source = submission.submitted.files[module]
        found = ModuleResult(module=module)
        verdicts = found.verdicts
        # read on the trusted side before anything of it runs (autograder.core.screen): what an honest answer
        # never writes; with what the grading process's audit hook saw, it withholds the checks witnessed there
        review = needs_review(module, source)
        # a module that cannot be imported, or the course's stub untouched: decided here (not in the pre-flight)
        unrun = None if self.proving or review else decided_unrun(module, source, checks, self.pool.snapshot.course)
        if unrun is not None:
            return replace(found, verdicts=unrun)
        box = self.box_of(submission)
        for _attempt in range(len(checks) + 2):
            todo = [c for c in checks if c.id not in verdicts]
            if not todo:
                break
            box, done = self._attempt(submission, found, box, checks, todo, review)
            if done:
                break
        else:  # every attempt used (a box replaced on the way): what is left could not be run
            for c in checks:
                verdicts.setdefault(c.id, CheckVerdict(Status.ERROR, "this check could not be run on your submission"))
        if review:
            verdicts.update(withheld(module, checks, verdicts, review))
        found.review = review[:MAX_REVIEW]
        return found

    def _attempt(
        self,
        submission: SubmissionRun,
        found: ModuleResult,
        box: Box,
        checks: list[PlannedCheck],
        todo: list[PlannedCheck],
        review: list[str],
    ) -> tuple[Box, bool]:
        """One grading process of ``found``'s module, what it found taken into ``found``: the box for the next
        attempt (a fresh one when the student's code broke this one) and whether the module is done."""
        module, verdicts = found.module, found.verdicts
        source = submission.submitted.files[module]
        started = time.monotonic()
        ran_before = box.student_ran  # the student's code had run in this box before this run
        try:
            try:
                run = self.run_child(module, source, box, [c.id for c in checks if c.id in verdicts])
            except Interrupted:
                raise
            except Exception:
                if not box.condemned:
                    raise
                # the student's code broke this box (another of their modules found it) while this run was laid
                # out or started in it: it runs again in the fresh box, nobody blamed
                return self.box_of(submission), False
        except NoSpace:  # the student's own files filled their quota: the grader cannot lay out the next run
            full = f": not checked: your sandbox's disk is full{quota_note(box)}"
            verdicts.update({c.id: CheckVerdict(Status.FAILED, c.qualname + full) for c in todo})
            return box, True
        except RuntimeError as err:  # a zygote that did not start or fork
            if not box.student_ran and not box.condemned:  # no student code ran in this box: the grader's failure
                raise preflight.GraderError(
                    f"the grader could not start a grading process of {module} ({err}; "
                    f"{preflight.limits_of(self.options)})" + preflight.last_lines(self.pool.zygote_stderr(box))
                ) from None
            fresh = self.fresh_box(submission, box)  # the student's code broke its own box: a fresh one, once
            if fresh is None:
                verdicts.update(broken_box(module, todo, err))
                return box, True
            return fresh, False
        if run.fault is not None and box.condemned:  # killed with a box the student broke: run again, no blame
            return self.box_of(submission), False
        if run.fault is not None:
            self.faults.append(RunFault(module, run.fault, run.stderr_tail))
            if preflight.fault_before_student(run):
                if not ran_before:  # the grader's failure: never a student's score
                    raise preflight.grader_error(module, run, preflight.limits_of(self.options))
                # died before this run imported the student's code, in a box where their code had run: what
                # their code left there (a process of another module, a full /dev/shm) is theirs, a fresh box once
                fresh = self.fresh_box(submission, box)
                if fresh is None:
                    verdicts.update(broken_box(module, todo, run.fault.detail or run.fault.kind))
                    return box, True
                return fresh, False
        return box, self._take_run(found, run, box, checks, todo, started, review)

    def _take_run(
        self,
        found: ModuleResult,
        run: RunResult,
        box: Box,
        checks: list[PlannedCheck],
        todo: list[PlannedCheck],
        started: float,
        review: list[str],
    ) -> bool:
        """What one grading process of ``found``'s module found, into ``found`` (and ``review``): its claims, its
        tampering, the blame of its fault. True when the module is done (tampered, or ran to its end), False when a
        fault left checks to run again."""
        module, verdicts, timings = found.module, found.verdicts, found.timings
        timings["runs"] += 1
        timings[f"peak_mb:{module}"] = max(timings.get(f"peak_mb:{module}", 0.0), run.peak_mb)
        timings["run_seconds"] += time.monotonic() - started
        claimed, transcripts, tampered = self.claims(run, verdicts)
        # exactly one end per begin, in order, of this run's own checks: a claim the student's code wrote on
        # the channel (at import or while a check ran) breaks the reporter's order, and costs the module
        disorder = out_of_order(run.events, module, {c.id for c in todo})
        if disorder:
            tampered = [*(tampered or []), *(f"the event channel: {what}" for what in disorder)]
        last = last_claim(run)
        if last is not None and run.fault is not None:  # it ended right after a claim, no check running: that
            claimed.pop(last, None)  # claim may be its own last word
            run.fault = replace(run.fault, check=last)
        if box.quota_mb is not None:
            claimed = {
                check: CheckVerdict(
                    status,
                    message + quota_note(box) if status != Status.PASSED and out_of_space(message) else message,
                )
                for check, (status, message) in claimed.items()
            }
        verdicts.update(claimed)
        found.transcripts.update(transcripts)
        review += [line for line in reviewed(run, module) if line not in review]
        if tampered is not None:
            verdicts.update(void_tampered(module, checks, tampered))
            review += [f"tampering detected: {what}, {module}.py" for what in tampered[:3]]
            return True
        if run.fault is None:
            return True
        for check, verdict in blame(run.fault, todo, self.options, self.function_of).items():
            if box.quota_mb is not None and out_of_space(run.stderr_tail):
                verdict = verdict._replace(message=verdict.message + quota_note(box))
            verdicts.setdefault(check, verdict)
        return False

    def claims(self, run: RunResult, judged: Verdicts) -> tuple[Verdicts, dict[str, dict], list[str] | None]:
        """What ``run``'s events claim of checks not ``judged`` yet (hostile data: a claim, never more), the
        transcripts of its claimed passes, and what it tampered with (None: nothing)."""
        verdicts: Verdicts = {}
        transcripts: dict[str, dict] = {}
        tampered: list[str] | None = None
        for event in run.events:
            if isinstance(event, Tampered):
                tampered = list(event.what)
            if (
                isinstance(event, Claim)
                and event.check in self.function_of
                and event.check not in judged
                and event.check not in verdicts
            ):
                verdicts[event.check] = CheckVerdict(event.outcome, clean_message(event.message))
                if event.transcript is not None:
                    transcripts[event.check] = event.transcript
        return verdicts, transcripts, tampered

    def finish(self, submission: SubmissionRun) -> StudentResult:
        """Confirm ``submission``'s claimed passes on the trusted side and score it (all its modules ran)."""
        box = submission.box
        if box is not None:  # nothing of the student's runs on while the verifier judges it
            self.pool.close_box(box)
            if self.proving and submission.student == preflight.REFERENCE:  # the course's own, graded by the kit
                names = preflight.seed_names(self.pool.snapshot.course, self.pool.env)
                self.seed.keep(box.home / compile_cache.FOLDER, names)
            kept = self.kept_cache(submission)
            if kept is not None:  # all of the student's processes have ended
                shutil.rmtree(kept, ignore_errors=True)
                copy_plain_files(box.home / compile_cache.FOLDER, kept)
            self.pool.discard_box(box)
        verdicts, timings = dict(submission.verdicts), submission.timings
        missing = submission.submitted.missing
        for check in self.plan:
            if check.module in missing:
                verdicts.setdefault(check.id, CheckVerdict(Status.FAILED, missing[check.module]))
            verdicts.setdefault(check.id, CheckVerdict(Status.ERROR, "this check could not be run on your submission"))
        started = time.monotonic()
        sources = {m: data.decode("utf-8", "replace") for m, data in submission.submitted.files.items()}
        verdicts.update(self.confirmed(verdicts, submission.transcripts, sources, submission.submitted.digest))
        timings["verify_seconds"] = time.monotonic() - started
        stop_if_set(self.stop)  # a run killed by the stop must not become a result
        outcomes = [
            CheckOutcome(c.module, c.function, c.test, verdicts[c.id].status, c.correctness, verdicts[c.id].message)
            for c in self.plan
        ]
        review = [line for m in self.options.modules for line in submission.review.get(m, [])]
        return StudentResult(submission.student, score_functions(self.course, outcomes), outcomes, timings, review)

    def confirmed(
        self, verdicts: Verdicts, transcripts: dict, sources: dict[str, str] | None = None, digest: str | None = None
    ) -> Verdicts:
        """The verdicts the trusted side changes: of each claimed pass of a check it decides (a correctness check, or
        one marked ``decided``), confirmed or not (``sources``: the student's files, for the checks decided from
        the source; ``digest``: of all the student's files, :meth:`TrustedSide.verify`'s ``submission``)."""
        claims = [c.id for c in self.plan if c.confirmed and verdicts[c.id].status == Status.PASSED]
        if not claims:
            return {}
        # the checks decided from the source, alone or with the program (the retracing checks)
        modules = {c.module for c in self.plan if c.id in claims and c.decided in ("source", "program")}
        try:
            answers = self.trusted.verify(
                claims,
                {c: transcripts.get(c, {}) for c in claims},
                {m: text for m, text in (sources or {}).items() if m in modules},
                digest,
            )
        except Exception as err:  # noqa: BLE001 - never trust an unconfirmed pass
            answers = {c: Verdict(Replay.FAILED, f"the grader could not confirm this check ({err})") for c in claims}
        trusted_only = {c.id for c in self.plan if c.trusted_only}
        changed: Verdicts = {}
        for check in claims:
            verdict = answers.get(check, Verdict(Replay.FAILED))
            if check in trusted_only:
                changed[check] = trusted_verdict(check, self.function_of[check], verdict)
            elif verdict.outcome != Replay.PASSED and not observed_in_the_students_process(check):
                changed[check] = unconfirmed(self.function_of[check], clean_message(verdict.message).strip())
        return changed
