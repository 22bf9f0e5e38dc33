"""Scratch folders of a killed grader are removed by the next one, and nothing else is.

``scratch.scratch_dir`` names each folder after the process that made it (pid and pid
namespace); ``scratch.remove_abandoned_scratch`` removes those whose process is gone. The
SIGKILL case end to end is in ``tests/system/test_grade_interrupt.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support import ROOT

from autograder.grading.isolation import scratch

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/pid"), reason="needs Linux's /proc")


@pytest.fixture
def tmpdir_of_graders(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_folder_is_named_after_its_process(tmpdir_of_graders):
    folder = scratch.scratch_dir()
    assert folder.parent == tmpdir_of_graders
    namespace = os.stat("/proc/self/ns/pid").st_ino
    assert folder.name.startswith(f"autograder-{os.getpid()}x{namespace}-")


def test_only_the_folders_of_gone_graders_of_this_namespace_are_removed(tmpdir_of_graders):
    namespace = os.stat("/proc/self/ns/pid").st_ino
    gone = _gone_pid()
    names = {
        "gone": f"autograder-{gone}x{namespace}-abc",
        "mine": scratch.scratch_dir().name,
        "alive": f"autograder-{os.getppid()}x{namespace}-def",
        "other_namespace": f"autograder-{gone}x{namespace + 1}-ghi",
        "release": "autograder-release-jkl",
        "student_run": "autograder-run-mno",
        "untagged": "autograder-pqr",
    }
    for name in names.values():
        (tmpdir_of_graders / name).mkdir(exist_ok=True)
    (tmpdir_of_graders / names["gone"] / "course" / "solutions").mkdir(parents=True)
    removed = scratch.remove_abandoned_scratch()
    assert [p.name for p in removed] == [names["gone"]]
    left = {p.name for p in tmpdir_of_graders.iterdir()}
    assert left == set(names.values()) - {names["gone"]}


def test_a_file_or_a_link_with_such_a_name_is_left_alone(tmpdir_of_graders, tmp_path_factory):
    namespace = os.stat("/proc/self/ns/pid").st_ino
    gone = _gone_pid()
    target = tmp_path_factory.mktemp("elsewhere")
    (target / "keep.txt").write_text("keep")
    (tmpdir_of_graders / f"autograder-{gone}x{namespace}-link").symlink_to(target)
    (tmpdir_of_graders / f"autograder-{gone}x{namespace}-file").write_text("x")
    assert scratch.remove_abandoned_scratch() == []
    assert (target / "keep.txt").read_text() == "keep"


def test_the_trusted_sides_temporary_folder_is_a_scratch_folder_of_the_pool(tmp_path, monkeypatch):
    """pytest's ``pytest-of-<user>`` of the verifiers (the reference's checkpoints) goes into the pool's own scratch
    folder, removed with every other one by ``close()``: after Ctrl-C or SIGTERM too, nothing is left in TMPDIR."""
    import threading

    from autograder.core.course import load_course
    from autograder.grading.options import Options
    from autograder.grading.pool import GradingPool

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    pool = GradingPool(load_course(ROOT), Options(("at_updates",), 20, 1024, 1), threading.Event())
    try:
        trusted_tmp = Path(pool.trusted_env["TMPDIR"])
        assert trusted_tmp.parent == tmp_path and trusted_tmp.name.startswith("autograder-")
        (trusted_tmp / "pytest-of-root" / "pytest-0").mkdir(parents=True)
    finally:
        pool.close()
    assert not list(tmp_path.iterdir())
