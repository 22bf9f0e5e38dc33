"""What an nbgrader course directory ships so that it grades without the kit's checkout or venv.

``autograder nbgrader COURSE_DIR`` writes, next to ``nbgrader_config.py`` and ``source/``:

- ``course/``: the course files the check cells read (``JAX_COURSE_ROOT`` points here): ``course.toml``
  cut to the modules that have a source notebook, their checks, stubs and references, and the reference
  and stub of every module their checks' scenarios take a reference from
  (:func:`autograder.shipped.references.references_needed`). The course directory is the instructor's
  private folder; its source notebooks hold the references anyway.
- ``kit/<wheel>``: the kit as a wheel (:mod:`autograder.shipped.kit_wheel`): ``autograder``, which the
  check cells import, and the checks' pytest plugin;
- ``requirements.txt``: the pinned stack, nbgrader included (the kit's ``pyproject.toml``, the one list), and
  ipykernel, the kernel;
- ``setup.sh``: builds ``.venv`` from a system Python 3.11: torch's CPU build first (PyTorch's CPU index,
  :mod:`autograder.shipped.stack`), the requirements, the kit's wheel (``--no-deps``), and ends by proving
  the environment (:mod:`autograder.notebooks.preflight`), failing if it cannot grade;
- ``jupyter/kernels/python3/kernel.json``: the kernel nbgrader starts, ``.venv/bin/python`` itself
  (``nbgrader_config.py`` puts this folder first on ``JUPYTER_PATH``, so no other ``python3`` kernelspec of
  the machine wins).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from autograder.core.course import Course
from autograder.shipped import kit_wheel
from autograder.shipped.hidden import keep_modules
from autograder.shipped.references import references_needed
from autograder.shipped.stack import CPU_INDEX, TORCH, pyproject_of, requirements

COURSE_COPY = "course"  # the course files the check cells read
KIT_DIR = "kit"  # the kit's wheel
KERNELS = "jupyter"  # a Jupyter data folder: kernels/python3/kernel.json
VENV = ".venv"
# Written into ``course/`` so that a rebuild knows the folder is its own to replace.
COPY_MARKER = ".written-by-autograder-nbgrader"

SETUP_SH = f"""#!/usr/bin/env bash
# Builds this nbgrader course's own environment, .venv next to this file, from a Python 3.11
# (PYTHON, default python3.11): torch's CPU build first (PyTorch's CPU index), then the pinned
# stack with nbgrader (requirements.txt), then the kit (its wheel in {KIT_DIR}/: the `autograder` the check
# cells import and the checks' pytest plugin). It ends by proving the environment: every source
# notebook's reference gets full marks and its stubs nothing, run the way `nbgrader autograde` runs
# them, or it fails here, saying why. Then grade with .venv/bin/nbgrader.
set -euo pipefail
HERE="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
PYTHON="${{PYTHON:-python3.11}}"
PIP=(--quiet --disable-pip-version-check)
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup.sh: $PYTHON is not a Python 3.11; set PYTHON to one" >&2
  exit 1
fi
"$PYTHON" -m venv "$HERE/{VENV}"
"$HERE/{VENV}/bin/pip" install "${{PIP[@]}}" {TORCH} --index-url {CPU_INDEX}
"$HERE/{VENV}/bin/pip" install "${{PIP[@]}}" -r "$HERE/requirements.txt"
"$HERE/{VENV}/bin/pip" install "${{PIP[@]}}" --no-deps --force-reinstall "$HERE/{KIT_DIR}/"*.whl
"$HERE/{VENV}/bin/python" -m autograder.notebooks.preflight "$HERE"
echo "setup.sh: ready; grade with $HERE/{VENV}/bin/nbgrader (from $HERE)"
"""


def kernel_spec(course_dir: Path) -> dict:
    """The ``python3`` kernelspec of the course: its own venv's interpreter, as ipykernel's own spec has it."""
    return {
        "argv": [
            str(Path(course_dir) / VENV / "bin" / "python"),
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
        ],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "metadata": {"debugger": True},
    }


def shipped_modules(course: Course, course_dir: Path) -> list[str]:
    """The course's modules that have a source notebook in ``course_dir``, in course order."""
    source = Path(course_dir) / "source"
    return [m.name for m in course.modules if (source / m.name / f"{m.name}.ipynb").is_file()]


def course_files(course: Course, modules: list[str]) -> dict[str, bytes]:
    """``{path under course/: bytes}``: what the check cells of ``modules`` read."""
    root = course.root
    toml = (root / "course.toml").read_text(encoding="utf-8")
    files: dict[str, bytes] = {
        "course.toml": (
            toml if set(modules) >= {m.name for m in course.modules} else keep_modules(toml, set(modules))
        ).encode()
    }
    for path in sorted(root.glob("conftest.py")) + sorted((root / "exercises").glob("conftest.py")):
        files[path.relative_to(root).as_posix()] = path.read_bytes()
    for module in modules:
        for part in (f"exercises/{module}.py", f"exercises/test_{module}.py", f"solutions/{module}.py"):
            files[part] = (root / part).read_bytes()
    for module in sorted(references_needed(root, tuple(modules)) - set(modules)):
        # a sibling whose reference a scenario is built with, and its stub (where the recording of givens reads
        # the contracted functions of a module course.toml does not list)
        for part in (f"solutions/{module}.py", f"exercises/{module}.py"):
            files[part] = (root / part).read_bytes()
    return files


def write_environment(course: Course, course_dir: Path) -> list[Path]:
    """Write ``course/``, ``kit/``, ``requirements.txt``, ``setup.sh`` and the kernelspec into ``course_dir``
    for the modules that have a source notebook there; return what was written (top-level entries)."""
    course_dir = Path(course_dir)
    copy = course_dir / COURSE_COPY
    if copy.exists():
        if not (copy / COPY_MARKER).is_file():
            raise FileExistsError(f"{copy} exists and was not written by `autograder nbgrader`; move it away")
        shutil.rmtree(copy)
    for rel, data in course_files(course, shipped_modules(course, course_dir)).items():
        path = copy / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (copy / COPY_MARKER).write_text("this folder is rewritten by every `autograder nbgrader`\n", encoding="utf-8")

    pyproject = pyproject_of(course.root)
    kit = course_dir / KIT_DIR
    for old in kit.glob("*.whl"):
        old.unlink()
    kit_wheel.build_wheel(Path(__file__).resolve().parents[1], pyproject, kit)
    (course_dir / "requirements.txt").write_text(
        requirements(pyproject) + "# the kernel nbgrader starts (nbgrader's jupyterlab needs it too)\nipykernel\n",
        encoding="utf-8",
    )
    setup = course_dir / "setup.sh"
    setup.write_text(SETUP_SH, encoding="utf-8")
    setup.chmod(0o755)
    spec = course_dir / KERNELS / "kernels" / "python3" / "kernel.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(json.dumps(kernel_spec(course_dir.resolve()), indent=1) + "\n", encoding="utf-8")
    return [copy, kit, course_dir / "requirements.txt", setup, course_dir / KERNELS]
