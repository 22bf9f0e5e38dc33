"""What the grader asks of its processes: typed on each side, plain JSON on the wire.

The chain is Grader -> :func:`~autograder.grading.isolation.supervise.supervise` ->
:class:`~autograder.grading.isolation.forkserver.Zygote` -> fork -> ``run(config)`` of the
target module. The grader builds a :class:`ChildRequest` or a
:class:`VerifierRequest`; :meth:`to_wire` gives the JSON object the sandbox
passes on (it adds ``nonce``, ``fd`` and ``cwd``); the target reads it back
with ``from_wire``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Literal

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
        "--grading", "-q", *(arg for name in unused for arg in ("-p", f"no:{name}")),
        "--assert=plain", "--import-mode=importlib", "--rootdir", course_root, "-c", f"{course_root}/pytest.ini",
        *(["--grading-seed", str(seed)] if seed is not None else []),
    ]


# A verifier's verdict is Status.PASSED, Status.FAILED, or UNVERIFIABLE: the check cannot be
# replayed from plain data (a claimed pass stands, except in a module judged on the trusted side only).
UNVERIFIABLE = "unverifiable"


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
    fd: int = -1  # set by the sandbox: the event channel
    nonce: str = ""  # set by the sandbox: carried by every event

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> "ChildRequest":
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

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict) -> "VerifierRequest":
        return cls(**_known(cls, data))
