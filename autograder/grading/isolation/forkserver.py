"""The grader's side of a zygote: ask it to fork a grading child, and watch that child.

Runs in the grader's process (the zygote itself is :mod:`autograder.grading.isolation.zygote`). A
:class:`Zygote` is started once per student, imports the libraries, and forks every grading process of that
student; in a box each child stops itself until it is moved into a control group of its own.
"""

from __future__ import annotations

import json
import os
import select
import signal
import threading
import time
from pathlib import Path

from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.cgroups import Group
from autograder.grading.isolation.limits import POLL, Interrupted, MemoryLimitTooLow, RunAs, check
from autograder.grading.isolation.processes import SANDBOXED_PID, kill_group, release, run_python


def _state(pid: int) -> bytes:
    """A process's state letter (``R``, ``S``, ``T``, ``Z``...), b"" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return b""


def wait_stopped(pid: int, timeout: float = 30.0) -> bool:
    """Wait until ``pid`` has stopped itself (SIGSTOP), so it can be moved into its group before it runs on."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state in (b"T", b"t"):
            return True
        time.sleep(0.002)
    return False


class Zygote:
    """One pre-imported process per worker that forks the grading children (:mod:`autograder.grading.isolation.zygote`).

    Constructing one starts the process and returns at once; :meth:`start` (or :meth:`wait_ready`) waits
    until it has imported the libraries.
    """

    def __init__(
        self,
        kit: Path,
        cwd: Path,
        env: dict[str, str],
        memory_mb: int | None,
        lifeline: int | None = None,
        stop: threading.Event | None = None,
        run_as: RunAs | None = None,
        box: Box | None = None,
        libraries: list[str] | None = None,
    ):
        """``libraries``: what it imports before it forks (:func:`autograder.grading.isolation.zygote.preload`)."""
        import socket

        self.stop = stop
        self.box = box
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # One request and its reply at a time: the workers grading one student's modules share its zygote.
        self._io = threading.RLock()
        self._starting = threading.Lock()
        self.memory_mb = memory_mb
        self.leaf = leaf = box.leaf("zygote") if box is not None else None
        try:
            self.proc = run_python(
                "autograder.grading.isolation.zygote",
                kit,
                cwd,
                {"sock": theirs.fileno(), "libraries": libraries},
                memory_mb=memory_mb,
                env=env,
                # never in a folder the student may write to: the grader opens it by name
                stderr_path=(box.private if box is not None else cwd) / "zygote-stderr.txt",
                pass_fds=(theirs.fileno(),),
                lifeline=lifeline,
                run_as=run_as,
                box=box,
                leaf=leaf,
            )
        finally:
            theirs.close()
        if box is not None:
            box.zygote = self
        self.exits: dict[int, int] = {}
        self._ready = False
        self._pid: int | None = None  # the zygote interpreter's pid on the host (found on first use)

    def wait_ready(self) -> None:
        """Wait until the zygote has imported everything (a few seconds after it was started; at once after
        that), so a grader can start several and plan while they import."""
        with self._starting:  # the workers grading one student's modules share its zygote: one waits, all see it
            self._wait_ready()

    def _wait_ready(self) -> None:
        if self._ready:
            return
        deadline = time.monotonic() + 300
        message = None
        while message is None and time.monotonic() < deadline and self.alive():
            if self.stop is not None and self.stop.is_set():
                self.close()
                raise Interrupted()
            message = self._receive(timeout=POLL)
        if not message or not message.get("ready"):
            out_of_memory = self.leaf is not None and self.leaf.oom_kills() > 0
            self.close()
            if out_of_memory:
                raise MemoryLimitTooLow(
                    f"the memory limit of {self.memory_mb} MB per grading process (grade --memory, memory_limit_mb in "
                    "course.toml) is too low for the grader itself: the process that imports the libraries before "
                    "any student code runs was killed by it; raise it"
                )
            raise RuntimeError("the grading zygote did not start")
        self._ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _stopped(self) -> bool:
        """Whether the zygote's interpreter is stopped (SIGSTOP from a student's process it forked): it will not
        answer, and waiting for it would only cost time."""
        pid = self._pid
        if pid is None:
            pid = self._pid = self.box.host_pid(SANDBOXED_PID, timeout=0.5) if self.box is not None else self.proc.pid
        return pid is not None and _state(pid) in (b"T", b"t")

    def _receive(self, timeout: float) -> dict | None:
        with self._io:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                return None
        if not data:
            return None
        try:  # a student's zygote is the student's: what it says is checked like any of its claims
            message = json.loads(data)
        except ValueError:
            return None
        if not isinstance(message, dict):
            return None
        if "exited" in message:
            self.exits[int(message["exited"])] = int(message["returncode"])
        return message

    def start(self, cwd: Path, cfg: dict, event_fd: int, stderr_path: Path, *extra_fds: int) -> ForkedHandle:
        """Fork a grading child. In a box, the child stops itself at once (``hold``) and is moved into a control
        group of its own (its memory limit) before it runs on. ``extra_fds`` (at most one: the module's handed
        checks) reach the child as ``cfg["checks_fd"]``; the zygote closes its copy once it forked."""
        import socket

        self.wait_ready()
        box = self.box
        hold = box is not None and box.group is not None
        with self._io:
            with open(stderr_path, "wb") as err:
                request = json.dumps(dict(cfg, cwd=str(cwd), hold=hold)).encode()
                socket.send_fds(self.sock, [request], [event_fd, err.fileno(), *extra_fds[:1]])
            deadline = time.monotonic() + 60
            inner = None
            stopped_since = None
            while time.monotonic() < deadline:
                check(self.stop)
                message = self._receive(timeout=POLL)
                if message is None and not self.alive():
                    break
                if message is None and self._stopped():
                    stopped_since = stopped_since or time.monotonic()
                    if time.monotonic() - stopped_since > 1.0:
                        raise RuntimeError("the grading zygote was stopped (SIGSTOP) and did not fork a child")
                    continue
                stopped_since = None
                if message and "pid" in message:
                    inner = int(message["pid"])
                    break
        if inner is None:
            raise RuntimeError("the grading zygote did not fork a child")
        if box is None:
            return ForkedHandle(inner, self)
        pid = box.host_pid(inner)
        if pid is None:
            raise RuntimeError("the grading zygote's child could not be found")
        leaf = None
        if hold:
            leaf = box.leaf(box.run_name())
            assert leaf is not None  # hold: the box has a group
            if not wait_stopped(pid):
                leaf.remove()
                raise RuntimeError("the grading zygote's child did not start")
            leaf.add(pid)
            os.kill(pid, signal.SIGCONT)
        return ForkedHandle(pid, self, inner, leaf)

    def close(self) -> None:
        self.sock.close()
        kill_group(self.proc)


class ForkedHandle:
    """A grading child forked by a :class:`Zygote` (which reaps it and reports its exit): ``pid`` is the host's,
    ``inner`` the zygote's (they differ in a sandbox's pid namespace); ``leaf`` its control group, when it has one."""

    def __init__(self, pid: int, zygote: Zygote, inner: int | None = None, leaf: Group | None = None):
        self.pid = pid
        self.inner = pid if inner is None else inner
        self.zygote = zygote
        self.leaf = leaf
        self.returncode: int | None = None
        self.out_of_memory = False
        self.peak_mb = 0.0

    def poll(self) -> int | None:
        if self.returncode is None:
            while self.inner not in self.zygote.exits and self.zygote._receive(timeout=0):
                pass
            self.returncode = self.zygote.exits.pop(self.inner, None)
            if self.returncode is None and not self.zygote.alive() and not os.path.exists(f"/proc/{self.pid}"):
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        if self.leaf is not None:  # the process and everything it started, however it detached
            self.leaf.kill()
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 30
        dead_since = None
        while self.poll() is None and time.monotonic() < deadline:
            if _state(self.pid) in (b"Z", b""):  # dead, and its zygote (stopped by the student?) does not say
                dead_since = dead_since or time.monotonic()
                if time.monotonic() - dead_since > 2:
                    self.returncode = -signal.SIGKILL
                    break
            time.sleep(0.01)
        release(self, self.leaf)
        self.leaf = None


def run_to_end(zygote: Zygote, cwd: Path, cfg: dict, stderr_path: Path, timeout: float) -> int | None:
    """Fork a (trusted) child of ``zygote`` for ``cfg`` and wait for it; its exit code, None after a timeout."""
    with open(os.devnull, "wb") as sink:
        handle = zygote.start(cwd, cfg, sink.fileno(), stderr_path)
    deadline = time.monotonic() + timeout
    while handle.poll() is None:
        if zygote.stop is not None and zygote.stop.is_set():
            handle.kill()
            raise Interrupted()
        if time.monotonic() > deadline:
            handle.kill()
            return None
        time.sleep(0.02)
    return handle.returncode
