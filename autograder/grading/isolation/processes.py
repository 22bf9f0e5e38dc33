"""Starting a grading process: a fresh ``python -I`` with the copied kit first on its path, limited.

Runs in the grader's process. :func:`run_python` starts ``module.main()`` in its own session with an
address-space limit, no core dumps, a file-size limit, stdout discarded and stderr kept in the scratch folder
(in a :class:`~autograder.grading.isolation.bubblewrap.Box` when given); :func:`start_direct` is
:func:`~autograder.grading.isolation.supervise.supervise`'s starter without a zygote.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from autograder.grading.isolation.bubblewrap import Box
from autograder.grading.isolation.cgroups import Group
from autograder.grading.isolation.limits import MAX_FILE_BYTES, POLL, Interrupted, RunAs, backstop_bytes
from autograder.runtime import devices

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); import {module} as m; m.main()"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=devices.with_quick_compile("--xla_cpu_multi_thread_eigen=false"),
        OMP_NUM_THREADS="1",
        TF_CPP_MIN_LOG_LEVEL="3",
        # no source locations in the programs a process lowers: the same program has the same bytes whatever folder
        # it was traced in (a sandbox's is new every run), so the trusted side's answers can be kept for it
        # (grading.preflight.confirmations); no check reads them
        JAX_TRACEBACK_IN_LOCATIONS_LIMIT="0",
    )
    env.update(devices.checked_env())  # the course's CPU backend; the XLA flags checked once (runtime.devices)
    env.update(extra or {})
    return env


def run_python(
    module: str,
    kit: Path,
    cwd: Path,
    cfg: dict,
    *,
    memory_mb: int | None,
    env: dict[str, str],
    stderr_path: Path,
    pass_fds: tuple[int, ...] = (),
    stdout=subprocess.DEVNULL,
    lifeline: int | None = None,
    run_as: RunAs | None = None,
    box: Box | None = None,
    leaf: Group | None = None,
) -> subprocess.Popen:
    """Start ``module.main()`` from the copied kit in a new session, with limits, config on stdin
    (as ``run_as`` when given; in ``box``, in ``leaf``'s control group, when given)."""
    # Inside a sandbox the parent is the sandbox's own init; bubblewrap dies with the grader (--die-with-parent).
    cfg = dict(cfg, parent=None if box is not None else os.getpid(), lifeline=lifeline)
    if lifeline is not None:
        pass_fds = (*pass_fds, lifeline)
    argv = [sys.executable, "-I", "-c", BOOT.format(module=module), str(kit)]
    if box is not None:
        argv, run_as = box.command(argv, leaf, cwd), None
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=err,
            cwd=cwd,
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,
            close_fds=True,
            **(run_as.popen_kwargs() if run_as else {}),
        )
    try:
        if box is not None:  # its limits are set before it starts (Box.command)
            pass
        elif memory_mb:
            limit = backstop_bytes(memory_mb)
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
        if box is None:
            resource.prlimit(proc.pid, resource.RLIMIT_CORE, (0, 0))
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    except (OSError, ValueError):  # the process may already be gone
        pass
    assert proc.stdin is not None  # stdin=PIPE
    try:
        proc.stdin.write(json.dumps(cfg).encode())
        proc.stdin.close()
    except OSError:
        pass
    return proc


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def wait_or_stop(proc: subprocess.Popen, timeout: float, stop: threading.Event | None) -> None:
    """Wait for ``proc`` up to ``timeout`` seconds (then kill its group); kill it and raise :class:`Interrupted` on stop."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if stop is not None and stop.is_set():
            kill_group(proc)
            raise Interrupted()
        if time.monotonic() > deadline:
            kill_group(proc)
            return
        try:
            proc.wait(timeout=POLL)
        except subprocess.TimeoutExpired:
            pass


class PopenHandle:
    """A grading child started directly (``python -I``), in its own control group ``leaf`` when given."""

    def __init__(self, proc: subprocess.Popen, leaf: Group | None = None, box: Box | None = None):
        self.proc = proc
        self.pid = proc.pid
        self.leaf = leaf
        self.returncode: int | None = None
        self.out_of_memory = False
        self.peak_mb = 0.0
        if box is not None and box.mode.sandbox == "bubblewrap":  # the interpreter, not bubblewrap (CPU time)
            self.pid = box.host_pid(SANDBOXED_PID, timeout=5.0) or proc.pid

    def poll(self) -> int | None:
        self.returncode = self.proc.poll()
        return self.returncode

    def kill(self) -> None:
        if self.leaf is not None:
            self.leaf.kill()
        kill_group(self.proc)
        self.returncode = self.proc.returncode
        release(self, self.leaf)
        self.leaf = None


# The pid of the command bubblewrap starts, inside its pid namespace (its own init is 1).
SANDBOXED_PID = 2


def release(handle, leaf: Group | None) -> None:
    """A process's group is done with: what the kernel says of its memory, then the group is removed."""
    if leaf is None:
        return
    handle.out_of_memory = leaf.oom_kills() > 0
    handle.peak_mb = leaf.peak_mb()
    leaf.remove()


def start_direct(
    module: str,
    kit: Path,
    env: dict[str, str],
    memory_mb: int | None,
    lifeline: int | None = None,
    run_as: RunAs | None = None,
    box: Box | None = None,
    libraries: list[str] | None = None,
):
    """A starter for :func:`supervise`: a fresh interpreter per run (no zygote), in ``box`` when given, importing
    ``libraries`` first (the zygote's list: :func:`autograder.grading.isolation.zygote.preload`)."""

    def start(cwd: Path, cfg: dict, event_fd: int, stderr_path: Path, *extra_fds: int) -> PopenHandle:
        leaf = box.leaf(box.run_name()) if box is not None else None
        proc = run_python(
            module,
            kit,
            cwd,
            dict(cfg, libraries=libraries),
            memory_mb=memory_mb,
            env=env,
            stderr_path=stderr_path,
            pass_fds=(event_fd, *extra_fds),  # the same numbers in the child (cfg names them)
            lifeline=lifeline,
            run_as=run_as,
            box=box,
            leaf=leaf,
        )
        return PopenHandle(proc, leaf, box)

    return start


def file_tail(path: Path, size: int = 4000) -> str:
    """The last ``size`` bytes of a file (a process's stderr), as text; "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
