"""What every environment that grades installs, the one place each setup path takes it from: the pinned stack
(:func:`requirements`, from the course's or the kit's ``pyproject.toml``: :func:`pyproject_of`) and torch's CPU
build first.

torch first, pinned, from PyTorch's CPU wheel index: from the default index
``torch==2.13.0`` resolves to its CUDA build and pulls 16 ``nvidia-*``/``cuda-*``
packages and triton, gigabytes no check uses. A pip configured with local
wheels (``find-links``) still finds the same version there: ``--extra-index-url``
adds an index, it replaces none.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def pyproject_of(course_root: Path) -> Path:
    """The course's ``pyproject.toml``, else the one of the kit's own checkout."""
    for folder in (course_root, Path(__file__).resolve().parents[2]):
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
    raise FileNotFoundError("no pyproject.toml with the pinned dependencies next to course.toml")


def requirements(pyproject: Path) -> str:
    """The pinned stack, from ``pyproject.toml``'s dependencies (the one list)."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return "".join(f"{d}\n" for d in deps)
