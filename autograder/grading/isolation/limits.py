"""What a grading process may use, and how a run that did not finish is described.

Runs in the grader's process. :class:`Limits` (time per function, memory, the run's total), the run's
:class:`Fault` and :class:`RunResult`, :class:`RunAs` (``grade --run-as USER``), the per-student uids, and
:func:`check`, which every wait calls with the run's stop event (:class:`Interrupted` within a fraction of a
second of Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import os
import pwd
import threading
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.events import ChannelEvent
from autograder.grading.wire import FaultKind

MAX_FILE_BYTES = 1 * 2**30
# A function's checks may use ``timeout_per_function`` seconds of CPU time, and
# at most this many times as much wall-clock time (waiting, sleeping, or a
# machine so busy that the process is not scheduled is not the student's fault).
WALL_FACTOR = 3
POLL = 0.1  # seconds between checks of the stop event


class Interrupted(Exception):
    """Grading was stopped (Ctrl-C, SIGTERM) while this process ran; it was killed."""


class MemoryLimitTooLow(RuntimeError):
    """A student's zygote, which runs no student code, could not start within the memory limit: the limit is too
    low for the grader itself, and no student can be graded under it."""


def check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


@dataclass
class Limits:
    timeout_per_function: float
    memory_mb: int
    total_timeout: float


@dataclass
class Fault:
    kind: FaultKind
    check: str | None  # the check running when it happened
    module: str | None  # the module being imported when it happened
    detail: str = ""


@dataclass
class RunResult:
    """What :func:`~autograder.grading.isolation.supervise.supervise` found of one grading process: its events
    (typed by the channel's decoder, hostile in what they say), its fault, how it ended."""

    events: list[ChannelEvent] = field(default_factory=list)
    fault: Fault | None = None
    returncode: int | None = None
    stderr_tail: str = ""
    peak_mb: float = 0.0  # the process's peak resident memory, where its control group says


@dataclass(frozen=True)
class RunAs:
    """An unprivileged user that untrusted processes run as (the caller must be root)."""

    name: str
    uid: int
    gid: int

    @classmethod
    def lookup(cls, name: str) -> RunAs:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise ValueError(f"there is no user {name!r} on this machine") from None
        if entry.pw_uid == 0:
            raise ValueError(f"{name!r} is root; --run-as needs an unprivileged user")
        if os.geteuid() != 0:
            raise ValueError("--run-as needs the grader to run as root (it starts processes as another user)")
        return cls(name, entry.pw_uid, entry.pw_gid)

    def give(self, folder: Path) -> None:
        """Hand ``folder`` and everything in it to this user."""
        for root, dirs, files in os.walk(folder):
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                os.lchown(name, self.uid, self.gid)

    def popen_kwargs(self) -> dict:
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


# -- isolation: bubblewrap, a uid and a control group per student -------------------------------------------------

# later student of the same run, never a uid that owns anything on the machine.
UID_BASE = 1_700_000_000
PIDS_PER_STUDENT = 2048  # processes and threads (JAX starts a thread pool per device) of one student at a time
_uids = iter(range(UID_BASE, UID_BASE + 10**8))
_uid_lock = threading.Lock()


def backstop_bytes(memory_mb: int) -> int:
    """The address-space limit of a grading process: only a backstop, far above the memory limit (JAX reserves
    address space in proportion to the machine's cores; 4 GiB aborts it on 16 cores while 0.2 GB is resident)."""
    return max(16 * memory_mb, 32 * 1024) * 2**20


def next_uid() -> int:
    """A fresh unprivileged uid for one student (unique within this grader; offset by the grader's pid so that
    two graders running side by side do not share one)."""
    with _uid_lock:
        return next(_uids) + (os.getpid() % 1000) * 100_000
