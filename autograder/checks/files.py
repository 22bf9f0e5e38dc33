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
import posixpath
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

Files = dict  # relative POSIX path -> the file's bytes (a uint8 array), or None for a directory

# What a recording of files may hold: a checkpoint of the course is a few dozen files and kilobytes.
MAX_ENTRIES = 4096
MAX_BYTES = 64 * 2**20
MAX_NAME = 255  # characters of one path component
MAX_DEPTH = 32  # components of one path


class UnsafeFiles(ValueError):
    """Files that are not a plain tree of relative names under one folder (or too many, or too large)."""


def snapshot(path: Path | str) -> Files:
    """Every directory (None) and regular file (its bytes) under ``path``, by path relative to it; {} when
    nothing is there. A file at ``path`` itself is keyed ``""``. Links are not followed and, like pipes,
    sockets and devices, not recorded; more than :data:`MAX_ENTRIES` entries or :data:`MAX_BYTES` bytes
    raise :class:`UnsafeFiles`."""
    path = Path(path)
    if path.is_symlink():
        return {}
    if path.is_file():
        return {"": _bytes_of(path)}
    if not path.is_dir():
        return {}
    found: Files = {}
    size = 0
    for folder, dirs, names in os.walk(path):  # os.walk does not descend into links to folders
        base = Path(folder)
        for name in sorted(dirs + names):
            entry = base / name
            info = entry.lstat()
            rel = entry.relative_to(path).as_posix()
            if stat.S_ISDIR(info.st_mode):
                found[rel] = None
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
                if size > MAX_BYTES:
                    raise UnsafeFiles(f"more than {MAX_BYTES // 2**20} MB of files under {path.name}")
                found[rel] = _bytes_of(entry)
            if len(found) > MAX_ENTRIES:
                raise UnsafeFiles(f"more than {MAX_ENTRIES} files under {path.name}")
        dirs[:] = [d for d in dirs if not (base / d).is_symlink()]
    return dict(sorted(found.items()))


def _bytes_of(path: Path) -> np.ndarray:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFiles(f"{path.name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise UnsafeFiles(f"{path.name} is larger than {MAX_BYTES // 2**20} MB")
    return np.frombuffer(data, dtype=np.uint8).copy()


def checked(files: object) -> list[tuple[list[str], bytes | None]]:
    """``files`` (a :func:`snapshot` that came from elsewhere: hostile data) as (path components, bytes or
    None for a folder), sorted; raises :class:`UnsafeFiles` unless every name is relative and normalised
    (no absolute name, no ``.`` or ``..``, no empty or backslashed part, no NUL), every content is bytes,
    and there are at most :data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` bytes."""
    if not isinstance(files, dict):
        raise UnsafeFiles("files must be a mapping of names to contents")
    if len(files) > MAX_ENTRIES:
        raise UnsafeFiles(f"more than {MAX_ENTRIES} files")
    out: list[tuple[list[str], bytes | None]] = []
    size = 0
    for rel, content in files.items():
        if type(rel) is not str:
            raise UnsafeFiles("a file name that is not text")
        parts = rel.split("/") if rel else []
        if (
            len(parts) > MAX_DEPTH
            or any(p in ("", ".", "..") or "\\" in p or "\0" in p or len(p) > MAX_NAME for p in parts)
            or posixpath.normpath(rel or ".") != (rel or ".")
        ):
            raise UnsafeFiles(f"the file name {rel[:80]!r} is not a relative, normalised name")
        if content is None:
            out.append((parts, None))
            continue
        if not (isinstance(content, np.ndarray) and content.dtype == np.uint8 and content.ndim == 1):
            raise UnsafeFiles(f"the content of {rel[:80]!r} is not bytes")
        size += content.size
        if size > MAX_BYTES:
            raise UnsafeFiles(f"more than {MAX_BYTES // 2**20} MB of files")
        out.append((parts, content.tobytes()))
    if any(not parts for parts, _ in out) and len(out) != 1:
        raise UnsafeFiles("a file at the folder itself next to other files")
    return sorted(out, key=lambda entry: entry[0])


def materialise(files: Files, path: Path | str) -> Path:
    """Write ``files`` (a :func:`snapshot`) at ``path`` (which must not exist; its parent is made); returns ``path``.

    ``files`` may come from a student's process, and this may run as root on the trusted side: names are
    :func:`checked` first, and every entry is then created *relative to the new folder's descriptor*, one
    component at a time, never following a link (``O_NOFOLLOW``) and never opening what already exists
    (``O_EXCL``), so nothing can be written outside ``path`` whatever the names say."""
    path = Path(path)
    entries = checked(files)
    path.parent.mkdir(parents=True, exist_ok=True)
    if entries and not entries[0][0]:  # a single file at path itself
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            _write(parent, path.name, entries[0][1] or b"")
        finally:
            os.close(parent)
        return path
    os.mkdir(path, 0o755)
    root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for parts, content in entries:
            opened: list[int] = []
            try:
                folder = root
                for part in parts[:-1]:
                    folder = _folder(folder, part)
                    opened.append(folder)
                if content is None:
                    os.close(_folder(folder, parts[-1]))
                else:
                    _write(folder, parts[-1], content)
            finally:
                for fd in opened:
                    os.close(fd)
    finally:
        os.close(root)
    return path


def _folder(parent: int, name: str) -> int:
    """The folder ``name`` in the folder ``parent`` (made if missing), opened without following a link."""
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)


def _write(folder: int, name: str, content: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(content)


@contextlib.contextmanager
def new_directory() -> Iterator[Path]:
    """An empty directory of its own (an absolute path, as Orbax asks), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="check-") as tmp:
        yield Path(tmp).resolve()


SCRATCH_NAME = "<the check's folder>"


def without_scratch_paths(text: str) -> str:
    """``text`` (a library's error message) with every folder :func:`new_directory` made named
    :data:`SCRATCH_NAME`: the folder's random name would make the same submission's message differ from run to
    run (grading is deterministic to the byte)."""
    return re.sub(re.escape(tempfile.gettempdir().rstrip("/")) + r"/check-\w+", SCRATCH_NAME, text)


def listing(root: Path | str) -> set[str]:
    """Every path under ``root``, relative to it."""
    root = Path(root)
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def numbered_entries(directory: Path | str) -> list[str]:
    """The entries of ``directory``, numbered ones first in numeric order (a checkpoint manager's steps)."""
    return sorted(
        os.listdir(directory), key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name)
    )
