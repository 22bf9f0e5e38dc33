"""Control groups: one per student (memory and process count limited, killed at the student's end).

Runs in the grader's process, as root. :func:`grader_group` makes the grader's group below its own (v1
``memory`` and ``pids``, or the v2 unified hierarchy); :class:`Group` limits, lists, kills and removes one.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from autograder.grading.isolation.janitor import group_pids, kill_groups, remove_group, write_quietly
from autograder.grading.isolation.limits import alive

CGROUP_ROOT = Path("/sys/fs/cgroup")


class Group:
    """One control group, in every hierarchy the grader uses (v1: ``memory`` and ``pids``; v2: the unified one)."""

    def __init__(self, version: int, paths: dict[str, Path]):
        self.version = version
        self.paths = paths  # controller ("memory", "pids"; "unified" for v2) -> folder

    def child(self, name: str) -> Group:
        paths = {c: p / name for c, p in self.paths.items()}
        for path in paths.values():
            path.mkdir(exist_ok=True)
        if self.version == 2:
            write_quietly(next(iter(paths.values())) / "cgroup.subtree_control", "+memory +pids")
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
            write_quietly(
                self._file("memory", "memory.memsw.limit_in_bytes", "memory.swap.max"),
                size if self.version == 1 else "0",
            )
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
        return group_pids(self.paths.values())

    def kill(self) -> None:
        """SIGKILL every process in the group and below (a fork bomb included): nothing outlives it."""
        kill_groups(list(self.paths.values()), unified=self.version == 2)

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
            remove_group(path)


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
            if pid.isdigit() and not alive(int(pid)) and old.is_dir():
                Group(version, {controller: old}).remove()
    name = f"autograder-{os.getpid()}-{secrets.token_hex(4)}"
    made: dict[str, Path] = {}
    try:
        for controller, path in paths.items():
            made[controller] = path / name
            made[controller].mkdir()
        if version == 2:
            write_quietly(paths["unified"] / "cgroup.subtree_control", "+memory +pids")
            (made["unified"] / "cgroup.subtree_control").write_text("+memory +pids")
        group = Group(version, made)
        probe = group.child("probe")  # a limit must be settable, or the group limits nothing
        probe.limit(memory_mb=64, pids=8)
        probe.remove()
        return group
    except OSError:
        for path in made.values():
            remove_group(path)
        return None
