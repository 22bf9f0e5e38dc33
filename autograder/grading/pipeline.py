"""One submission as a pipeline: its modules run in the student's sandbox, its claims confirmed, its score.

Runs in the grader's process. For one submission:

1. :func:`read_submission` took the student's ``<module>.py`` files (regular files only, at most 1 MB; nothing
   else of the folder is used) into a :class:`Submission`;
2. :meth:`SubmissionPipeline.grade_module` runs each module in its own grading processes in the student's
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

import os
import re
import shutil
import stat
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import CheckOutcome, StudentResult, score_functions
from autograder.core.screen import needs_review
from autograder.core.status import Status
from autograder.core.submission import read_submission
from autograder.grading import preflight
from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.channel import out_of_order
from autograder.grading.isolation.limits import WALL_FACTOR, Fault, Interrupted, Limits, RunResult
from autograder.grading.isolation.limits import check as stop_if_set
from autograder.grading.isolation.scratch import no_space, withhold_hidden
from autograder.grading.isolation.supervise import supervise
from autograder.grading.pool import GradingPool
from autograder.grading.trusted.client import TrustedSide
from autograder.grading.trusted.trusted_only import observed_in_the_students_process
from autograder.grading.wire import (
    ChildRequest,
    Claim,
    Event,
    FaultKind,
    PlannedCheck,
    Replay,
    Verdict,
    tampered_what,
)
from autograder.pytest_plugin.report import strip_ansi
from autograder.runtime import compile_cache

# A check's verdict as the grader holds it until it becomes a CheckOutcome: (status, message).
Verdicts = dict[str, tuple[Status, str]]


@dataclass
class ModuleResult:
    """What one module's grading processes found: a verdict per check, the transcripts of its claimed passes,
    how long it took."""

    verdicts: Verdicts = field(default_factory=dict)
    transcripts: dict[str, dict] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"runs": 0, "run_seconds": 0.0})
    review: list[str] = field(default_factory=list)  # needs review: what, file:line
    module: str = ""


@dataclass
class Submission:
    """One student's files and what their modules' grading processes found so far (:meth:`add`, module by
    module: the workers grading one student's modules share it)."""

    student: str
    files: dict[str, bytes]
    missing: dict[str, str]
    verdicts: Verdicts = field(default_factory=dict)  # check id -> (status, message)
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


class SubmissionPipeline:
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
        # every fault of a grading process: (module, fault, its last stderr), read by autograder.grading.preflight
        self.faults: list[tuple[str, Fault, str]] = []

    def submission(self, student: str, folder: Path) -> Submission:
        return Submission(student, *read_submission(folder, self.options.modules))

    def modules_to_run(self, submission: Submission) -> list[str]:
        """The modules of ``submission`` that need a grading process (present, with checks)."""
        return [
            m for m in self.options.modules if m not in submission.missing and any(c.module == m for c in self.plan)
        ]

    def box_of(self, submission: Submission) -> Box:
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

    def _new_box(self, submission: Submission) -> Box:
        box = self.pool.take_box()
        if self.options.cache_dir is not None:
            _copy_files(Path(self.options.cache_dir) / submission.student, box.home / compile_cache.FOLDER)
            box.give(box.home / compile_cache.FOLDER)
        return box

    def fresh_box(self, submission: Submission, broken: Box) -> Box | None:
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

    def grade_module(self, submission: Submission, module: str) -> ModuleResult:
        """Run ``module``'s checks in fresh processes until each has a verdict (a fault costs only what it hit);
        independent of the submission's other modules (workers may share a student)."""
        checks = [c for c in self.plan if c.module == module]
        box = self.box_of(submission)
        source = submission.files[module]
        found = ModuleResult(module=module)
        verdicts, timings = found.verdicts, found.timings
        # read on the trusted side before anything of it runs (autograder.core.screen): what an honest answer
        # never writes; with what the grading process's audit hook saw, it withholds the checks witnessed there
        review = needs_review(module, source)
        for _attempt in range(len(checks) + 2):
            todo = [c for c in checks if c.id not in verdicts]
            if not todo:
                break
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
                    box = self.box_of(submission)
                    continue
            except NoSpace:  # the student's own files filled their quota: the grader cannot lay out the next run
                full = f": not checked: your sandbox's disk is full{quota_note(box)}"
                verdicts.update({c.id: (Status.FAILED, c.qualname + full) for c in todo})
                break
            except RuntimeError as err:  # a zygote that did not start or fork
                if not box.student_ran and not box.condemned:  # no student code ran in this box: the grader's failure
                    raise preflight.GraderError(
                        f"the grader could not start a grading process of {module} ({err}; "
                        f"{preflight.limits_of(self.options)})" + preflight.last_lines(self.pool.zygote_stderr(box))
                    ) from None
                fresh = self.fresh_box(submission, box)  # the student's code broke its own box: a fresh one, once
                if fresh is None:
                    verdicts.update(broken_box(module, todo, err))
                    break
                box = fresh
                continue
            if run.fault is not None and box.condemned:  # killed with a box the student broke: run again, no blame
                box = self.box_of(submission)
                continue
            if run.fault is not None:
                self.faults.append((module, run.fault, run.stderr_tail))
                if preflight.fault_before_student(run):
                    if not ran_before:  # the grader's failure: never a student's score
                        raise preflight.grader_error(module, run, preflight.limits_of(self.options))
                    # died before this run imported the student's code, in a box where their code had run: what
                    # their code left there (a process of another module, a full /dev/shm) is theirs, a fresh box once
                    fresh = self.fresh_box(submission, box)
                    if fresh is None:
                        verdicts.update(broken_box(module, todo, run.fault.detail or run.fault.kind))
                        break
                    box = fresh
                    continue
            timings["runs"] += 1
            timings[f"peak_mb:{module}"] = max(timings.get(f"peak_mb:{module}", 0.0), run.peak_mb)
            timings["run_seconds"] += time.monotonic() - started
            claimed, transcripts, tampered = self.claims(run, verdicts)
            # exactly one end per begin, in order, of this run's own checks: a claim the student's code wrote on
            # the channel (at import or while a check ran) breaks the reporter's order, and costs the module
            disorder = out_of_order(run.events, module, {c.id for c in todo})
            if disorder:
                tampered = [*(tampered or []), *(f"the event channel: {what}" for what in disorder)]
            last = _last_claim(run)
            if last is not None and run.fault is not None:  # it ended right after a claim, no check running: that
                claimed.pop(last, None)  # claim may be its own last word
                run.fault = replace(run.fault, check=last)
            if box.quota_mb is not None:
                claimed = {
                    check: (
                        status,
                        message + quota_note(box) if status != Status.PASSED and _out_of_space(message) else message,
                    )
                    for check, (status, message) in claimed.items()
                }
            verdicts.update(claimed)
            found.transcripts.update(transcripts)
            review += [line for line in reviewed(run, module) if line not in review]
            if tampered is not None:
                verdicts.update(void_tampered(module, checks, tampered))
                review += [f"tampering detected: {what}, {module}.py" for what in tampered[:3]]
                break
            if run.fault is None:
                break
            for check, verdict in blame(run.fault, todo, self.options, self.function_of).items():
                if box.quota_mb is not None and _out_of_space(run.stderr_tail):
                    verdict = (verdict[0], verdict[1] + quota_note(box))
                verdicts.setdefault(check, verdict)
        else:  # every attempt used (a box replaced on the way): what is left could not be run
            for c in checks:
                verdicts.setdefault(c.id, (Status.ERROR, "this check could not be run on your submission"))
        if review:
            verdicts.update(withheld(module, checks, verdicts, review))
        found.review = review[:MAX_REVIEW]
        return found

    def claims(self, run: RunResult, judged: Verdicts) -> tuple[Verdicts, dict[str, dict], list[str] | None]:
        """What ``run``'s events claim of checks not ``judged`` yet (hostile data: a claim, never more), the
        transcripts of its claimed passes, and what it tampered with (None: nothing)."""
        verdicts: Verdicts = {}
        transcripts: dict[str, dict] = {}
        tampered: list[str] | None = None
        for event in run.events:
            what = tampered_what(event)
            if what is not None:
                tampered = what
            claim = Claim.from_event(event)
            if (
                claim is not None
                and claim.check in self.function_of
                and claim.check not in judged
                and claim.check not in verdicts
            ):
                verdicts[claim.check] = (claim.outcome, clean_message(claim.message))
                if claim.transcript is not None:
                    transcripts[claim.check] = claim.transcript
        return verdicts, transcripts, tampered

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
            for event in run.events:
                if isinstance(event.get("message"), str):
                    event["message"] = withhold_hidden(
                        strip_ansi(
                            event["message"].replace(str(scratch), "<sandbox>").replace(str(shared), "<sandbox>")
                        ),
                        hidden,
                    )
                if isinstance(event.get("what"), list):  # hostile too: a forged review or tampering report
                    event["what"] = [withhold_hidden(w, hidden) if isinstance(w, str) else w for w in event["what"]]
                elif isinstance(event.get("what"), str):
                    event["what"] = withhold_hidden(event["what"], hidden)
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

    def finish(self, submission: Submission) -> StudentResult:
        """Confirm ``submission``'s claimed passes on the trusted side and score it (all its modules ran)."""
        box = submission.box
        if box is not None:  # nothing of the student's runs on while the verifier judges it
            self.pool.close_box(box)
            if self.options.cache_dir is not None:  # all of the student's processes have ended
                kept = Path(self.options.cache_dir) / submission.student
                shutil.rmtree(kept, ignore_errors=True)
                _copy_files(box.home / compile_cache.FOLDER, kept)
            self.pool.discard_box(box)
        verdicts, timings = dict(submission.verdicts), submission.timings
        for check in self.plan:
            if check.module in submission.missing:
                verdicts.setdefault(check.id, (Status.FAILED, submission.missing[check.module]))
            verdicts.setdefault(check.id, (Status.ERROR, "this check could not be run on your submission"))
        started = time.monotonic()
        verdicts.update(self.confirmed(verdicts, submission.transcripts))
        timings["verify_seconds"] = time.monotonic() - started
        stop_if_set(self.stop)  # a run killed by the stop must not become a result
        outcomes = [
            CheckOutcome(c.module, c.function, c.test, verdicts[c.id][0], c.correctness, verdicts[c.id][1])
            for c in self.plan
        ]
        review = [line for m in self.options.modules for line in submission.review.get(m, [])]
        return StudentResult(submission.student, score_functions(self.course, outcomes), outcomes, timings, review)

    def confirmed(self, verdicts: Verdicts, transcripts: dict) -> Verdicts:
        """The verdicts the trusted side changes: of each claimed pass of a check it decides (a correctness check, or
        one marked ``decided``), confirmed or not."""
        claims = [c.id for c in self.plan if c.confirmed and verdicts[c.id][0] == Status.PASSED]
        if not claims:
            return {}
        try:
            answers = self.trusted.verify(claims, {c: transcripts.get(c, {}) for c in claims})
        except Exception as err:  # noqa: BLE001 - never trust an unconfirmed pass
            answers = {c: Verdict(Replay.FAILED, f"the grader could not confirm this check ({err})") for c in claims}
        trusted_only = {c.id for c in self.plan if c.trusted_only}
        changed: Verdicts = {}
        for check in claims:
            verdict = answers.get(check, Verdict(Replay.FAILED))
            if check in trusted_only:
                changed[check] = trusted_verdict(check, self.function_of[check], verdict)
            elif verdict.outcome != Replay.PASSED and not observed_in_the_students_process(check):
                qual = self.function_of[check]
                detail = clean_message(verdict.message).strip()
                changed[check] = (
                    Status.UNCONFIRMED,
                    f"{qual}: your process reported this check as passed, but the grader could not confirm it"
                    + (f":\n{detail}" if detail else ""),
                )
        return changed


def _last_claim(run: RunResult) -> str | None:
    """The check of the claim a run's process wrote last before it ended on its own (``sys.exit``, ``os._exit``,
    a signal) while no check and no import was running: nothing of the reporter's runs there, but a student's
    code that wrote an ``end`` of its own and exited at once would leave its claim the last, in order."""
    fault = run.fault
    if fault is None or fault.kind != FaultKind.CRASH or fault.check is not None or fault.module is not None:
        return None
    last = next((e for e in reversed(run.events) if e.get("event") not in (Event.TAMPERED, Event.REVIEW)), None)
    check = last.get("check") if last is not None and last.get("event") == "end" else None
    return check if isinstance(check, str) else None


def blame(fault: Fault, todo: list[PlannedCheck], options, function_of: dict[str, str]) -> Verdicts:
    """Fail what the fault affected: the module being imported, else the function being checked."""
    limit = f"{options.timeout_per_function:g}"
    how = {
        FaultKind.TIMEOUT: None,
        FaultKind.MEMORY: f"it used more than {options.memory_mb} MB of memory",
        FaultKind.FLOOD: "it wrote too much into the grader's channel",
        FaultKind.STALLED: "the grading process stopped making progress",
    }.get(fault.kind) or fault.detail
    if fault.module is not None and fault.module in options.modules:
        if fault.kind == FaultKind.TIMEOUT:
            message = f"your module could not be imported: importing {fault.module}.py did not finish within {limit} s (an endless loop at the top level?)"
        else:
            message = f"your module could not be imported: importing {fault.module}.py stopped the grader ({how})"
        hit = [c for c in todo if c.module == fault.module]
    elif fault.check in function_of:
        qual = function_of[fault.check]
        if fault.kind == FaultKind.TIMEOUT:
            message = f"{qual}: timed out after {limit} s (all checks of one function must finish within {limit} s; look for an endless loop or a very slow computation)"
        else:
            message = f"{qual}: the grading process stopped while checking this function: {how}"
        hit = [c for c in todo if c.qualname == qual]
    else:
        message = f"the grader could not run your code: {how}"
        hit = todo
    return {check.id: (Status.FAILED, message) for check in hit}


class NoSpace(Exception):
    """The student's sandbox has no room left for the grader to lay out a run (their quota is full)."""


def quota_note(box: Box) -> str:
    return (
        f"\n(disk quota: your sandbox may hold at most {box.quota_mb} MB of files; your code wrote more, and the "
        "write that went past it failed)"
    )


def _out_of_space(text: str) -> bool:
    return "No space left on device" in text or "Errno 28" in text or "Disk quota exceeded" in text


def broken_box(module: str, todo: list[PlannedCheck], err: BaseException | str) -> Verdicts:
    """The checks of ``module`` left when the student's code broke their sandbox twice (its zygote stopped, killed
    or wedged after their code ran in it, and again in a fresh one): each fails, saying why."""
    return {
        c.id: (
            Status.FAILED,
            f"{c.qualname}: not checked: your code stopped or broke the process that starts your grading processes "
            f"({err}), in your sandbox and again in a fresh one, so the rest of {module} could not be run; "
            "do not signal, stop or kill processes you did not start",
        )
        for c in todo
    }


MAX_REVIEW = 20
# what the grading process's audit hook may report (autograder.grading.untrusted.audit): at most this many lines
MAX_REVIEW_CHARS = 300


def reviewed(run: RunResult, module: str) -> list[str]:
    """What the grading process's audit hook saw the student's code do (``review`` events: hostile data, which
    can only cost the student who writes them), as ``what, <module>.py:line``."""
    found: list[str] = []
    for event in run.events:
        if event.get("event") != Event.REVIEW:
            continue
        what, line = event.get("what"), event.get("line")
        if isinstance(what, str) and isinstance(line, int) and len(found) < MAX_REVIEW:
            found.append(f"{clean_message(what)[:MAX_REVIEW_CHARS]}, {module}.py:{line}")
    return found


def withheld(module: str, checks: list[PlannedCheck], verdicts: Verdicts, review: list[str]) -> Verdicts:
    """A module that needs review keeps what the trusted side confirms (its correctness checks and the checks
    decided there), and earns
    nothing from the checks witnessed in its own grading process: each of those fails, saying why."""
    shown = "; ".join(review[:3]) + (f"; and {len(review) - 3} more" if len(review) > 3 else "")
    changed: Verdicts = {}
    for check in checks:
        if check.confirmed or verdicts.get(check.id, (Status.FAILED, ""))[0] != Status.PASSED:
            continue
        changed[check.id] = (
            Status.FAILED,
            f"{check.qualname}: needs review: {shown}. This check is decided in your own grading process, and "
            "your code does what an answer that reaches into that process does, so it earns nothing until your "
            f"instructor has looked at {module}.py (values confirmed by the grader keep their points).",
        )
    return changed


def void_tampered(module: str, checks: list[PlannedCheck], what: list[str]) -> Verdicts:
    """A module that changed the grader earns nothing: every check of it fails, saying why."""
    shown = ", ".join(what[:3]) + (f" and {len(what) - 3} more" if len(what) > 3 else "")
    message = (
        f"tampering detected: importing or running {module}.py changed the grader's own code"
        + (f" ({shown})" if shown else "")
        + f"; none of {module}'s checks can be trusted, so this module earns nothing. "
        "Your module must not modify pytest, hypothesis, NumPy or the autograder."
    )
    return {check.id: (Status.FAILED, message) for check in checks}


def trusted_verdict(check: str, qualname: str, verdict: Verdict) -> tuple[Status, str]:
    """A claimed pass of a module judged on the trusted side only: the verifier's verdict is the check's,
    its failure message (expected and got, the first failing input) the student's. A correctness check the
    verifier cannot replay earns nothing, unless it is one the README lists as observed in the student's
    process (:func:`autograder.grading.trusted.trusted_only.observed_in_the_students_process`)."""
    outcome, message = verdict.outcome, clean_message(verdict.message).strip()
    if outcome == Replay.PASSED or (outcome == Replay.UNVERIFIABLE and observed_in_the_students_process(check)):
        return Status.PASSED, ""
    if outcome == Replay.UNVERIFIABLE:
        return Status.ERROR, f"{qualname}: the grader could not judge this check from what your process recorded"
    if verdict.missing:  # the student's process did not call the function on every input
        return Status.UNCONFIRMED, (
            f"{qualname}: your process reported this check as passed, but the grader could not confirm it"
            + (f":\n{message}" if message else "")
        )
    return Status.FAILED, message


def failed_result(course: Course, plan: list[PlannedCheck], student: str, message: str) -> StudentResult:
    """A student whose grading failed on the grader's side: every check an error saying so, nothing earned."""
    outcomes = [CheckOutcome(c.module, c.function, c.test, Status.ERROR, c.correctness, message) for c in plan]
    return StudentResult(student, score_functions(course, outcomes), outcomes)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def clean_message(message: str) -> str:
    """Deterministic text: no memory addresses, no ANSI colours, bounded length."""
    message = _ADDRESS.sub("0x…", strip_ansi(message))
    return message if len(message) <= 4000 else message[:4000] + "\n  … (message shortened)"


def _readable(folder: Path) -> None:
    """``folder`` (made by the grader, none of it handed over yet) readable, not writable, by other users."""
    for root, _dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def _copy_files(source: Path, dest: Path) -> None:
    """Copy the regular files directly in ``source`` into ``dest`` (made private). Links, folders and
    anything else a submission may have left there are not followed: copying is done by the grader, which
    may read what the submission must not."""
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    if source.is_symlink() or not source.is_dir():
        return
    for entry in source.iterdir():
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # no link, no waiting on a pipe
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                continue
            with open(dest / entry.name, "wb") as out:
                shutil.copyfileobj(f, out)
