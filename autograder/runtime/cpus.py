"""How many CPUs this process may keep busy: the cores it may run on, cut to its control group's CPU quota.

A container given "1.5 CPUs" (Docker's ``--cpus``, a Gradescope or Kubernetes CPU limit) still sees every core of
its host in its affinity mask; the limit is a CFS quota in its control group (v2: ``cpu.max``; v1:
``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``). Work that only pays off on a spare core (running beside the
grading process, not after it) asks :func:`spare` first.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def usable(cgroup: Path = CGROUP) -> int:
    """Whole CPUs this process may keep busy at once (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    quota = quota_cpus(cgroup)
    return max(1, min(cores, int(quota)) if quota is not None else cores)


def spare(cgroup: Path = CGROUP) -> bool:
    """Whether a CPU is left for work beside the grading process: two usable at least, and the machine's load (its
    last minute's average of running processes, which a container shares with its host) leaves half of one idle
    beside the one the grading process takes. On a busy machine (another grade, a second CI worker) such work would
    only take the grading process's CPU."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not known: not spare
        return False
    cores = usable(cgroup)
    return cores >= 2 and cores - load >= 0.5


def quota_cpus(cgroup: Path = CGROUP) -> float | None:
    """The CPU quota of the control group mounted at ``cgroup``, in CPUs (None: no quota, or none readable)."""
    v2 = _read(cgroup / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        return _ratio(quota, period)
    return _ratio(_read(cgroup / "cpu" / "cpu.cfs_quota_us"), _read(cgroup / "cpu" / "cpu.cfs_period_us"))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None


def _ratio(quota: str | None, period: str | None) -> float | None:
    """``quota / period`` when both are positive numbers (``max`` or ``-1``: no quota)."""
    try:
        q, p = float(quota or ""), float(period or "")
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None
