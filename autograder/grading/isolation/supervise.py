"""Watching a grading process: its event channel read within caps, its time and memory held to the limits.

Runs in the grader's process. :func:`supervise` reads the child's event stream from a pipe opened by the
parent, ignores every line without the run's nonce, and kills the process group when one function's checks
(or one module's import) exceed the time limit, when its resident memory exceeds the limit, or when it floods
the channel. It returns the events and, if the run did not finish, a :class:`~.limits.Fault` saying where and
why.
"""

from __future__ import annotations

import os
import secrets
import selectors
import signal
import threading
import time
from pathlib import Path
from typing import NamedTuple

from autograder.grading.events import Begin, ChannelEvent, Done, ImportBegin
from autograder.grading.isolation import channel
from autograder.grading.isolation.limits import POLL, WALL_FACTOR, Fault, Limits, RunResult, check
from autograder.grading.isolation.processes import file_tail
from autograder.grading.wire import Event, FaultKind


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


class Running(NamedTuple):
    """What a grading process is in the middle of: a check (or a module's import), since when (wall-clock and CPU
    seconds)."""

    name: str
    wall: float
    cpu: float


class Watch:
    """What :func:`supervise` knows of a run as its events come: the check running, the module being imported,
    the time each function's finished checks used, whether it said it was done."""

    def __init__(self, pid: int, limits: Limits, function_of: dict[str, str]):
        self.pid, self.limits, self.function_of = pid, limits, function_of
        self.spent: dict[str, float] = {}  # CPU seconds per function, finished checks
        self.spent_wall: dict[str, float] = {}  # wall-clock seconds per function, finished checks
        self.current: Running | None = None  # the check running
        self.importing: Running | None = None  # the module being imported
        self.done = False

    def take(self, event: ChannelEvent) -> None:
        now = time.monotonic()
        if isinstance(event, Begin):
            self.current = Running(event.check, now, cpu_seconds(self.pid))
        elif event.kind == Event.END and self.current is not None:  # a malformed end ends it too
            fn = self.function_of.get(self.current.name, self.current.name)
            self.spent[fn] = self.spent.get(fn, 0.0) + cpu_seconds(self.pid) - self.current.cpu
            self.spent_wall[fn] = self.spent_wall.get(fn, 0.0) + now - self.current.wall
            self.current = None
        elif event.kind == Event.IMPORT_BEGIN:
            module = event.module if isinstance(event, ImportBegin) else str(None)
            self.importing = Running(module, now, cpu_seconds(self.pid))
        elif event.kind == Event.IMPORT_END:
            self.importing = None
        elif isinstance(event, Done):
            self.done = True

    def fault(self, kind: FaultKind, detail: str = "") -> Fault:
        """A fault of ``kind`` where the run is now (the check running, the module being imported)."""
        current, importing = self.current, self.importing
        return Fault(kind, current and current.name, importing and importing.name, detail)

    def over_time(self, started: float) -> Fault | None:
        """A fault when the import, the function being checked or the whole run went past its time."""
        now, limit = time.monotonic(), self.limits.timeout_per_function
        importing, current = self.importing, self.current
        if importing is not None and (
            cpu_seconds(self.pid) - importing.cpu > limit or now - importing.wall > WALL_FACTOR * limit
        ):
            return Fault(FaultKind.TIMEOUT, current and current.name, importing.name)
        if current is not None and importing is None:
            fn = self.function_of.get(current.name, current.name)
            cpu = self.spent.get(fn, 0.0) + cpu_seconds(self.pid) - current.cpu
            wall = self.spent_wall.get(fn, 0.0) + now - current.wall
            if cpu > limit or wall > WALL_FACTOR * limit:
                return Fault(FaultKind.TIMEOUT, current.name, None)
        if now - started > self.limits.total_timeout:
            return self.fault(FaultKind.STALLED)
        return None


def supervise(
    start,
    cwd: Path,
    cfg: dict,
    limits: Limits,
    function_of: dict[str, str],
    stop: threading.Event | None = None,
    stderr_path: Path | None = None,
    handed: bytes | None = None,
) -> RunResult:
    """Start the grading child with ``start(cwd, cfg, event_fd, stderr_path)`` and watch it (module docstring).

    ``stderr_path``: where its stderr goes (default: next to ``cwd``); it must be in a folder the child cannot
    write to, since the grader creates and reads it by name. ``handed``: the module's compiled checks
    (:meth:`~autograder.grading.isolation.scratch.Snapshot.hand_checks`), handed over in a descriptor of their own
    (``start(..., checks_fd)``, ``cfg["checks_fd"]``) that no path names. Raises :class:`Interrupted` (after killing
    the child) when ``stop`` is set."""
    nonce = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    cfg = dict(cfg, nonce=nonce)
    stderr_path = stderr_path if stderr_path is not None else cwd.parent / "stderr.txt"
    extra = () if handed is None else (handed_descriptor(handed),)
    try:
        cfg = dict(cfg, fd=write_end, **({"checks_fd": extra[0]} if extra else {}))
        proc = start(cwd, cfg, write_end, stderr_path, *extra)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
        for fd in extra:
            os.close(fd)
    result = RunResult()
    watch = Watch(proc.pid, limits, function_of)
    try:
        result.fault = _watch(proc, read_end, channel.EventDecoder(nonce), watch, result, stop)
    finally:
        os.close(read_end)
        proc.kill()
    check(stop)
    result.returncode = proc.returncode
    result.stderr_tail = file_tail(stderr_path)
    result.peak_mb = getattr(proc, "peak_mb", 0.0)
    if result.fault is None and not watch.done and getattr(proc, "out_of_memory", False):  # its cgroup's kill
        result.fault = watch.fault(FaultKind.MEMORY)
    if result.fault is None and not watch.done:
        result.fault = watch.fault(FaultKind.CRASH, _how_it_ended(result))
    return result


def _watch(
    proc, read_end: int, decoder: channel.EventDecoder, watch: Watch, result: RunResult, stop: threading.Event | None
) -> Fault | None:
    """Read ``proc``'s channel into ``result.events`` (hostile bytes: decoded within caps by ``decoder``) until it
    ends, or until a fault (returned: a flood, a time or memory limit; the caller kills it)."""
    started = time.monotonic()
    selector = selectors.DefaultSelector()
    selector.register(read_end, selectors.EVENT_READ)
    open_pipe = True
    try:
        while open_pipe:
            check(stop)
            for _key, _ in selector.select(timeout=POLL):
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    open_pipe = False
                    break
                for event in decoder.feed(chunk):
                    watch.take(event)
                    result.events.append(event)
            if decoder.flooded:
                return watch.fault(FaultKind.FLOOD)
            fault = watch.over_time(started)
            if fault is not None:
                return fault
            # Where a control group limits the process, the kernel measures (charged pages, not the zygote's
            # shared ones); elsewhere the supervisor watches its resident memory.
            memory_mb = watch.limits.memory_mb
            if memory_mb and getattr(proc, "leaf", None) is None and _rss_mb(proc.pid) > memory_mb:
                return watch.fault(FaultKind.MEMORY)
            if not open_pipe or proc.poll() is not None and not selector.select(timeout=0):
                return None
        return None
    finally:
        selector.close()


def handed_descriptor(data: bytes) -> int:
    """A descriptor holding ``data`` from its start, readable by whoever is handed it and named by no path (an
    anonymous memory file; elsewhere an unlinked temporary file of the grader's own)."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        fd = memfd_create("checks", os.MFD_CLOEXEC)
    else:  # pragma: no cover - not Linux
        import tempfile

        with tempfile.TemporaryFile() as file:
            fd = os.dup(file.fileno())
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _how_it_ended(result: RunResult) -> str:
    rc = result.returncode
    if rc is None:
        return "the process stopped reporting"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        if (
            "MemoryError" in result.stderr_tail
            or "RESOURCE_EXHAUSTED" in result.stderr_tail
            or "bad_alloc" in result.stderr_tail
        ):
            return f"it crashed with {name} after running out of memory"
        return f"it crashed the Python interpreter ({name})"
    return f"the process exited with code {rc} (sys.exit or os._exit, or a fatal error)"
