"""The janitor: a process of the grader's own that removes what a killed grader leaves behind.

A grader killed with SIGKILL (the kernel's out-of-memory killer, a cluster that takes its worker back, ``kill -9``)
cannot clean up. It leaves its control groups, and its scratch folders: copies of the course, the references among
them, and the students' size-limited file systems. The grader's pool starts a janitor (:meth:`Janitor.start`) that
waits on a pipe whose only write end the grader holds:

- the pool closes normally: the grader writes a byte and closes the pipe; the janitor has nothing to do and exits,
  touching nothing (the pool removed everything already);
- the grader is killed: the kernel closes the pipe with nothing written. The janitor kills every process still in
  the grader's control groups, removes the groups, detaches every file system mounted in the grader's scratch
  folders, and removes those folders: seconds after the kill, not when the next grader happens to start (which
  still removes whatever a killed janitor could not: ``cgroups.grader_group``, ``scratch.remove_abandoned_scratch``).

It runs by path with ``python -I -S``, the standard library only, so that it starts in milliseconds and imports
nothing of the kit; it starts a session of its own, so that a signal to the grader's process group does not end it.
``cgroups.Group`` uses its :func:`kill_groups` and :func:`remove_group`.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

_MNT_DETACH = 2
KILL_WAIT = 10.0  # seconds for the processes of a group to end
RMDIR_WAIT = 10.0  # seconds for a group to become removable once its processes ended


def group_pids(groups: Iterable[Path]) -> set[int]:
    """Every process in these control groups and the groups below them."""
    found: set[int] = set()
    for group in groups:
        for procs in group.rglob("cgroup.procs"):
            try:
                found.update(int(p) for p in procs.read_text().split())
            except (OSError, ValueError):
                pass
    return found


def kill_groups(groups: Sequence[Path], unified: bool) -> None:
    """SIGKILL every process in ``groups`` and below (a fork bomb included): nothing outlives it. ``unified``: the
    cgroup v2 hierarchy (one folder; its ``cgroup.kill`` kills the whole tree at once)."""
    deadline = time.monotonic() + KILL_WAIT
    if unified and groups and write_quietly(groups[0] / "cgroup.kill", "1"):
        while group_pids(groups) and time.monotonic() < deadline:
            time.sleep(0.01)
        return
    while time.monotonic() < deadline:
        pids = group_pids(groups)
        if not pids:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):  # stopped first, so none forks while the others die
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.005)


def remove_group(group: Path) -> None:
    """Remove a control group whose processes ended, and the groups below it (the deepest first)."""
    try:
        below = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    except OSError:
        below = []
    for folder in [*below, group]:
        deadline = time.monotonic() + RMDIR_WAIT
        while True:
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)  # a killed process leaves its group a moment later


def write_quietly(path: Path, text: str) -> bool:
    """Write ``text`` to a control group's file; whether it was written (False, not an error, where it cannot be)."""
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def _mount_points_below(folders: Sequence[Path]) -> list[str]:
    """The mount points at or below ``folders`` (this process's mount namespace), the deepest first."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    roots = [os.path.realpath(f) for f in folders]  # as the kernel writes them: no link in the path
    points = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # a space is \040
            if any(point == r or point.startswith(r + "/") for r in roots):
                points.append(point)
    return sorted(points, key=lambda p: -p.count("/"))


def detach_mounts(folders: Sequence[Path]) -> None:
    """Detach every file system mounted at or below ``folders`` (a student's size-limited one)."""
    points = _mount_points_below(folders)
    if points:
        libc = ctypes.CDLL(None, use_errno=True)
        for point in points:
            libc.umount2(point.encode(), _MNT_DETACH)


def remove_folders(folders: Sequence[Path]) -> None:
    """Remove ``folders``, first detaching what is mounted in them (nothing is removed through a mount)."""
    detach_mounts(folders)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def remove_scratch(prefix: str) -> None:
    """Remove every folder whose path starts with ``prefix`` (a grader's scratch folders)."""
    parent, _, start = prefix.rpartition("/")
    try:
        folders = [p for p in Path(parent).iterdir() if p.name.startswith(start) and not p.is_symlink() and p.is_dir()]
    except OSError:
        return
    remove_folders(folders)


def sweep(groups: Sequence[Path], unified: bool, scratch_prefix: str) -> None:
    """What a killed grader left: its groups' processes killed and the groups removed, its scratch folders removed."""
    if groups:
        kill_groups(groups, unified)
        for group in groups:
            remove_group(group)
    if scratch_prefix:
        remove_scratch(scratch_prefix)


def wait_for_end(fd: int) -> bytes:
    """Return when the pipe ``fd`` reaches end-of-file (every write end closed: the writer gone) or a byte: the
    byte, or b"" at the end."""
    while True:
        try:
            return os.read(fd, 1)
        except InterruptedError:
            continue
        except OSError:
            return b""


class Janitor:
    """The grader's end: the pipe's write end and the janitor's process."""

    def __init__(self, write: int, process: subprocess.Popen | None):
        self._write, self.process = write, process

    @classmethod
    def start(cls, groups: Sequence[Path], unified: bool, scratch_prefix: str) -> Janitor:
        """A janitor for ``groups`` (the grader's control group, one folder per hierarchy) and the folders named
        ``scratch_prefix…`` (the grader's scratch folders). Where no process can be started, the grader goes on
        without one (the next grader removes what a kill leaves)."""
        read, write = os.pipe()  # neither inherited by what the grader starts, unless passed
        args = [str(read), "1" if unified else "0", scratch_prefix, *map(str, groups)]
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", __file__, *args],
                pass_fds=(read,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
            )
        except OSError:
            process = None
        os.close(read)
        return cls(write, process)

    def close(self) -> None:
        """The grader's pool closed normally (it says so with a byte before the end): the janitor exits, touching
        nothing."""
        if self._write >= 0:
            try:
                os.write(self._write, b"\n")
            except OSError:  # no janitor reads it (none started, or it was killed)
                pass
            os.close(self._write)
            self._write = -1
        if self.process is not None:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None


def main(argv: Sequence[str]) -> None:
    read, unified, scratch_prefix, *groups = argv
    if wait_for_end(int(read)):
        return  # the pool closed normally, and removed what it made
    sweep([Path(g) for g in groups], unified == "1", scratch_prefix)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main(sys.argv[1:])
    os._exit(0)  # nothing to flush: no interpreter teardown for the pool's close() to wait on
