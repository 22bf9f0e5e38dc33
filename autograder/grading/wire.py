"""Every message between the grader and its processes: typed on each side, plain JSON on the wire.

Both sides of each pipe import the type from here: the producer writes ``to_wire()`` (or ``to_event()``), the
consumer reads it back with ``from_wire`` (``from_event``), which, where the producer runs student code,
decodes hostile data (unknown values become what they always scored, never an exception).

- requests, grader -> process: :class:`ChildRequest` (the untrusted child), :class:`VerifierRequest` (the
  trusted verifier). The chain is the grader -> :func:`~autograder.grading.isolation.supervise.supervise` ->
  :class:`~autograder.grading.isolation.forkserver.Zygote` -> fork -> ``run(config)`` of the target module;
  the sandbox adds ``nonce``, ``fd`` and ``cwd``.
- events, child -> grader, one JSON object per line on the event channel (:class:`Event` names their kinds):
  ``begin``/``import_begin``/``import_end``/``done`` (read by the supervisor), :class:`Claim` (``end``: what
  the child says of one check) and ``tampered``; the grader reads them typed (:mod:`autograder.grading.events`).
- the plan, verifier -> grader: one :class:`PlannedCheck` per check of the selected modules.
- verdicts, verifier -> grader: one :class:`Verdict` per claimed pass (:class:`Replay`: passed, failed, or
  the check cannot be replayed from plain data).
- faults, supervisor -> grader: :class:`FaultKind`, why a run did not finish.

How one check's outcome reaches its ``grades.csv`` cell, changing form twice: the check raises (or passes) in
the child, whose pytest report becomes a :class:`Claim` on the wire (form 1: the only form that crosses the
boundary; the grader decodes it, and a fault the supervisor saw, a tampered module, or the trusted side's
:class:`Verdict` replaces the claim's status and message, still as a claim-shaped
:class:`~autograder.grading.verdicts.CheckVerdict`); the submission's pipeline then makes it the
:class:`~autograder.core.outcomes.CheckOutcome` every output reads (form 2), and the one scoring rule
(:func:`~autograder.core.outcomes.score_checks`) sums those into the function's points that fill the cell.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, Literal

from autograder.core.status import Status

# The processes' modules, named once (each has ``main()`` and ``run(config)``).
ZYGOTE = f"{__package__}.isolation.zygote"
CHILD = f"{__package__}.untrusted.child"
VERIFIER = f"{__package__}.trusted.verifier"


def pytest_args(course_root: str, seed: int | None = None) -> list[str]:
    """The pytest options every grading process runs the checks with (the course's own ``pytest.ini`` of
    the sandbox, the grading profile; with ``seed``, `grade --seed N`'s inputs, drawn alike by the
    child and the verifier). Off: pytest's cache, its heap walk at exit looking for exceptions
    in finalizers, assertion rewriting (the checks raise their own messages; without bytecode, as in
    the sandbox, it re-compiles every module it rewrites in every process), and the installed plugins
    the checks never use (xdist, anyio), which each process would import again, and pytest's faulthandler, whose
    dump of every thread's frames on a crash would push out of the kept stderr tail the line that says why (XLA's
    fatal line: autograder.grading.preflight)."""
    unused = ("cacheprovider", "unraisableexception", "xdist", "xdist.looponfail", "anyio", "faulthandler")
    return [
        "--grading",
        "-q",
        *(arg for name in unused for arg in ("-p", f"no:{name}")),
        "--assert=plain",
        "--import-mode=importlib",
        "--rootdir",
        course_root,
        "-c",
        f"{course_root}/pytest.ini",
        *(["--grading-seed", str(seed)] if seed is not None else []),
    ]


class FaultKind(StrEnum):
    """Why a grading process did not finish (:class:`~autograder.grading.isolation.limits.Fault`)."""

    TIMEOUT = "timeout"  # a function's checks (or a module's import) ran past the time limit
    MEMORY = "memory"  # past the memory limit (the supervisor's watch, or the control group's kill)
    CRASH = "crash"  # it ended without saying it was done (a signal, sys.exit, a fatal error)
    FLOOD = "flood"  # it wrote more into the event channel than the caps allow
    STALLED = "stalled"  # the whole run went past its total time


class Event(StrEnum):
    """The kinds of event a grading process writes on its channel (``{"event": kind, ...}``)."""

    BEGIN = "begin"  # check: a check starts
    END = "end"  # a :class:`Claim`
    IMPORT_BEGIN = "import_begin"  # module: the student's module is being imported
    IMPORT_END = "import_end"
    TAMPERED = "tampered"  # what: the grader's code the student's module changed
    REVIEW = "review"  # what, line: the audit hook saw the student's code reach into the process
    DONE = "done"  # the run ended as planned


# What a student's process may claim of a check; anything else it says is a failure.
CLAIMABLE = (Status.PASSED, Status.FAILED, Status.NOT_STARTED)


@dataclass(frozen=True)
class Claim:
    """What a grading process says of one check (an ``end`` event): hostile, never more than a claim.

    A pass is confirmed on the trusted side (:class:`Verdict`) where the check is a correctness check;
    ``transcript`` is what the student's function returned for which arguments (passes only)."""

    check: str
    outcome: Status
    message: str = ""
    transcript: dict | None = None
    kind: ClassVar[Event] = Event.END

    def to_event(self) -> dict:
        event: dict[str, Any] = {
            "event": str(Event.END),
            "check": self.check,
            "outcome": str(self.outcome),
            "message": self.message,
        }
        if self.transcript is not None:
            event["transcript"] = self.transcript
        return event

    @classmethod
    def from_event(cls, event: dict) -> Claim | None:
        """The claim an event makes, or None when it is no ``end`` event of a named check. An outcome that is
        not claimable is a failure (as a check the child ran no part of has always been); a message that is
        not text is none; a transcript only comes with a pass."""
        check = event.get("check")
        if event.get("event") != Event.END or not isinstance(check, str):
            return None
        outcome = event.get("outcome")
        status = Status(outcome) if outcome in CLAIMABLE else Status.FAILED
        message = text if isinstance(text := event.get("message"), str) else ""
        transcript = (
            event.get("transcript") if status == Status.PASSED and isinstance(event.get("transcript"), dict) else None
        )
        return cls(check, status, message, transcript)


@dataclass(frozen=True)
class PlannedCheck:
    """One check of the verifier's plan: its id (``str(CheckId)``, the key on the wire), the function it judges."""

    id: str  # "<module>::<test name>"
    module: str
    function: str
    correctness: bool
    # where its verdict is decided (autograder.pytest_plugin.decided): "values" or "program" (the trusted side
    # replays a claimed pass), "source" (the trusted side analyses the submission's source) or "observed" (the
    # grading process's verdict, tamper-evident)
    decided: str = "observed"
    # its module is judged on the trusted side only (autograder.grading.trusted.trusted_only): the
    # grading process holds no reference, and the verifier's verdict is the check's
    trusted_only: bool = False
    # it takes the reference: in a module judged on the trusted side only, its pass in the grading
    # process compared the student's function with itself, so only the verifier can decide it
    takes_reference: bool = True
    # its module's fixtures are answered from the givens the plan recorded (autograder.recording.givens)
    givens: bool = False
    # its verdict depends on the module's source too: decided from the source, alone or with the program (an
    # analysis of autograder.core.from_source); a plan without the flag: every source or program check
    analysed: bool = False

    @property
    def test(self) -> str:
        return self.id.partition("::")[2]

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.function}"

    def to_wire(self) -> dict:
        return {
            "check": self.id,
            "module": self.module,
            "function": self.function,
            "correctness": self.correctness,
            "decided": self.decided,
            "trusted_only": self.trusted_only,
            "takes_reference": self.takes_reference,
            "givens": self.givens,
            "analysed": self.analysed,
        }

    @classmethod
    def from_wire(cls, data: dict) -> PlannedCheck:
        return cls(
            data["check"],
            data["module"],
            data["function"],
            bool(data["correctness"]),
            _decided(data.get("decided"), bool(data["correctness"])),
            bool(data.get("trusted_only")),
            bool(data.get("takes_reference", True)),
            bool(data.get("givens")),
            bool(data.get("analysed", data.get("decided") in ("source", "program"))),
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "decided", _decided(self.decided, self.correctness))  # a correctness check: values

    @property
    def confirmed(self) -> bool:
        """The trusted side replays a claimed pass of this check (a correctness check, or one decided there)."""
        return self.correctness or self.decided != "observed"


def _decided(value: object, correctness: bool) -> str:
    if correctness:
        return "values"
    return str(value) if value in ("values", "program", "source") else "observed"


class Replay(StrEnum):
    """What the trusted side found replaying a claimed pass."""

    PASSED = "passed"
    FAILED = "failed"
    # the check cannot be replayed from plain data: a claimed pass earns nothing, unless the README lists the
    # check as observed in the student's process (autograder.grading.trusted.trusted_only)
    UNVERIFIABLE = "unverifiable"


UNVERIFIABLE = Replay.UNVERIFIABLE


def verdict_evidence(check: str, transcripts: dict, sources: dict | None, analysed: bool) -> str | None:
    """What the verifier's verdict on a replayed ``check`` depends on, within one setting and seed, as canonical JSON
    text: the transcript the student's process recorded for it (read as the verifier reads it: anything but a dict
    is an empty one) and, for a check decided from its module's source too (``analysed``), that source. The same
    text, the same verdict (``trusted.shared``, ``preflight.rehearsal``); None where it cannot be said (not plain
    data, or no source): the check is replayed."""
    calls = transcripts.get(check)
    evidence: dict[str, object] = {"transcript": calls if isinstance(calls, dict) else {}}
    if analysed:
        source = (sources or {}).get(check.partition("::")[0])
        if not isinstance(source, str):
            return None
        evidence["source"] = source
    try:
        return json.dumps(evidence, sort_keys=True, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError):
        return None


def answered_whole(verdicts: dict[str, Verdict], claims: list[str]) -> bool:
    """A verdict for every claim and no failure among them (confirmed, or found not replayable): an answer the
    grader may keep (a failure may be the machine's, and is asked again)."""
    return bool(claims) and all(
        check in verdicts and verdicts[check].outcome in (Replay.PASSED, Replay.UNVERIFIABLE) for check in claims
    )


@dataclass(frozen=True)
class Verdict:
    """The trusted side's answer to one claimed pass."""

    outcome: Replay
    message: str = ""
    missing: bool = False  # an input had no recorded answer: the student's process did not call the function on it

    def to_wire(self) -> dict:
        return {"outcome": str(self.outcome), "message": self.message, "missing": self.missing}

    @classmethod
    def from_wire(cls, data: dict) -> Verdict:
        """An unknown outcome is a failure (never a pass)."""
        outcome = data.get("outcome")
        replay = Replay(outcome) if outcome in tuple(Replay) else Replay.FAILED
        return cls(replay, str(data.get("message", "")), bool(data.get("missing")))


def _known(cls, data: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True)
class ChildRequest:
    """Grade ``modules`` of the files in ``submission`` with the checks of ``course_root`` (untrusted side)."""

    course_root: str
    submission: str
    modules: list[str]
    skip: list[str]  # check ids already judged by an earlier run
    kit: str
    target: str = CHILD
    record: bool = True  # record the transcripts of passed correctness checks
    seed: int | None = None  # `grade --seed N`: inputs drawn from N, not the published ones
    # the modules are judged on the trusted side: no reference here, the student's own answers stand in
    own_answers: bool = False
    # with own_answers: the folder of the givens the trusted side recorded (autograder.recording.givens)
    givens: str = ""
    # the student's own folder, the same for all of their processes: JAX's compilation cache and HOME
    own_folder: str = ""
    # this run's temporary folder (TMPDIR: tempfile, pytest's tmp_path), removed with its scratch folder
    tmp: str = ""
    # the check file whose compiled code is handed over in ``checks_fd`` (its place on disk holds a placeholder)
    handed_checks: str = ""
    fd: int = -1  # set by the sandbox: the event channel
    nonce: str = ""  # set by the sandbox: carried by every event
    checks_fd: int = -1  # set by the sandbox: the handed checks, read and closed before the student's code runs

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> ChildRequest:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class VerifierRequest:
    """``plan`` the course's checks, ``verify`` claimed passes from their transcripts, or ``serve`` verify
    requests one after another (trusted side)."""

    mode: Literal["plan", "verify", "serve"]
    course_root: str = ""
    modules: list[str] = field(default_factory=list)
    out: str = ""  # where the JSON answer is written
    kit: str = ""
    checks: list[str] = field(default_factory=list)  # the claimed check ids (verify)
    transcripts: dict = field(default_factory=dict)  # check id -> {argument digest: encoded output}
    transcripts_file: str = ""  # where the grader wrote ``transcripts`` (too large for the request itself)
    target: str = VERIFIER
    seed: int | None = None  # `grade --seed N`: regenerate the inputs the child drew from N
    # plan: record the givens of the modules judged here only into this folder; verify: answer those
    # modules' fixtures from it
    givens: str = ""
    # serve: share the reference's results between the students it verifies (grading.trusted.shared)
    share: bool = True
    # verify: module -> the text of the student's <module>.py as the grader read it (core.submission), what the
    # checks decided from the source are decided from (never imported here)
    sources: dict = field(default_factory=dict)

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> VerifierRequest:
        return cls(**_known(cls, data))
