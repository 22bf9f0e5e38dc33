"""``autograder watch`` in a real terminal: a tmux pane on a copy of the course.

The test starts watch in a detached tmux session, reads the screen with
``capture-pane``, saves a file the way an editor does, waits for the screen to
be redrawn, then presses Ctrl-C. ``scripts/test.sh`` installs tmux.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT

MODULE = "at_updates"

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (bash scripts/test.sh installs it)"
)


class Pane:
    def __init__(self, socket: str):
        self.socket = socket

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-u", "-L", self.socket, *args], check=True, capture_output=True, text=True
        ).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "watch")

    def wait_for(self, *needles: str, timeout: float = 240) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if all(n in text for n in needles):
                return text
            time.sleep(0.5)
        raise AssertionError(f"{needles} not on the screen after {timeout} s:\n{self.screen()}")


@pytest.fixture
def course_copy(tmp_path) -> Path:
    copy = tmp_path / "course"
    shutil.copytree(ROOT / "exercises", copy / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "solutions").mkdir()
    shutil.copy(ROOT / "solutions" / f"{MODULE}.py", copy / "solutions")
    shutil.copy(ROOT / "course.toml", copy)
    return copy


@pytest.fixture
def pane(course_copy):
    pane = Pane(f"autograder-watch-test-{os.getpid()}")
    command = f"{shlex.quote(sys.executable)} -m autograder watch {MODULE}; echo EXIT=$?; sleep 600"
    env = {"PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "TERM": "xterm-256color"}
    settings = [f"{k}={v}" for k, v in env.items()]
    pane.tmux(
        "new-session",
        "-d",
        "-s",
        "watch",
        "-x",
        "140",
        "-y",
        "60",
        "-c",
        str(course_copy),
        "env",
        *settings,
        "bash",
        "-c",
        command,
    )
    try:
        yield pane
    finally:
        subprocess.run(["tmux", "-L", pane.socket, "kill-server"], capture_output=True)


def _solution_of(name: str) -> str:
    import ast

    source = (ROOT / "solutions" / f"{MODULE}.py").read_text()
    node = next(n for n in ast.parse(source).body if getattr(n, "name", None) == name)
    return "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno])


def _replace(text: str, name: str, definition: str) -> str:
    import ast

    node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
    lines = text.splitlines()
    lines[node.lineno - 1 : node.end_lineno] = definition.splitlines()
    return "\n".join(lines) + "\n"


def test_watch_redraws_on_save_and_leaves_cleanly_on_ctrl_c(pane, course_copy):
    first = pane.wait_for("run 1 at", "watching exercises/")
    assert f"autograder watch · {MODULE}" in first
    assert "· set_diagonal" in first and "not started" in first
    assert "next: write set_diagonal in exercises/at_updates.py" in first

    path = course_copy / "exercises" / f"{MODULE}.py"
    text = _replace(path.read_text(), "set_diagonal", _solution_of("set_diagonal"))
    text = _replace(text, "clamp_at", "def clamp_at(x, indices, lo, hi):\n    return jnp.clip(x, lo, hi)")
    tmp = path.with_name(".at_updates.py.swp~")
    tmp.write_text(text)
    tmp.replace(path)  # saved the way many editors save: write aside, then rename

    second = pane.wait_for("run 2 at", "watching exercises/")
    assert "run 1 at" not in second, "the screen is cleared before each run's results"
    assert "✓ set_diagonal" in second
    assert "✗ clamp_at" in second and "2/4 checks pass" in second  # its values, and jit's program vs the reference
    assert "first failing check of clamp_at:" in second
    assert "at_updates.clamp_at: result differs from the reference" in second
    assert "hint: Clamping is two bounds" in second
    assert "next: fix clamp_at in exercises/at_updates.py" in second
    artifacts = ROOT / "build"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "watch-screen.txt").write_text(second, encoding="utf-8")  # what the student saw (git-ignored)

    pane.tmux("send-keys", "-t", "watch", "C-c")
    end = pane.wait_for("EXIT=", timeout=60)
    assert "EXIT=0" in end and "autograder watch stopped." in end
    assert "Traceback" not in end and "KeyboardInterrupt" not in end
    # The run recorded the student's progress locally (and nothing else wrote into exercises/).
    assert (course_copy / ".autograder" / "progress.json").is_file()
