"""``autograder grade --cluster``: a real Dask ``LocalCluster`` of worker processes.

A small fixture class (a correct, a wrong, a crashing and an empty submission
of ``at_updates``) is graded locally with ``--jobs 2`` and on a cluster of two
single-threaded worker processes; the outputs must be the same bytes. Then
the only worker of a cluster is SIGKILLed while it grades a submission: the
scheduler reruns the task on the worker its nanny starts, which computes the
course snapshot again, and the class's outputs are still the same bytes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_fixtures import build_class
from support import ROOT
from test_grade_command import MODULE, TIMEOUT, copy_course, run_grade

STUDENTS = ["correct", "wrong_values", "faults_b", "empty"]
OUTPUTS = [*(f"{s}/results.json" for s in STUDENTS), "grades.csv", "summary.md"]  # a student's messages first


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None) as local_cluster:
        yield local_cluster


@pytest.fixture(scope="module")
def small_class(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cluster")
    course = copy_course(base / "course")
    build_class(base / "everyone", MODULE, out=base / "out", course=course)
    for student in STUDENTS:
        shutil.copytree(base / "everyone" / student, base / "class" / student)
    return base / "class", course


@pytest.fixture(scope="module")
def local_out(small_class, tmp_path_factory) -> Path:
    submissions, course = small_class
    out = tmp_path_factory.mktemp("local") / "out"
    started = time.monotonic()
    run_grade(submissions, out, course, "--jobs", "2")
    _rate("local --jobs 2", time.monotonic() - started)
    return out


def _rate(what: str, seconds: float) -> None:
    print(
        f"\n{what}: {len(STUDENTS)} submissions in {seconds:.0f} s = {len(STUDENTS) * 3600 / seconds:.0f} submissions/hour"
    )


def assert_same_outputs(one: Path, two: Path) -> None:
    for name in OUTPUTS:
        first, second = (one / name).read_text(encoding="utf-8"), (two / name).read_text(encoding="utf-8")
        assert first == second, f"{name} differs:\n{first}\n---\n{second}"


def test_cluster_outputs_are_byte_identical_to_a_local_run(cluster, small_class, local_out, tmp_path):
    submissions, course = small_class
    started = time.monotonic()
    run_grade(submissions, tmp_path / "out", course, "--cluster", cluster.scheduler_address)
    _rate("LocalCluster, 2 workers x 1 thread", time.monotonic() - started)
    assert_same_outputs(local_out, tmp_path / "out")


def _kill_a_worker_mid_submission(cluster, grading: subprocess.Popen) -> str:
    """SIGKILL the worker process that has been grading a submission for a few seconds; the task's key."""
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        since: dict[tuple[str, str], float] = {}
        while grading.poll() is None:
            now = time.monotonic()
            for worker, keys in client.processing().items():
                for key in keys:
                    if str(key).startswith("grade_task-"):
                        started = since.setdefault((worker, str(key)), now)
                        if now - started > 5:
                            pid = client.run(os.getpid, workers=[worker])[worker]
                            os.kill(pid, signal.SIGKILL)
                            return str(key)
            time.sleep(0.5)
    raise AssertionError("grading ended before a worker could be killed mid-submission")


@pytest.fixture
def lone_worker():
    """A cluster of one worker: killed, it takes every copy of what it held with it (the nanny starts a new one)."""
    from distributed import LocalCluster

    with LocalCluster(processes=True, n_workers=1, threads_per_worker=1, dashboard_address=None) as local_cluster:
        yield local_cluster


def test_a_worker_killed_mid_submission_costs_a_retry_not_a_row(lone_worker, small_class, local_out, tmp_path):
    """The killed worker held the only copy of the course snapshot: it is computed again, not lost."""
    cluster = lone_worker
    submissions, course = small_class
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(submissions),
        "--out",
        str(tmp_path / "out"),
        "--only",
        MODULE,
    ]
    cmd += ["--timeout", TIMEOUT, "--course", str(course), "--cluster", cluster.scheduler_address]
    grading = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        killed = _kill_a_worker_mid_submission(cluster, grading)
        stdout, stderr = grading.communicate(timeout=1800)
    finally:
        if grading.poll() is None:
            grading.kill()
    assert grading.returncode == 0, stderr[-3000:]
    assert killed
    assert_same_outputs(local_out, tmp_path / "out")
