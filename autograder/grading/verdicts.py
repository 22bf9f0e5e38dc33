"""What the grader makes of a grading process's run, check by check: the verdicts.

Runs in the grader's process, for :mod:`autograder.grading.pipeline`: a fault blamed on what it hit
(:func:`blame`), a broken sandbox (:func:`broken_box`), what the audit hook saw (:func:`reviewed`, :func:`withheld`),
a module that changed the grader (:func:`void_tampered`), a verdict of the trusted side (:func:`trusted_verdict`),
and messages made deterministic (:func:`clean_message`).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from autograder.core.course import Course
from autograder.core.failures import strip_ansi
from autograder.core.outcomes import CheckOutcome, StudentResult, score_functions
from autograder.core.status import Status
from autograder.grading.events import Review
from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.limits import Fault, RunResult
from autograder.grading.trusted.trusted_only import observed_in_the_students_process
from autograder.grading.wire import Claim, Event, FaultKind, PlannedCheck, Replay, Verdict


class CheckVerdict(NamedTuple):
    """A check's verdict as the grader holds it until it becomes a
    :class:`~autograder.core.outcomes.CheckOutcome` (a tuple: the grader makes thousands per class)."""

    status: Status
    message: str


Verdicts = dict[str, CheckVerdict]  # check id -> its verdict


def last_claim(run: RunResult) -> str | None:
    """The check of the claim a run's process wrote last before it ended on its own (``sys.exit``, ``os._exit``,
    a signal) while no check and no import was running: nothing of the reporter's runs there, but a student's
    code that wrote an ``end`` of its own and exited at once would leave its claim the last, in order."""
    fault = run.fault
    if fault is None or fault.kind != FaultKind.CRASH or fault.check is not None or fault.module is not None:
        return None
    last = next((e for e in reversed(run.events) if e.kind not in (Event.TAMPERED, Event.REVIEW)), None)
    return last.check if isinstance(last, Claim) else None


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
    return {check.id: CheckVerdict(Status.FAILED, message) for check in hit}


def quota_note(box: Box) -> str:
    return (
        f"\n(disk quota: your sandbox may hold at most {box.quota_mb} MB of files; your code wrote more, and the "
        "write that went past it failed)"
    )


def out_of_space(text: str) -> bool:
    return "No space left on device" in text or "Errno 28" in text or "Disk quota exceeded" in text


def broken_box(module: str, todo: list[PlannedCheck], err: BaseException | str) -> Verdicts:
    """The checks of ``module`` left when the student's code broke their sandbox twice (its zygote stopped, killed
    or wedged after their code ran in it, and again in a fresh one): each fails, saying why."""
    return {
        c.id: CheckVerdict(
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
        if isinstance(event, Review) and len(found) < MAX_REVIEW:
            found.append(f"{clean_message(event.what)[:MAX_REVIEW_CHARS]}, {module}.py:{event.line}")
    return found


def withheld(module: str, checks: list[PlannedCheck], verdicts: Verdicts, review: list[str]) -> Verdicts:
    """A module that needs review keeps what the trusted side confirms (its correctness checks and the checks
    decided there), and earns
    nothing from the checks witnessed in its own grading process: each of those fails, saying why."""
    shown = "; ".join(review[:3]) + (f"; and {len(review) - 3} more" if len(review) > 3 else "")
    changed: Verdicts = {}
    for check in checks:
        if check.confirmed or verdicts.get(check.id, CheckVerdict(Status.FAILED, "")).status != Status.PASSED:
            continue
        changed[check.id] = CheckVerdict(
            Status.FAILED,
            f"{check.qualname}: needs review: {shown}. This check is decided in your own grading process, and "
            "your code does what an answer that reaches into that process does, so it earns nothing until your "
            f"instructor has looked at {module}.py (values confirmed by the grader keep their points).",
        )
    return changed


def void_tampered(module: str, checks: list[PlannedCheck], what: list[str] | tuple[str, ...]) -> Verdicts:
    """A module that changed the grader earns nothing: every check of it fails, saying why."""
    shown = ", ".join(what[:3]) + (f" and {len(what) - 3} more" if len(what) > 3 else "")
    message = (
        f"tampering detected: importing or running {module}.py changed the grader's own code"
        + (f" ({shown})" if shown else "")
        + f"; none of {module}'s checks can be trusted, so this module earns nothing. "
        "Your module must not modify pytest, hypothesis, NumPy or the autograder."
    )
    return {check.id: CheckVerdict(Status.FAILED, message) for check in checks}


def trusted_verdict(check: str, qualname: str, verdict: Verdict) -> CheckVerdict:
    """A claimed pass of a module judged on the trusted side only: the verifier's verdict is the check's,
    its failure message (expected and got, the first failing input) the student's. A correctness check the
    verifier cannot replay earns nothing, unless it is one the README lists as observed in the student's
    process (:func:`autograder.grading.trusted.trusted_only.observed_in_the_students_process`)."""
    outcome, message = verdict.outcome, clean_message(verdict.message).strip()
    if outcome == Replay.PASSED or (outcome == Replay.UNVERIFIABLE and observed_in_the_students_process(check)):
        return CheckVerdict(Status.PASSED, "")
    if outcome == Replay.UNVERIFIABLE:
        return CheckVerdict(
            Status.ERROR, f"{qualname}: the grader could not judge this check from what your process recorded"
        )
    if verdict.missing:  # the student's process did not call the function on every input
        return unconfirmed(qualname, message)
    return CheckVerdict(Status.FAILED, message)


def unconfirmed(qualname: str, detail: str) -> CheckVerdict:
    """A pass the student's process claimed and the trusted side did not confirm (``detail``: its message)."""
    return CheckVerdict(
        Status.UNCONFIRMED,
        f"{qualname}: your process reported this check as passed, but the grader could not confirm it"
        + (f":\n{detail}" if detail else ""),
    )


def failed_result(course: Course, plan: list[PlannedCheck], student: str, message: str) -> StudentResult:
    """A student whose grading failed on the grader's side: every check an error saying so, nothing earned."""
    outcomes = [CheckOutcome(c.module, c.function, c.test, Status.ERROR, c.correctness, message) for c in plan]
    return StudentResult(student, score_functions(course, outcomes), outcomes)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def clean_message(message: str) -> str:
    """Deterministic text: no memory addresses, no ANSI colours, bounded length."""
    message = _ADDRESS.sub("0x…", strip_ansi(message))
    return message if len(message) <= 4000 else message[:4000] + "\n  … (message shortened)"
