"""Isolation: one scratch folder and one limited, supervised process per grading run.

- :class:`Snapshot` reads the instructor's files (``course.toml``, checks,
  ``conftest.py``, references, the ``autograder`` package) into memory once,
  when grading starts. Every process gets a fresh private copy in its scratch
  folder, so a submission that writes into "the grader's folders" changes
  only its own, discarded copy, and nothing a later run reads.
- :func:`run_python` starts ``python -I`` (no ``PYTHONPATH``, no user site,
  no current folder on ``sys.path``) with the copied kit first on the path, in
  its own session, with an address-space limit, no core dumps, a file-size
  limit, stdout discarded and stderr kept in the scratch folder.
- :func:`supervise` reads the child's event stream from a pipe opened by the
  parent, ignores every line without the run's nonce, and kills the process
  group when one function's checks (or one module's import) exceed the time
  limit, when its resident memory exceeds the limit, or when it floods the
  channel. It returns the events and, if the run did not finish, a
  :class:`Fault` saying where and why.
- :func:`scratch_dir` names each folder after the grader's process, and
  :func:`remove_abandoned_scratch` (called when a grader starts) removes the
  folders of graders that were killed before they could clean up.
- :class:`RunAs` (``grade --run-as USER``, run as root): untrusted processes
  start as that unprivileged user, and only their own scratch folders are
  handed to it; the trusted side stays with the caller.
- Every wait polls a *stop* event (set when ``grade`` is interrupted): the
  process is killed and :class:`Interrupted` raised within a fraction of a
  second. Every started process holds the grader's lifeline
  (:mod:`autograder.grading.lifeline`), so none outlives a killed grader.
"""

from __future__ import annotations

import json
import os
import pwd
import resource
import secrets
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import devices
from autograder.grading import channel

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); import {module} as m; m.main()"
MAX_FILE_BYTES = 1 * 2**30
# A function's checks may use ``timeout_per_function`` seconds of CPU time, and
# at most this many times as much wall-clock time (waiting, sleeping, or a
# machine so busy that the process is not scheduled is not the student's fault).
WALL_FACTOR = 3
POLL = 0.1  # seconds between checks of the stop event


class Interrupted(Exception):
    """Grading was stopped (Ctrl-C, SIGTERM) while this process ran; it was killed."""


def check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted()


@dataclass
class Snapshot:
    """The instructor's files, read once: ``{relative path: bytes}`` for the course and the kit."""

    course: dict[str, bytes]
    kit: dict[str, bytes]

    @classmethod
    def take(cls, course_root: Path) -> "Snapshot":
        course_root = Path(course_root)
        course: dict[str, bytes] = {"course.toml": (course_root / "course.toml").read_bytes()}
        for pattern in ("conftest.py", "exercises/*.py", "solutions/*.py"):
            for path in sorted(course_root.glob(pattern)):
                course[path.relative_to(course_root).as_posix()] = path.read_bytes()
        course["pytest.ini"] = b"[pytest]\n"
        kit_root = Path(__file__).resolve().parents[1]
        kit = {
            f"autograder/{p.relative_to(kit_root).as_posix()}": p.read_bytes() for p in sorted(kit_root.rglob("*.py"))
        }
        return cls(course, kit)

    def materialize(self, scratch: Path, *, solutions: bool = True) -> tuple[Path, Path]:
        """Write the private copy into ``scratch``; returns (course root, kit folder)."""
        for rel, data in self.course.items():
            if not solutions and rel.startswith("solutions/"):
                continue
            _write(scratch / "course" / rel, data)
        for rel, data in self.kit.items():
            _write(scratch / "kit" / rel, data)
        return scratch / "course", scratch / "kit"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


SCRATCH_PREFIX = "autograder-"


def _pid_namespace() -> int | None:
    """This process's pid namespace (Linux), or None where it cannot be known."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def scratch_dir() -> Path:
    """A new private folder in the temporary folder, named after the process that made it
    (``autograder-<pid>x<pid namespace>-…``, see :func:`remove_abandoned_scratch`)."""
    namespace = _pid_namespace()
    owner = f"{os.getpid()}x{namespace}-" if namespace is not None else ""
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX + owner))


def remove_abandoned_scratch() -> list[Path]:
    """Remove the scratch folders of graders that are gone; returns them.

    A grader killed with SIGKILL (or a machine that lost power) cannot clean up: its folders stay,
    among them copies of the course with the references. The next grader that starts with the
    same temporary folder removes every folder named after a process of its own pid namespace
    that no longer exists (a live one, or one of another namespace, is left alone)."""
    namespace = _pid_namespace()
    if namespace is None:
        return []
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*x*-*"):
        pid, _, rest = path.name[len(SCRATCH_PREFIX):].partition("x")
        if not pid.isdigit() or rest.split("-", 1)[0] != str(namespace) or _alive(int(pid)):
            continue
        try:
            if not path.is_dir() or path.is_symlink() or (path.lstat().st_uid != os.getuid() and os.getuid() != 0):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
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
    kind: str  # "timeout", "memory", "crash", "flood", "stalled"
    check: str | None  # the check running when it happened
    module: str | None  # the module being imported when it happened
    detail: str = ""


@dataclass
class RunResult:
    events: list[dict] = field(default_factory=list)
    fault: Fault | None = None
    returncode: int | None = None
    stderr_tail: str = ""


@dataclass(frozen=True)
class RunAs:
    """An unprivileged user that untrusted processes run as (the caller must be root)."""

    name: str
    uid: int
    gid: int

    @classmethod
    def lookup(cls, name: str) -> "RunAs":
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


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=devices.with_quick_compile("--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"),
        OMP_NUM_THREADS="1",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    env.update(devices.checked_env())  # the course's CPU backend; the XLA flags checked once (core.devices)
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
) -> subprocess.Popen:
    """Start ``module.main()`` from the copied kit in a new session, with limits, config on stdin
    (as ``run_as`` when given)."""
    cfg = dict(cfg, parent=os.getpid(), lifeline=lifeline)
    if lifeline is not None:
        pass_fds = (*pass_fds, lifeline)
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", BOOT.format(module=module), str(kit)],
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
        if memory_mb:
            limit = memory_mb * 2**20
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
        resource.prlimit(proc.pid, resource.RLIMIT_CORE, (0, 0))
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    except (OSError, ValueError):  # the process may already be gone
        pass
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


class PopenHandle:
    """A grading child started directly (``python -I``)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.pid = proc.pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        self.returncode = self.proc.poll()
        return self.returncode

    def kill(self) -> None:
        kill_group(self.proc)
        self.returncode = self.proc.returncode


def start_direct(
    module: str, kit: Path, env: dict[str, str], memory_mb: int | None, lifeline: int | None = None,
    run_as: RunAs | None = None,
):
    """A starter for :func:`supervise`: a fresh interpreter per run (no zygote)."""

    def start(cwd: Path, cfg: dict, event_fd: int, stderr_path: Path) -> PopenHandle:
        return PopenHandle(
            run_python(
                module, kit, cwd, cfg, memory_mb=memory_mb, env=env, stderr_path=stderr_path, pass_fds=(event_fd,),
                lifeline=lifeline, run_as=run_as,
            )
        )

    return start


def supervise(
    start, cwd: Path, cfg: dict, limits: Limits, function_of: dict[str, str], stop: threading.Event | None = None
) -> RunResult:
    """Start the grading child with ``start(cwd, cfg, event_fd, stderr_path)`` and watch it (module docstring).

    Raises :class:`Interrupted` (after killing the child) when ``stop`` is set."""
    nonce = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    cfg = dict(cfg, nonce=nonce)
    stderr_path = cwd.parent / "stderr.txt"
    try:
        proc = start(cwd, dict(cfg, fd=write_end), write_end, stderr_path)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    result = RunResult()
    selector = selectors.DefaultSelector()
    selector.register(read_end, selectors.EVENT_READ)
    decoder = channel.EventDecoder(nonce)  # hostile bytes: decoded within caps (autograder.grading.channel)
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
                    if kind == "begin" and isinstance(event.get("check"), str):
                        current = (event["check"], now, cpu_seconds(proc.pid))
                    elif kind == "end" and current is not None:
                        fn = function_of.get(current[0], current[0])
                        spent[fn] = spent.get(fn, 0.0) + cpu_seconds(proc.pid) - current[2]
                        spent_wall[fn] = spent_wall.get(fn, 0.0) + now - current[1]
                        current = None
                    elif kind == "import_begin":
                        importing = (str(event.get("module")), now, cpu_seconds(proc.pid))
                    elif kind == "import_end":
                        importing = None
                    elif kind == "done":
                        done = True
                    result.events.append(event)
            if decoder.flooded:
                result.fault = Fault("flood", current and current[0], importing and importing[0])
                break
            now = time.monotonic()
            if importing is not None and (
                cpu_seconds(proc.pid) - importing[2] > limits.timeout_per_function
                or now - importing[1] > WALL_FACTOR * limits.timeout_per_function
            ):
                result.fault = Fault("timeout", current and current[0], importing[0])
                break
            if current is not None and importing is None:
                fn = function_of.get(current[0], current[0])
                cpu = spent.get(fn, 0.0) + cpu_seconds(proc.pid) - current[2]
                wall = spent_wall.get(fn, 0.0) + now - current[1]
                if cpu > limits.timeout_per_function or wall > WALL_FACTOR * limits.timeout_per_function:
                    result.fault = Fault("timeout", current[0], None)
                    break
            if now - started > limits.total_timeout:
                result.fault = Fault("stalled", current and current[0], importing and importing[0])
                break
            if limits.memory_mb and _rss_mb(proc.pid) > limits.memory_mb:
                result.fault = Fault("memory", current and current[0], importing and importing[0])
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
    if result.fault is None and not done:
        result.fault = Fault("crash", current and current[0], importing and importing[0], _how_it_ended(result))
    return result


def file_tail(path: Path, size: int = 4000) -> str:
    """The last ``size`` bytes of a file (a process's stderr), as text; "" when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _how_it_ended(result: RunResult) -> str:
    rc = result.returncode
    if rc is None:
        return "the process stopped reporting"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        if "MemoryError" in result.stderr_tail or "RESOURCE_EXHAUSTED" in result.stderr_tail or "bad_alloc" in result.stderr_tail:
            return f"it crashed with {name} after running out of memory"
        return f"it crashed the Python interpreter ({name})"
    return f"the process exited with code {rc} (sys.exit or os._exit, or a fatal error)"


class Zygote:
    """One pre-imported process per worker that forks the grading children (:mod:`autograder.grading.zygote`).

    Constructing one starts the process and returns at once; :meth:`start` (or :meth:`wait_ready`) waits
    until it has imported the libraries.
    """

    def __init__(
        self, kit: Path, cwd: Path, env: dict[str, str], memory_mb: int | None,
        lifeline: int | None = None, stop: threading.Event | None = None, run_as: RunAs | None = None,
    ):
        import socket

        self.stop = stop
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = run_python(
                "autograder.grading.zygote", kit, cwd, {"sock": theirs.fileno()}, memory_mb=memory_mb, env=env,
                stderr_path=cwd / "zygote-stderr.txt", pass_fds=(theirs.fileno(),), lifeline=lifeline, run_as=run_as,
            )
        finally:
            theirs.close()
        self.exits: dict[int, int] = {}
        self._ready = False

    def wait_ready(self) -> None:
        """Wait until the zygote has imported everything (a few seconds after it was started; at once after
        that), so a grader can start several and plan while they import."""
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
            self.close()
            raise RuntimeError("the grading zygote did not start")
        self._ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _receive(self, timeout: float) -> dict | None:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return None
        try:
            data = self.sock.recv(1 << 16)
        except OSError:
            return None
        if not data:
            return None
        message = json.loads(data)
        if "exited" in message:
            self.exits[int(message["exited"])] = int(message["returncode"])
        return message

    def start(self, cwd: Path, cfg: dict, event_fd: int, stderr_path: Path) -> "ForkedHandle":
        import socket

        self.wait_ready()
        with open(stderr_path, "wb") as err:
            request = json.dumps(dict(cfg, cwd=str(cwd))).encode()
            socket.send_fds(self.sock, [request], [event_fd, err.fileno()])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            check(self.stop)
            message = self._receive(timeout=POLL)
            if message is None and not self.alive():
                break
            if message and "pid" in message:
                return ForkedHandle(int(message["pid"]), self)
        raise RuntimeError("the grading zygote did not fork a child")

    def close(self) -> None:
        self.sock.close()
        kill_group(self.proc)


class ForkedHandle:
    """A grading child forked by a :class:`Zygote` (which reaps it and reports its exit)."""

    def __init__(self, pid: int, zygote: Zygote):
        self.pid = pid
        self.zygote = zygote
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            while self.pid not in self.zygote.exits and self.zygote._receive(timeout=0):
                pass
            self.returncode = self.zygote.exits.pop(self.pid, None)
            if self.returncode is None and not self.zygote.alive() and not os.path.exists(f"/proc/{self.pid}"):
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 30
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)


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
