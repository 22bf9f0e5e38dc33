"""A grader killed with SIGKILL leaves nothing behind: its janitor kills what is left in its control groups and removes
them, detaches the students' size-limited file systems and removes its scratch folders (the references' copies among
them), seconds after the kill and before any other grader starts. A pool closed normally: the janitor exits and
touches nothing. The whole ``grade`` command killed: ``tests/system/test_grade_interrupt.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT

from autograder.grading.isolation.cgroups import grader_group
from autograder.grading.isolation.janitor import Janitor

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="control groups and mounts need root")

# A grader in miniature: its control group with a student's process in a group below it, a scratch folder holding a
# "reference" and a size-limited file system, its janitor; then it is killed (SIGKILL: no clean-up of its own).
_GRADER = """
import json, os, signal, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from autograder.grading.isolation.cgroups import grader_group
from autograder.grading.isolation.janitor import Janitor
from autograder.grading.isolation.scratch import limit_size, scratch_dir, scratch_prefix

group = grader_group()
student = group.child("student")
student.limit(pids=64)
sleeper = subprocess.Popen(
    json.loads(sys.argv[2]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
)
student.add(sleeper.pid)
folder = scratch_dir()
(folder / "solutions").mkdir()
(folder / "solutions" / "reference.py").write_text("ANSWER = 42")
(folder / "quota").mkdir()
assert limit_size(folder / "quota", 1)
(folder / "quota" / "work").write_text("x")
Janitor.start(list(group.paths.values()), unified=group.version == 2, scratch_prefix=scratch_prefix())
print(sleeper.pid, folder, *group.paths.values(), flush=True)
time.sleep(0.3)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _mounted(folder: str) -> bool:
    return any(line.split(" ")[4].startswith(folder) for line in Path("/proc/self/mountinfo").read_text().splitlines())


STUDENTS = {
    "sleeps": ["sleep", "600"],
    # forks until its group's limit, and goes on trying: killed one by one, a process would always be replaced
    "forks without end": ["sh", "-c", "while :; do sleep 600 & done"],
}


@root_only
@pytest.mark.parametrize("linked", [False, True], ids=["TMPDIR", "TMPDIR through a link"])
@pytest.mark.parametrize("student", STUDENTS.values(), ids=STUDENTS.keys())
def test_a_killed_graders_groups_processes_mounts_and_scratch_folders_are_removed(tmp_path, student, linked):
    if grader_group() is None:
        pytest.skip("no control groups can be made here")
    tmpdir = tmp_path
    if linked:  # the kernel lists mounts by their real path
        (tmp_path / "real").mkdir()
        tmpdir = tmp_path / "link"
        tmpdir.symlink_to(tmp_path / "real")
    env = dict(os.environ, TMPDIR=str(tmpdir))
    proc = subprocess.run(
        [sys.executable, "-I", "-c", _GRADER, str(ROOT), json.dumps(student)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    sleeper, folder, *groups = proc.stdout.split()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        _alive(int(sleeper)) or Path(folder).exists() or any(Path(g).exists() for g in groups)
    ):
        time.sleep(0.05)
    assert not _alive(int(sleeper)), "a student's process outlived its killed grader"
    assert not [g for g in groups if Path(g).exists()], "a killed grader's control group is left"
    assert not _mounted(os.path.realpath(folder)), "a student's size-limited file system is still mounted"
    assert not Path(folder).exists(), "a killed grader's scratch folder (a reference in it) is left"
    assert not list(Path(os.path.realpath(tmpdir)).iterdir())


def test_a_pool_closed_normally_leaves_the_janitor_nothing_to_do(tmp_path):
    """Its parent alive, the janitor touches nothing: not even a folder named like the grader's own."""
    mine = tmp_path / "autograder-mine-1"
    mine.mkdir()
    janitor = Janitor.start([], unified=False, scratch_prefix=str(tmp_path / "autograder-mine-"))
    process = janitor.process
    assert process is not None and process.poll() is None
    janitor.close()
    assert process.returncode == 0
    assert mine.is_dir()


def test_a_pool_whose_janitor_was_killed_still_closes(tmp_path):
    janitor = Janitor.start([], unified=False, scratch_prefix=str(tmp_path / "autograder-mine-"))
    assert janitor.process is not None
    janitor.process.kill()
    janitor.process.wait()
    janitor.close()  # no reader left for its byte: nothing raised


def test_the_janitor_starts_from_the_standard_library_alone():
    """It runs by path in isolated mode with no site: it must not import the kit (nor anything installed)."""
    path = ROOT / "autograder" / "grading" / "isolation" / "janitor.py"
    code = (
        f"import runpy, sys; runpy.run_path({str(path)!r}); print(sorted(m for m in sys.modules if 'autograder' in m))"
    )
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
