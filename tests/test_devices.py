"""The course's 8 CPU devices are in effect wherever checks run: this pytest session (set by the plugin before
tests/conftest.py imported JAX), a fresh interpreter, and the sandboxed grading processes (zygote, child and
trusted verifier), where the parallel and checkpointing references get full marks under the grader's limits."""

import csv
import os
import shutil
import subprocess
import sys

import jax

from autograder.core.devices import COURSE_CPU_DEVICES
from support import ROOT

PROBE = """
import sys
from autograder.core.devices import use_course_devices
{before}
ok = use_course_devices()
import jax
print(ok, jax.device_count())
"""


def probe(before: str = "") -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("JAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_this_pytest_session_runs_with_the_course_devices():
    assert jax.device_count() == COURSE_CPU_DEVICES == 8


def test_use_course_devices_works_before_and_after_importing_jax():
    assert probe() == "True 8"
    assert probe("import jax") == "True 8"


def test_use_course_devices_reports_a_backend_that_already_started():
    assert probe("import jax.numpy as jnp; jnp.zeros(1)") == "False 1"


def test_grading_processes_give_the_parallel_and_checkpointing_references_full_marks(tmp_path):
    """One real grade run (sandbox limits, zygote, verifier): parallel needs 8 devices in the child and the
    verifier, checkpointing writes only into its checks' temporary directories."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course.toml", course / "course.toml")
    for folder in ("exercises", "solutions"):
        shutil.copytree(ROOT / folder, course / folder, ignore=shutil.ignore_patterns("__pycache__"))
    student = tmp_path / "class" / "reference"
    student.mkdir(parents=True)
    for module in ("parallel", "checkpointing"):
        shutil.copy(ROOT / "solutions" / f"{module}.py", student / f"{module}.py")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    cmd = [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
           "--course", str(course), "--only", "parallel", "--only", "checkpointing"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["score"] == row["max_score"] == "24", row


NOTEBOOK_RUN = """
import json, sys
nb = json.load(open(sys.argv[1]))
ns = {}
for cell in nb["cells"]:
    meta = cell["metadata"]["nbgrader"]
    if cell["cell_type"] == "code" and (meta["grade_id"] == "setup" or meta["solution"]):
        exec(cell["source"], ns)
import jax
print(jax.device_count())
exec("from autograder.notebook import check\\npoints = check('parallel', 'all_device_mean', globals())", ns)
print(ns["points"])
"""


def test_a_notebook_kernel_gets_the_course_devices_from_its_setup_cell(tmp_path):
    """The generated notebook's setup cell runs first in a fresh interpreter, as in a kernel: JAX then has
    8 devices, and a parallel check cell gives the reference full points."""
    from autograder.notebooks.builder import build_course

    (notebook,) = build_course(ROOT, tmp_path / "course", modules=["parallel"])
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_COURSE_ROOT=str(ROOT))
    env.pop("JAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK_RUN, str(notebook)], env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "8" and lines[-1] == "2.0", proc.stdout[-2000:]
