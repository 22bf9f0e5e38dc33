"""The CPUs a process may keep busy (autograder.runtime.cpus): its cores, cut to its control group's quota."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.runtime import cpus

CORES = len(os.sched_getaffinity(0))


def v2(root: Path, text: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "cpu.max").write_text(text + "\n")
    return root


def v1(root: Path, quota: str, period: str = "100000") -> Path:
    (root / "cpu").mkdir(parents=True, exist_ok=True)
    (root / "cpu" / "cpu.cfs_quota_us").write_text(quota + "\n")
    (root / "cpu" / "cpu.cfs_period_us").write_text(period + "\n")
    return root


@pytest.mark.parametrize(
    ("make", "quota"),
    [
        (lambda root: v2(root, "max 100000"), None),
        (lambda root: v2(root, "150000 100000"), 1.5),
        (lambda root: v2(root, "50000 100000"), 0.5),
        (lambda root: v1(root, "-1"), None),
        (lambda root: v1(root, "200000"), 2.0),
        (lambda root: v1(root, "100000", "0"), None),
        (lambda root: v1(root, "not a number"), None),
        (lambda root: root, None),  # nothing mounted
    ],
)
def test_the_quota_is_read_from_either_version(tmp_path, make, quota):
    assert cpus.quota_cpus(make(tmp_path / "cgroup")) == quota


def test_a_quota_cuts_the_cores_to_whole_cpus_and_never_below_one(tmp_path):
    assert cpus.usable(tmp_path / "none") == CORES
    assert cpus.usable(v2(tmp_path / "a", "max 100000")) == CORES
    assert cpus.usable(v2(tmp_path / "b", "150000 100000")) == 1  # 1.5 CPUs: no second one to spare
    assert cpus.usable(v2(tmp_path / "c", "50000 100000")) == 1
    assert cpus.usable(v2(tmp_path / "d", f"{100000 * (CORES + 4)} 100000")) == CORES  # a quota above the cores


def test_a_cpu_is_spare_only_when_the_load_leaves_one_idle(tmp_path, monkeypatch):
    two = v2(tmp_path / "two", "200000 100000")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert cpus.spare(two) is (CORES >= 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 0.0, 0.0))  # the last command's grading process
    assert cpus.spare(two) is (CORES >= 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.8, 0.0, 0.0))  # both busy (another grade, a second CI worker)
    assert cpus.spare(two) is False
    assert cpus.spare(v2(tmp_path / "one", "100000 100000")) is False  # one CPU: none spare, whatever the load

    def unknown():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", unknown)
    assert cpus.spare(two) is False
