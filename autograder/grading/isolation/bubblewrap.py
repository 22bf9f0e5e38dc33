"""bubblewrap: the sandbox of one student (namespaces, a uid, a control group, the only writable folder).

Runs in the grader's process. :func:`isolation` probes once what this machine allows; :class:`Box` wraps an
interpreter's command line so that it starts in the student's sandbox (``ENTER`` on the host: the control
groups and the last resource limits; ``DROP`` inside: the student's uid, no new privileges).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from autograder.grading.isolation.cgroups import Group, grader_group
from autograder.grading.isolation.janitor import detach_mounts
from autograder.grading.isolation.limits import MAX_FILE_BYTES, backstop_bytes, next_uid
from autograder.grading.isolation.scratch import limit_size

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


def _host_paths() -> list[str]:
    """What of the host a sandbox shows (read-only): the system's libraries and the Python environment."""
    paths = ["/usr"]
    # the interpreter's prefixes, and library folders a .pth file added (never another folder of sys.path)
    libraries = [
        p
        for p in sys.path
        if os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages") and os.path.isdir(p)
    ]
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *libraries):
        real = os.path.realpath(prefix)
        if not any(real == p or real.startswith(p + "/") for p in paths):
            paths.append(real)
    return paths


def bwrap_args(folder: Path, shared: Path | None, *, privileged: bool) -> list[str]:
    """bubblewrap's options: new namespaces, the host's system and Python read-only, ``shared`` read-only,
    ``folder`` (the student's) the only writable place, no host ``/proc``, dies with the grader."""
    args = [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
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
    quota: bool = False  # each student's folder is a size-limited file system of its own (a disk quota)

    def describe(self) -> str:
        what = {
            "bubblewrap": "bubblewrap sandbox (user, pid, ipc, network and mount namespaces"
            + ("; an unprivileged uid per student)" if self.privileged else "; the grader's own uid)"),
            "user": "an unprivileged uid per student, no bubblewrap",
            "none": "no sandbox (not root and no bubblewrap): students' processes run as the grader",
        }[self.sandbox]
        limits = (
            f"; cgroup v{self.cgroups} per student (resident memory, processes; killed at the student's end)"
            if self.cgroups
            else "; no cgroups (memory watched by the supervisor, address space limited)"
        )
        quota = "; a disk quota per student (a size-limited file system)" if self.quota else "; no disk quota"
        return what + limits + quota + (f" [{self.why}]" if self.why else "")


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
    quota = asked != "none" and _can_limit_size()
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
                    return Isolation("bubblewrap", cgroups, root, quota=quota)
                why = "bwrap could not start: " + done.stderr.decode("utf-8", "replace").strip()[-300:]
            except (OSError, subprocess.SubprocessError) as err:
                why = f"bwrap could not start: {err}"
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    sandbox = "user" if root and asked != "none" else "none"
    return Isolation(sandbox, cgroups, root, why, quota=quota and sandbox != "none")


def _can_limit_size() -> bool:
    """Whether this process may mount a size-limited file system on a folder (:func:`limit_size`)."""
    folder = Path(tempfile.mkdtemp(prefix="autograder-probe-"))
    try:
        if not limit_size(folder, 1):
            return False
        detach_mounts([folder])
        return True
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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


class Running(Protocol):
    """A started grading child, as :func:`~autograder.grading.isolation.supervise.supervise` watches it
    (:class:`~autograder.grading.isolation.processes.PopenHandle`, :class:`~autograder.grading.isolation.forkserver.ForkedHandle`)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...


class Resident(Protocol):
    """The long-lived process a box holds (the student's zygote, :mod:`.forkserver`; this module does not
    import it): the box kills it and its whole group when the student is done; the grader starts each
    grading child of the student with its :meth:`start` (:meth:`GradingPool.starter <autograder.grading.pool.GradingPool.starter>`)."""

    proc: subprocess.Popen

    def start(self, cwd: Path, cfg: dict, event_fd: int, stderr_path: Path) -> Running: ...

    def close(self) -> None: ...


class Box:
    """One student's sandbox: a folder, a uid, a control group, and the zygote that forks every grading process of
    that student (none is shared with another student).

    The folder itself stays the grader's (root's, read-only to the student), so that no name in it can be
    replaced by the student: the student writes only in the folders the grader made in it and handed over
    (``home``: ``HOME`` and JAX's compilation cache; ``tmp``; ``.shm``, its ``/dev/shm``; each run's folder).
    ``private`` is a sibling the student's processes never see (root's, 0700): the files the grader opens by
    name (each process's stderr) live there. ``disk_mb``: the folder is a file system of that size (the
    student's disk quota), where the grader could mount one (:attr:`quota_mb`: the size, None without one).

    :meth:`command` wraps an interpreter's command line so that it starts in the box; :meth:`close` kills every
    process of the group (a double-forked one included) and removes the group."""

    def __init__(
        self,
        mode: Isolation,
        folder: Path,
        shared: Path | None,
        group: Group | None,
        uid: int | None,
        gid: int | None,
        memory_mb: int | None,
        private: Path | None = None,
        disk_mb: int | None = None,
    ):
        self.mode = mode
        self.folder = folder
        self.shared = shared
        self.group = group
        self.uid = uid
        self.gid = gid if gid is not None else uid
        self.memory_mb = memory_mb
        self.private = private if private is not None else folder
        self.quota_mb = disk_mb if disk_mb and mode.quota and limit_size(folder, disk_mb) else None
        self.zygote: Resident | None = None  # set by the forkserver that starts it
        # set once a process that runs the student's code has started in this box: from then on a failure of the
        # box (its zygote stopped, killed or wedged) is the student's, never the grader's
        self.student_ran = False
        self.condemned = False  # replaced by a fresh box after the student broke it: what still runs here is void
        self._runs = 0
        self._lock = threading.Lock()
        os.chmod(folder, 0o755)  # the grader's; the student may enter it and use what it is given in it
        self.home = folder / "home"
        for made in (folder / ".shm", folder / "tmp", self.home):
            made.mkdir()
            self.give(made)

    @property
    def python(self) -> str:
        return _python() if self.mode.sandbox == "bubblewrap" else sys.executable

    def give(self, path: Path) -> None:
        """Hand ``path`` and everything in it to the box's uid (the grader keeps its own files).

        ``path`` must be a tree the grader made in a folder of its own: it is handed over from the bottom up,
        each folder after everything in it, so that no folder is the student's while the grader still walks
        it (a student could otherwise put a link where the walk goes next and have the grader hand over a host
        folder); links are never followed."""
        if self.uid is None or self.gid is None:  # the gid is None only with the uid
            return
        for root, _dirs, files in os.walk(path, topdown=False):  # a folder's sub-folders came before it
            for name in files:
                os.lchown(os.path.join(root, name), self.uid, self.gid)
            os.chmod(root, 0o700)
            os.lchown(root, self.uid, self.gid)

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
