"""Building the student release: what a student clones, and nothing from which a reference can be recovered.

    OUT/
      exercises/          the stubs and their checks (hidden checks removed)
      autograder/         the kit (sources only, no bytecode)
      oracle/             the recorded answers (<module>.json + .npz) and given/<module>.py (the stubs' given code)
      course.toml         without hidden lists
      README.md, pyproject.toml, scripts/setup.sh, .gitignore
      .github/workflows/grade.yml   the checks on every push (autograder.platforms.github_actions)

The oracle is recorded in a temporary copy of the course that still has
``solutions/``; ``OUT`` never holds it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import autograder
from autograder.core.course import Course, load_course
from autograder.platforms import github_actions
from autograder.release.student_readme import student_readme
from autograder.shipped import hidden

KIT = Path(autograder.__file__).resolve().parent
NO_BYTECODE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
GITIGNORE = "__pycache__/\n*.pyc\n.venv/\n*.egg-info/\n.hypothesis/\n.pytest_cache/\n"


class ReleaseError(Exception):
    pass


@dataclass
class Release:
    out: Path
    seconds: float
    oracle_bytes: int
    total_bytes: int
    unrecordable: dict[str, str]  # "module.function" -> why the release cannot answer it (its checks skip)


def build_release(course: Course, out: Path, only: list[str] | None = None) -> Release:
    """Write the release of ``course`` (or of the modules ``only``: a quick release for the kit's tests)."""
    started = time.perf_counter()
    if only:
        unknown = sorted(set(only) - {m.name for m in course.modules})
        if unknown:
            raise ReleaseError(f"--only names modules the course does not have: {unknown}")
    out = Path(out).resolve()
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    write_tree(course, out, set(only) if only else None)
    with tempfile.TemporaryDirectory(prefix="autograder-release-") as tmp:
        staging = Path(tmp) / "course"
        shutil.copytree(out, staging, ignore=NO_BYTECODE)
        shutil.copytree(course.root / "solutions", staging / "solutions", ignore=NO_BYTECODE)
        for module in course.modules:  # the stubs of modules left out by --only (not their checks)
            if not (staging / "exercises" / f"{module.name}.py").exists():
                shutil.copyfile(
                    course.root / "exercises" / f"{module.name}.py", staging / "exercises" / f"{module.name}.py"
                )
        record_oracle(staging, out / "oracle")
    from autograder.recording.recorded import write_given_modules  # NumPy: imported when a release is built

    write_given_modules(
        course.root, out / "oracle"
    )  # every recorded one: later modules build scenarios with earlier ones
    for cache in out.rglob("__pycache__"):
        shutil.rmtree(cache)
    return Release(out, time.perf_counter() - started, _size(out / "oracle"), _size(out), unrecordable(out / "oracle"))


def unrecordable(oracle: Path) -> dict[str, str]:
    """What the recording could not store (its checks skip in the release), as ``module.function -> why``."""
    from autograder.recording.recorded import UNRECORDABLE

    out = {}
    for index in sorted(oracle.glob("*.json")):
        recording = json.loads(index.read_text())
        for function, why in recording.get("unrecordable", {}).items():
            out[f"{index.stem}.{function}"] = why
        for function, output in sorted(recording["calls"].values(), key=lambda entry: entry[0]):
            if output[0] == UNRECORDABLE:
                out.setdefault(f"{index.stem}.{function}", f"some calls: {output[1]}")
    return out


def write_tree(course: Course, out: Path, only: set[str] | None = None) -> None:
    root = course.root
    (out / "exercises").mkdir()
    for module in course.modules:
        if only is not None and module.name not in only:
            continue
        shutil.copyfile(root / "exercises" / f"{module.name}.py", out / "exercises" / f"{module.name}.py")
        checks = (root / "exercises" / f"test_{module.name}.py").read_text(encoding="utf-8")
        names = {name for fn in module.functions for name in fn.hidden}
        (out / "exercises" / f"test_{module.name}.py").write_text(
            hidden.drop_functions(checks, names), encoding="utf-8"
        )
    for extra in sorted((root / "exercises").glob("conftest.py")):
        shutil.copyfile(extra, out / "exercises" / extra.name)
    shutil.copytree(KIT, out / "autograder", ignore=NO_BYTECODE)
    toml_text = hidden.drop_hidden_lists((root / "course.toml").read_text(encoding="utf-8"))
    (out / "course.toml").write_text(hidden.keep_modules(toml_text, only) if only is not None else toml_text)
    shutil.copyfile(root / "pyproject.toml", out / "pyproject.toml")
    (out / "scripts").mkdir()
    shutil.copyfile(root / "scripts" / "setup.sh", out / "scripts" / "setup.sh")
    (out / "scripts" / "setup.sh").chmod(0o755)
    (out / ".gitignore").write_text(GITIGNORE)
    github_actions.write_workflow(out)
    (out / "README.md").write_text(student_readme(course), encoding="utf-8")
    released = load_course(out, verify_files=False)
    left = [h for m in released.modules for fn in m.functions for h in fn.hidden]
    if left:
        raise ReleaseError(f"course.toml still lists hidden checks after the release removed them: {left}")


def record_oracle(staging: Path, oracle: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(KIT.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)
    done = subprocess.run(
        [sys.executable, "-m", "autograder.release.record", str(staging), str(oracle)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise ReleaseError(f"recording the oracle failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
