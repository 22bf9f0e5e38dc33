"""Processes the grader starts die with it, even when it is killed with SIGKILL.

Two independent mechanisms, both set up by the started process itself:

- :func:`die_with_parent`: Linux's ``PR_SET_PDEATHSIG`` (through ``prctl``)
  sends a signal to the process when the thread that started it ends; a
  process whose parent is already gone exits at once.
- :func:`watch`: a *lifeline* pipe. The grader keeps the only write end and
  never writes; every process it starts (and every process those fork)
  holds the read end. When the grader is gone, reading returns end-of-file,
  and a watcher thread ends the process's whole process group.

Neither can stop a submission that deliberately escapes (a double fork into a
new session): that needs an operating-system sandbox (cgroups, containers).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

from autograder.grading.isolation.janitor import wait_for_end

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None, sig: int = signal.SIGKILL) -> None:
    """Get ``sig`` when the parent ends; exit now if ``parent`` (its pid) is no longer our parent."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def end_group() -> None:
    """SIGKILL this process's whole process group (the process itself included)."""
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:
        os._exit(1)


def watch(fd: int | None, on_loss: Callable[[], None] = end_group) -> None:
    """Call ``on_loss`` (in a daemon thread) when the lifeline pipe ``fd`` reaches end-of-file."""
    if fd is None:
        return

    def wait() -> None:
        while wait_for_end(fd):  # (the grader never writes)
            pass
        on_loss()

    threading.Thread(target=wait, name="autograder-lifeline", daemon=True).start()


class Lifeline:
    """The grader's end: a pipe whose read end every started process inherits (``fd``)."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe()  # neither is inherited by an exec'd child unless passed

    def close(self) -> None:
        for fd in (self.fd, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
