"""Files as data: what a function wrote into a directory, as plain data, and back onto disk.

A check that judges files (an Orbax checkpoint, a manager's step directories)
runs the function in a new directory and keeps what it wrote as data: the
trusted side can then judge it without the process that wrote it (it puts the
files back with :func:`materialise` and reads them), and a checkpoint the
reference wrote can be given to a process that has no reference.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np

Files = dict  # relative POSIX path -> the file's bytes (a uint8 array), or None for a directory


def snapshot(path: Path | str) -> Files:
    """Every directory (None) and file (its bytes) under ``path``, by path relative to it; {} when nothing is
    there. A file at ``path`` itself is keyed ``""``."""
    path = Path(path)
    if path.is_file():
        return {"": _bytes_of(path)}
    if not path.is_dir():
        return {}
    return {p.relative_to(path).as_posix(): (None if p.is_dir() else _bytes_of(p)) for p in sorted(path.rglob("*"))}


def _bytes_of(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes(), dtype=np.uint8).copy()


def materialise(files: Files, path: Path | str) -> Path:
    """Write ``files`` (a :func:`snapshot`) at ``path`` (which must not exist); returns ``path``."""
    path = Path(path)
    if "" in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(np.asarray(files[""], dtype=np.uint8).tobytes())
        return path
    path.mkdir(parents=True)
    for rel, content in sorted(files.items()):
        target = path / rel
        if content is None:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(np.asarray(content, dtype=np.uint8).tobytes())
    return path


@contextlib.contextmanager
def new_directory() -> Iterator[Path]:
    """An empty directory of its own (an absolute path, as Orbax asks), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="check-") as tmp:
        yield Path(tmp).resolve()


def listing(root: Path | str) -> set[str]:
    """Every path under ``root``, relative to it."""
    root = Path(root)
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def numbered_entries(directory: Path | str) -> list[str]:
    """The entries of ``directory``, numbered ones first in numeric order (a checkpoint manager's steps)."""
    return sorted(os.listdir(directory), key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name))
