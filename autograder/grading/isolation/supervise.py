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
    selector = selectors.DefaultSelector()
    selector.register(read_end, selectors.EVENT_READ)
    decoder = channel.EventDecoder(nonce)  # hostile bytes: decoded within caps (autograder.grading.isolation.channel)
    started = time.monotonic()
    spent: dict[str, float] = {}  # CPU seconds per function, finished checks
    spent_wall: dict[str, float] = {}  # wall-clock seconds per function, finished checks
    current: tuple[str, float, float] | None = None  # (check, since (wall), since (CPU))
    importing: tuple[str, float, float] | None = None  # (module, since (wall), since (CPU))
    done = False
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
                    kind = event.get("event")
                    now = time.monotonic()
                    if kind == Event.BEGIN and isinstance(event.get("check"), str):
                        current = (event["check"], now, cpu_seconds(proc.pid))
                    elif kind == Event.END and current is not None:
                        fn = function_of.get(current[0], current[0])
                        spent[fn] = spent.get(fn, 0.0) + cpu_seconds(proc.pid) - current[2]
                        spent_wall[fn] = spent_wall.get(fn, 0.0) + now - current[1]
                        current = None
                    elif kind == Event.IMPORT_BEGIN:
                        importing = (str(event.get("module")), now, cpu_seconds(proc.pid))
                    elif kind == Event.IMPORT_END:
                        importing = None
                    elif kind == Event.DONE:
                        done = True
                    result.events.append(event)
            if decoder.flooded:
                result.fault = Fault(FaultKind.FLOOD, current and current[0], importing and importing[0])
                break
            now = time.monotonic()
            if importing is not None and (
                cpu_seconds(proc.pid) - importing[2] > limits.timeout_per_function
                or now - importing[1] > WALL_FACTOR * limits.timeout_per_function
            ):
                result.fault = Fault(FaultKind.TIMEOUT, current and current[0], importing[0])
                break
            if current is not None and importing is None:
                fn = function_of.get(current[0], current[0])
                cpu = spent.get(fn, 0.0) + cpu_seconds(proc.pid) - current[2]
                wall = spent_wall.get(fn, 0.0) + now - current[1]
                if cpu > limits.timeout_per_function or wall > WALL_FACTOR * limits.timeout_per_function:
                    result.fault = Fault(FaultKind.TIMEOUT, current[0], None)
                    break
            if now - started > limits.total_timeout:
                result.fault = Fault(FaultKind.STALLED, current and current[0], importing and importing[0])
                break
            # Where a control group limits the process, the kernel measures (charged pages, not the zygote's
            # shared ones); elsewhere the supervisor watches its resident memory.
            if limits.memory_mb and getattr(proc, "leaf", None) is None and _rss_mb(proc.pid) > limits.memory_mb:
                result.fault = Fault(FaultKind.MEMORY, current and current[0], importing and importing[0])
                break
            if not open_pipe or proc.poll() is not None and not selector.select(timeout=0):
                break
    finally:
        selector.close()
        os.close(read_end)
        proc.kill()
    check(stop)
    result.returncode = proc.returncode
    result.stderr_tail = file_tail(stderr_path)
    result.peak_mb = getattr(proc, "peak_mb", 0.0)
    if result.fault is None and not done and getattr(proc, "out_of_memory", False):  # killed by its cgroup's limit
        result.fault = Fault(FaultKind.MEMORY, current and current[0], importing and importing[0])
    if result.fault is None and not done:
        result.fault = Fault(FaultKind.CRASH, current and current[0], importing and importing[0], _how_it_ended(result))
    return result


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
