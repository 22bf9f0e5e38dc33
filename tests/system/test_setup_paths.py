"""Every set-up path installs torch's CPU build, a student's set-up only what a student needs, and the
README's figures are the ones computed from the course and the bundle.

The set-up paths: the kit's ``scripts/setup.sh`` (a release copies it, and the release's GitHub Actions
workflow runs it), Gradescope's ``setup.sh``, Classroom 50's ``autograder.py`` and the nbgrader course's
``setup.sh``. Each installs torch
first, pinned, with PyTorch's CPU index (from the default index ``torch==2.13.0`` is the CUDA build, which
pulls 16 ``nvidia-*``/``cuda-*`` packages and triton), before anything that depends on it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile

import pytest
from platform_envs import clean_env
from support import ROOT

from autograder.core.course import load_course
from autograder.notebooks import environment as nbgrader_course
from autograder.platforms import classroom50, github_actions, gradescope
from autograder.shipped.stack import CPU_INDEX, TORCH

SETUP_SH = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
TEST_SH = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
PATHS = {
    "scripts/setup.sh": SETUP_SH,
    "gradescope setup.sh": gradescope.SETUP_SH,
    "classroom50 autograder.py": classroom50.AUTOGRADER_PY,
    "nbgrader course setup.sh": nbgrader_course.SETUP_SH,
}


# Each path: (what installs torch, what installs what depends on it), in the order the path runs them.
ORDER = {
    "scripts/setup.sh": (TORCH, "-e ."),
    "gradescope setup.sh": (TORCH, "requirements.txt"),
    "classroom50 autograder.py": ("*CPU_TORCH", "requirements.txt"),
    "nbgrader course setup.sh": (TORCH, '-r "$HERE/requirements.txt"'),
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_setup_path_installs_torch_first_from_the_cpu_index(path):
    text = PATHS[path]
    lines = text.splitlines()
    pinned = [n for n, line in enumerate(lines) if "torch==" in line]
    assert pinned, f"{path}: torch is not installed pinned"
    for n in pinned:
        line = _with_shell_variables(lines[n], text)
        if CPU_INDEX in line:
            assert "--extra-index-url" in line or "--index-url" in line, f"{path}: {line}"
        else:  # only as the fallback of a probe that found the CPU index unreachable (a mirror-only network)
            assert lines[n - 2].strip() == "else" or lines[n - 1].strip() == "else", f"{path}: {line}"
            assert re.search(r"urlopen\('\$TORCH_INDEX", text), f"{path}: a fallback without probing the index"
    first, then = ORDER[path]
    assert text.index(first) < text.index(then), f"{path}: {then!r} is installed before torch's CPU build"


def _with_shell_variables(line: str, text: str) -> str:
    """``line`` with the ``$NAME``/``"${NAME}"`` of the script's plain ``NAME=value`` assignments written out."""
    for name, value in re.findall(r"^([A-Z_]+)=(\S+)$", text, flags=re.M):
        line = line.replace(f"${{{name}}}", value).replace(f"${name}", value)
    return line


def test_the_release_workflow_sets_up_with_the_release_setup_only():
    """The GitHub Actions workflow installs nothing itself: it runs the release's scripts/setup.sh (CPU torch)."""
    assert "bash scripts/setup.sh" in github_actions.WORKFLOW
    assert "pip install" not in github_actions.WORKFLOW


@pytest.mark.parametrize("option", ["--extra-index-url", "--index-url"])
def test_pip_still_finds_the_pinned_torch_with_the_cpu_index_asked_for(option, tmp_path):
    """With the CPU index asked for, pip resolves ``torch==2.13.0`` to the CPU build (here from the local
    wheels its configuration names) and nothing of CUDA comes with it."""
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            TORCH,
            option,
            CPU_INDEX,
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    chosen = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert chosen["torch"] == "2.13.0+cpu", chosen
    assert not [name for name in chosen if name.startswith(("nvidia", "cuda", "triton"))], chosen


def test_a_students_setup_installs_only_what_a_student_needs():
    commands = "\n".join(line for line in SETUP_SH.lower().splitlines() if not line.lstrip().startswith("#"))
    for word in ("[test]", "playwright", "check-jsonschema", "chromium", "tmux"):
        assert word not in commands, f"scripts/setup.sh installs {word} for a student"
    assert "-e ." in SETUP_SH and "bubblewrap" in SETUP_SH
    assert "--collect-only" in SETUP_SH, "setup.sh proves the checks' plugin is registered"
    for word in (".[test]", "chromium", "tmux"):
        assert word in TEST_SH, f"scripts/test.sh installs {word} for the kit's tests"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.index("scripts/setup.sh") < ci.index("scripts/test.sh")


def test_readme_figures_are_the_computed_ones(tmp_path):
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    course = load_course(ROOT)
    bundle = gradescope.build_bundle(ROOT, tmp_path / "autograder.zip", tuple(m.name for m in course.modules))
    with zipfile.ZipFile(bundle) as zf:
        assert zf.testzip() is None
    size = f"{bundle.stat().st_size / 2**20:.1f} MiB"
    claim = f"The course is {course.points:g} points; the bundle is {size} for the whole course"
    assert claim in readme, f"README.md should say: {claim}"
    assert f"it now has {course.points:g})" in readme
