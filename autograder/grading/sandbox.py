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

from autograder.runtime import devices
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


class MemoryLimitTooLow(RuntimeError):
    """A student's zygote, which runs no student code, could not start within the memory limit: the limit is too
    low for the grader itself, and no student can be graded under it."""


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
    peak_mb: float = 0.0  # the process's peak resident memory, where its control group says


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


# -- isolation: bubblewrap, a uid and a control group per student -------------------------------------------------

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Students' processes run as uids from here on (no passwd entry needed): one per student, never reused by a
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


# Runs as root on the host, first of every sandboxed command: enter the control groups named before "--",
# set the last resource limits (the address space only as a backstop: the memory limit is the cgroup's), exec.
ENTER = (
    "import os, sys, resource\n"
    "a = sys.argv; i = a.index('--')\n"
    "for p in a[1:i - 1]:\n"
    "    f = open(p, 'w'); f.write(str(os.getpid())); f.close()\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({MAX_FILE_BYTES}, {MAX_FILE_BYTES}))\n"
    "if int(a[i - 1]): resource.setrlimit(resource.RLIMIT_AS, (int(a[i - 1]), int(a[i - 1])))\n"
    "os.execv(a[i + 1], a[i + 1:])\n"
)
# Runs as the sandbox's (or the host's) root just before the student's interpreter: become the student's uid
# (every capability goes with it), no new privileges, optionally a user namespace of its own, exec.
DROP = (
    "import os, sys, ctypes\n"
    "u, g, userns = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == '1'\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "os.setgroups([]); os.setgid(g); os.setuid(u)\n"
    "libc.prctl(38, 1, 0, 0, 0)\n"  # PR_SET_NO_NEW_PRIVS
    "if userns:\n"
    "    libc.prctl(4, 1, 0, 0, 0)\n"  # PR_SET_DUMPABLE: its own /proc/self/uid_map is writable
    "    if libc.unshare(0x10000000) != 0: raise SystemExit('cannot create a user namespace')\n"
    "    for n, t in (('setgroups', 'deny'), ('uid_map', f'{u} {u} 1'), ('gid_map', f'{g} {g} 1')):\n"
    "        f = open('/proc/self/' + n, 'w'); f.write(t); f.close()\n"
    "os.chdir(sys.argv[4])\n"  # as the student: the grader's root may not enter a student's folder in a sandbox
    "os.execv(sys.argv[5], sys.argv[5:])\n"
)


class Group:
    """One control group, in every hierarchy the grader uses (v1: ``memory`` and ``pids``; v2: the unified one)."""

    def __init__(self, version: int, paths: dict[str, Path]):
        self.version = version
        self.paths = paths  # controller ("memory", "pids"; "unified" for v2) -> folder

    def child(self, name: str) -> "Group":
        paths = {c: p / name for c, p in self.paths.items()}
        for path in paths.values():
            path.mkdir(exist_ok=True)
        if self.version == 2:
            _write_quietly(next(iter(paths.values())) / "cgroup.subtree_control", "+memory +pids")
        return Group(self.version, paths)

    def _file(self, controller: str, v1: str, v2: str) -> Path:
        if self.version == 2:
            return self.paths["unified"] / v2
        return self.paths[controller] / v1

    def limit(self, memory_mb: int | None = None, pids: int | None = None) -> None:
        if memory_mb:
            size = str(memory_mb * 2**20)
            self._file("memory", "memory.limit_in_bytes", "memory.max").write_text(size)
            # no swapping past the limit (where swap is accounted)
            _write_quietly(self._file("memory", "memory.memsw.limit_in_bytes", "memory.swap.max"), size if self.version == 1 else "0")
        if pids:
            self._file("pids", "pids.max", "pids.max").write_text(str(pids))

    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths.values()]

    def add(self, pid: int) -> None:
        for path in self.procs_files():
            with open(path, "w") as f:
                f.write(str(pid))

    def pids(self) -> set[int]:
        """Every process in this group and the groups below it."""
        found: set[int] = set()
        for path in self.paths.values():
            for procs in path.rglob("cgroup.procs"):
                try:
                    found.update(int(p) for p in procs.read_text().split())
                except (OSError, ValueError):
                    pass
        return found

    def kill(self) -> None:
        """SIGKILL every process in the group and below (a fork bomb included): nothing outlives it."""
        if self.version == 2 and _write_quietly(self.paths["unified"] / "cgroup.kill", "1"):
            deadline = time.monotonic() + 10
            while self.pids() and time.monotonic() < deadline:
                time.sleep(0.01)
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pids = self.pids()
            if not pids:
                return
            for sig in (signal.SIGSTOP, signal.SIGKILL):  # stopped first, so none forks while the others die
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            time.sleep(0.005)

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed for exceeding its memory limit."""
        try:
            text = self._file("memory", "memory.oom_control", "memory.events").read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
        return 0

    def failed_allocations(self) -> int:
        """v1: how often the group hit its memory limit (an allocation that had to reclaim or failed)."""
        if self.version != 1:
            return self.oom_kills()
        try:
            return int(self._file("memory", "memory.failcnt", "").read_text())
        except (OSError, ValueError):
            return 0

    def peak_mb(self) -> float:
        """The group's peak resident memory (charged pages), in MB; 0 where the kernel does not say."""
        try:
            return int(self._file("memory", "memory.max_usage_in_bytes", "memory.peak").read_text()) / 2**20
        except (OSError, ValueError):
            return 0.0

    def remove(self) -> None:
        """Kill what is left, and remove the group and those below it."""
        self.kill()
        for path in self.paths.values():
            for sub in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                _rmdir(sub)
            _rmdir(path)


def _rmdir(path: Path) -> None:
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)  # a killed process leaves its group a moment later


def _write_quietly(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def _own_cgroups() -> tuple[int, dict[str, Path]] | None:
    """This process's control groups the grader can create groups under (it must be root): (version, paths)."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    entries = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            entries[controller] = path
    if all((CGROUP_ROOT / c / "cgroup.procs").exists() for c in ("memory", "pids")) and "memory" in entries:
        return 1, {c: CGROUP_ROOT / c / entries[c].lstrip("/") for c in ("memory", "pids")}
    if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in entries:
        return 2, {"unified": CGROUP_ROOT / entries[""].lstrip("/")}
    return None


def grader_group() -> Group | None:
    """A new group for this grader's students, below the grader's own (None where none can be made)."""
    own = _own_cgroups()
    if own is None:
        return None
    version, paths = own
    for controller, path in paths.items():  # the groups of graders that were killed (SIGKILL) before their end
        for old in path.glob("autograder-*-*"):
            pid = old.name.split("-")[1]
            if pid.isdigit() and not _alive(int(pid)) and old.is_dir():
                Group(version, {controller: old}).remove()
    name = f"autograder-{os.getpid()}-{secrets.token_hex(4)}"
    made: dict[str, Path] = {}
    try:
        for controller, path in paths.items():
            made[controller] = path / name
            made[controller].mkdir()
        if version == 2:
            _write_quietly(paths["unified"] / "cgroup.subtree_control", "+memory +pids")
            (made["unified"] / "cgroup.subtree_control").write_text("+memory +pids")
        group = Group(version, made)
        probe = group.child("probe")  # a limit must be settable, or the group limits nothing
        probe.limit(memory_mb=64, pids=8)
        probe.remove()
        return group
    except OSError:
        for path in made.values():
            _rmdir(path)
        return None


def _host_paths() -> list[str]:
    """What of the host a sandbox shows (read-only): the system's libraries and the Python environment."""
    paths = ["/usr"]
    # the interpreter's prefixes, and library folders a .pth file added (never another folder of sys.path)
    libraries = [p for p in sys.path if os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages") and os.path.isdir(p)]
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *libraries):
        real = os.path.realpath(prefix)
        if not any(real == p or real.startswith(p + "/") for p in paths):
            paths.append(real)
    return paths


def bwrap_args(folder: Path, shared: Path | None, *, privileged: bool) -> list[str]:
    """bubblewrap's options: new namespaces, the host's system and Python read-only, ``shared`` read-only,
    ``folder`` (the student's) the only writable place, no host ``/proc``, dies with the grader."""
    args = [
        "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session",
    ]
    if privileged:  # the namespaces are made as root; the uid is dropped (DROP) inside, with every capability
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user"]
    made = {"/"}
    bound = _host_paths()
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            bound.append(str(host))
    for extra in (str(shared) if shared else None, str(folder)):
        if extra:
            bound.append(extra)
    for path in bound:
        for parent in reversed(Path(path).parents):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        made.add(path)
        args += ["--bind" if path == str(folder) else "--ro-bind", path, path]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        args += ["--ro-bind-try", etc, etc]
    args += ["--proc", "/proc", "--dev", "/dev", "--bind", str(folder / ".shm"), "/dev/shm"]
    args += ["--remount-ro", "/"]
    return args


@dataclass(frozen=True)
class Isolation:
    """How students' processes are kept apart on this machine (said on ``grade``'s first line and in the fingerprint).

    ``sandbox``: "bubblewrap" (namespaces, a uid per student when root), "user" (a uid per student, where
    bubblewrap cannot start) or "none" (neither: not root, and no bubblewrap)."""

    sandbox: str
    cgroups: int | None  # 1 or 2: memory and process count limited per student, the group killed at its end
    privileged: bool
    why: str = ""

    def describe(self) -> str:
        what = {
            "bubblewrap": "bubblewrap sandbox (user, pid, ipc, network and mount namespaces"
            + ("; an unprivileged uid per student)" if self.privileged else "; the grader's own uid)"),
            "user": "an unprivileged uid per student, no bubblewrap",
            "none": "no sandbox (not root and no bubblewrap): students' processes run as the grader",
        }[self.sandbox]
        limits = (
            f"; cgroup v{self.cgroups} per student (resident memory, processes; killed at the student's end)"
            if self.cgroups else "; no cgroups (memory watched by the supervisor, address space limited)"
        )
        return what + limits + (f" [{self.why}]" if self.why else "")


_ISOLATION: Isolation | None = None


def isolation() -> Isolation:
    """What this machine allows, probed once per process (``AUTOGRADER_ISOLATION=user|none`` asks for less)."""
    global _ISOLATION
    if _ISOLATION is None:
        _ISOLATION = _probe()
    return _ISOLATION


def _probe() -> Isolation:
    asked = os.environ.get("AUTOGRADER_ISOLATION", "")
    root = os.geteuid() == 0
    group = grader_group()
    cgroups = group.version if group else None
    if group:
        group.remove()
    why = ""
    if asked not in ("user", "none"):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            why = "bwrap is not installed"
        else:
            folder = Path(tempfile.mkdtemp(prefix="autograder-probe-"))
            try:
                (folder / ".shm").mkdir()
                uid = next_uid() if root else None
                if uid is not None:
                    os.chown(folder, uid, uid)
                    os.chown(folder / ".shm", uid, uid)
                argv = _sandboxed(
                    [_python(), "-I", "-S", "-c", "import os; os.listdir('.')"], folder, None, root, uid, uid, folder
                )
                done = subprocess.run(argv, capture_output=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
                if done.returncode == 0:
                    return Isolation("bubblewrap", cgroups, root)
                why = "bwrap could not start: " + done.stderr.decode("utf-8", "replace").strip()[-300:]
            except (OSError, subprocess.SubprocessError) as err:
                why = f"bwrap could not start: {err}"
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    return Isolation("user" if root and asked != "none" else "none", cgroups, root, why)


def _python() -> str:
    """The interpreter inside a sandbox: the environment's own, by its real path (links leave the sandbox)."""
    return os.path.join(os.path.realpath(sys.prefix), "bin", os.path.basename(sys.executable))


def _sandboxed(
    argv: list[str], folder: Path, shared: Path | None, privileged: bool, uid: int | None, gid: int | None, cwd: Path
) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    if privileged:
        inner = [argv[0], "-I", "-S", "-c", DROP, str(uid), str(gid), "1", str(cwd), *argv]
        return [bwrap, *bwrap_args(folder, shared, privileged=True), "--", *inner]
    return [bwrap, *bwrap_args(folder, shared, privileged=False), "--chdir", str(cwd), "--", *argv]


class Box:
    """One student's sandbox: a folder (the only writable place), a uid, a control group, and the zygote that
    forks every grading process of that student (none is shared with another student).

    :meth:`command` wraps an interpreter's command line so that it starts in the box; :meth:`close` kills every
    process of the group (a double-forked one included) and removes the group."""

    def __init__(self, mode: Isolation, folder: Path, shared: Path | None, group: Group | None, uid: int | None,
                 gid: int | None, memory_mb: int | None):
        self.mode = mode
        self.folder = folder
        self.shared = shared
        self.group = group
        self.uid = uid
        self.gid = gid if gid is not None else uid
        self.memory_mb = memory_mb
        self.zygote: "Zygote | None" = None
        self._runs = 0
        self._lock = threading.Lock()
        (folder / ".shm").mkdir(exist_ok=True)
        (folder / "tmp").mkdir(exist_ok=True)
        self.give(folder)

    @property
    def python(self) -> str:
        return _python() if self.mode.sandbox == "bubblewrap" else sys.executable

    def give(self, path: Path) -> None:
        """Hand ``path`` and everything in it to the box's uid (the grader keeps its own files)."""
        if self.uid is None:
            return
        for root, dirs, files in os.walk(path):
            for name in (root, *(os.path.join(root, n) for n in dirs + files)):
                os.lchown(name, self.uid, self.gid)
            os.chmod(root, 0o700)

    def leaf(self, name: str) -> Group | None:
        """A group of its own for one process of the box (its memory limit is the process's)."""
        if self.group is None:
            return None
        leaf = self.group.child(name)
        leaf.limit(memory_mb=self.memory_mb)
        return leaf

    def run_name(self) -> str:
        with self._lock:
            self._runs += 1
            return f"run-{self._runs}"

    def command(self, argv: list[str], leaf: Group | None, cwd: Path) -> list[str]:
        """``argv`` (an interpreter's command line) started in the box in ``cwd``, in ``leaf``'s control group."""
        backstop = backstop_bytes(self.memory_mb) if self.memory_mb else 0
        privileged = self.mode.privileged
        if self.mode.sandbox == "bubblewrap":
            inner = _sandboxed([self.python, *argv[1:]], self.folder, self.shared, privileged, self.uid, self.gid, cwd)
        elif self.uid is not None:
            inner = [sys.executable, "-I", "-S", "-c", DROP, str(self.uid), str(self.gid), "0", str(cwd), *argv]
        else:
            inner = argv
        procs = leaf.procs_files() if leaf is not None else []
        return [sys.executable, "-I", "-S", "-c", ENTER, *procs, str(backstop), "--", *inner]

    def host_pid(self, inner: int, timeout: float = 10.0) -> int | None:
        """The host's pid of the box's process ``inner`` (its pid inside the sandbox's pid namespace)."""
        if self.mode.sandbox != "bubblewrap":
            return inner
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in self.group.pids() if self.group else _descendants(self.zygote.proc.pid if self.zygote else 0):
                try:
                    with open(f"/proc/{pid}/status", "rb") as status:
                        for line in status:
                            if line.startswith(b"NSpid:"):
                                ids = line.split()[1:]
                                if len(ids) > 1 and int(ids[-1]) == inner:
                                    return pid
                except (OSError, ValueError):
                    continue
            time.sleep(0.005)
        return None

    def close(self) -> None:
        """End every process of the box (nothing outlives the student) and remove its group."""
        if self.zygote is not None:
            self.zygote.close()
        if self.group is not None:
            self.group.remove()


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (from /proc), for a box without a control group."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


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
    box: "Box | None" = None,
    leaf: "Group | None" = None,
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
    """A grading child started directly (``python -I``), in its own control group ``leaf`` when given."""

    def __init__(self, proc: subprocess.Popen, leaf: "Group | None" = None, box: "Box | None" = None):
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
        _release(self, self.leaf)
        self.leaf = None


# The pid of the command bubblewrap starts, inside its pid namespace (its own init is 1).
SANDBOXED_PID = 2


def _release(handle, leaf: "Group | None") -> None:
    """A process's group is done with: what the kernel says of its memory, then the group is removed."""
    if leaf is None:
        return
    handle.out_of_memory = leaf.oom_kills() > 0
    handle.peak_mb = leaf.peak_mb()
    leaf.remove()


def start_direct(
    module: str, kit: Path, env: dict[str, str], memory_mb: int | None, lifeline: int | None = None,
    run_as: RunAs | None = None, box: Box | None = None,
):
    """A starter for :func:`supervise`: a fresh interpreter per run (no zygote), in ``box`` when given."""

    def start(cwd: Path, cfg: dict, event_fd: int, stderr_path: Path) -> PopenHandle:
        leaf = box.leaf(box.run_name()) if box is not None else None
        proc = run_python(
            module, kit, cwd, cfg, memory_mb=memory_mb, env=env, stderr_path=stderr_path, pass_fds=(event_fd,),
            lifeline=lifeline, run_as=run_as, box=box, leaf=leaf,
        )
        return PopenHandle(proc, leaf, box)

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
            # Where a control group limits the process, the kernel measures (charged pages, not the zygote's
            # shared ones); elsewhere the supervisor watches its resident memory.
            if limits.memory_mb and getattr(proc, "leaf", None) is None and _rss_mb(proc.pid) > limits.memory_mb:
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
    result.peak_mb = getattr(proc, "peak_mb", 0.0)
    if result.fault is None and not done and getattr(proc, "out_of_memory", False):  # killed by its cgroup's limit
        result.fault = Fault("memory", current and current[0], importing and importing[0])
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
        box: Box | None = None,
    ):
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
                "autograder.grading.zygote", kit, cwd, {"sock": theirs.fileno()}, memory_mb=memory_mb, env=env,
                stderr_path=cwd / "zygote-stderr.txt", pass_fds=(theirs.fileno(),), lifeline=lifeline, run_as=run_as,
                box=box, leaf=leaf,
            )
        finally:
            theirs.close()
        if box is not None:
            box.zygote = self
        self.exits: dict[int, int] = {}
        self._ready = False

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

    def start(self, cwd: Path, cfg: dict, event_fd: int, stderr_path: Path) -> "ForkedHandle":
        """Fork a grading child. In a box, the child stops itself at once (``hold``) and is moved into a control
        group of its own (its memory limit) before it runs on."""
        import socket

        self.wait_ready()
        box = self.box
        hold = box is not None and box.group is not None
        with self._io:
            with open(stderr_path, "wb") as err:
                request = json.dumps(dict(cfg, cwd=str(cwd), hold=hold)).encode()
                socket.send_fds(self.sock, [request], [event_fd, err.fileno()])
            deadline = time.monotonic() + 60
            inner = None
            while time.monotonic() < deadline:
                check(self.stop)
                message = self._receive(timeout=POLL)
                if message is None and not self.alive():
                    break
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
        _release(self, self.leaf)
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
