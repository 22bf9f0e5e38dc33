"""Environments built the way a platform builds them, and ``grade``'s scores to compare them with.

Every path that grades outside the instructor's venv (Gradescope's bundle, the
Classroom 50 autograder, the release's own set-up that its GitHub Actions
workflow runs) is tested in an environment built from nothing but what the
path ships: a fresh ``python3.11 -m venv`` and exactly the path's install
commands. The kit's venv never reaches them: :func:`clean_env` drops
``PYTHONPATH``, ``VIRTUAL_ENV`` and the kit venv's ``bin`` from ``PATH``, no
``.pth`` points into it and its interpreter is never the one that grades.
(pip's own configuration stays: here it finds torch and the stack among the
machine's local wheels. ``PIP_RETRIES=0`` only stops pip from retrying
PyTorch's CPU index where it cannot be reached; the commands are the path's.)

Each environment is built once per run of the suite (a session fixture; under
pytest-xdist the first worker builds it, the others wait on a lock).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support import ROOT, reference_source

KIT_BIN = str(Path(sys.executable).parent)

# The submissions every path grades and compares with ``grade``: a correct, a wrong and an untouched one.
MODULE = "at_updates"
WRONG_FUNCTION = "scatter_add"  # wrong values, still pure: its hidden check (purity) passes and earns nothing


def canonical_sources() -> dict[str, str]:
    """``{name: <MODULE>.py}``: the reference, the reference with ``WRONG_FUNCTION`` returning its first
    argument, and the untouched stubs."""
    ref = reference_source(MODULE)
    wrong = ref + f"\n\ndef {WRONG_FUNCTION}(*args, **kwargs):\n    return args[0]\n"
    return {
        "reference": ref,
        "wrong": wrong,
        "stubs": (ROOT / "exercises" / f"{MODULE}.py").read_text(encoding="utf-8"),
    }


def base_python() -> str | None:
    """A system Python 3.11 (never the kit venv's)."""
    found = shutil.which("python3.11", path="/usr/bin:/usr/local/bin")
    return found if found and not found.startswith(sys.prefix) else None


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a platform's process: nothing that leads to the kit's venv or checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "CI", "PYTHONSTARTUP") and not k.startswith("PYTEST_")
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and p != KIT_BIN and not p.startswith(sys.prefix)
    )
    env.setdefault("PIP_RETRIES", "0")
    env.setdefault("PIP_TIMEOUT", "5")
    env.update(extra)
    return env


def assert_not_the_kit_venv(python: Path) -> None:
    """``python`` is an environment of its own: not the kit's, no ``.pth`` into it, and it imports the kit
    from its own site-packages (an installed wheel or an editable install of the tree it set up)."""
    python = Path(python)
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import sys, autograder, pytest; print(sys.prefix); print(autograder.__file__); print(pytest.__file__)",
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd="/",
    )
    assert probe.returncode == 0, probe.stderr
    prefix, kit, pytest_file = probe.stdout.split("\n")[:3]
    assert Path(prefix).resolve() != Path(sys.prefix).resolve(), "the platform's environment is the kit's venv"
    assert not pytest_file.startswith(sys.prefix) and not kit.startswith(str(ROOT) + os.sep), (prefix, kit, pytest_file)
    site = Path(prefix) / "lib" / "python3.11" / "site-packages"
    for pth in site.glob("*.pth"):
        assert sys.prefix not in pth.read_text(errors="replace"), f"{pth} points into the kit's venv"


def run_setup(cmd: list[str], cwd: Path, base: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run a path's own set-up ``cmd`` in ``cwd`` with ``base`` as its Python and nothing of the kit's venv,
    which must build ``cwd/.venv`` of its own; the finished process and its seconds (it fails with its output)."""
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=clean_env(PYTHON=base), capture_output=True, text=True, timeout=2400)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    assert_not_the_kit_venv(Path(cwd) / ".venv" / "bin" / "python")
    return done, time.monotonic() - started


def timed(cmd: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    return proc, time.monotonic() - started


def grade_scores(submissions: dict[str, Path], module: str, out: Path) -> dict[str, dict[str, float]]:
    """``autograder grade``'s points per function (the instructor's side, the kit's own venv) for the
    folders ``submissions`` ({student: folder holding <module>.py}): ``{student: {function: points}}``."""
    class_dir = out / "class"
    for student, folder in submissions.items():
        shutil.copytree(folder, class_dir / student)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(class_dir),
            "--out",
            str(out / "graded"),
            "--only",
            module,
            "--course",
            str(ROOT),
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out / "graded" / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    prefix = f"{module}."
    return {
        row["student"]: {
            k[len(prefix) :]: float(v) for k, v in row.items() if k.startswith(prefix) and v not in ("", None)
        }
        for row in rows
    }
