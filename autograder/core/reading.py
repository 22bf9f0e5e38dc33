"""Reading a student's folder: the ``<module>.py`` files, and why the others are missing.

Everything a submission is read from goes through here (:func:`read_files`, for
:meth:`autograder.core.submission.Submission.read`): regular files only, no link followed, capped in size;
a notebook or an archive of them is read in memory (:mod:`autograder.core.archives`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import sys
from pathlib import Path

from autograder.core.archives import (
    ABSENT,
    ARCHIVE_SUFFIXES,
    MAX_ARCHIVE_BYTES,
    NOTEBOOK_SUFFIX,
    from_archive,
    from_notebook,
)

MAX_SUBMITTED_FILE_BYTES = 1_000_000
# Whose rights a submission is read with, when the grader runs as root: "nobody", never the grader's.
READER_UID = 65534
READER_GID = 65534


def read_files(
    folder: Path,
    modules: tuple[str, ...] | list[str],
    *,
    max_bytes: int = MAX_SUBMITTED_FILE_BYTES,
    uid: int | None = READER_UID,
    gid: int | None = READER_GID,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """A student's ``<module>.py`` files (from ``exercises/`` when the folder has one), and why others are missing.

    Regular files only, inside ``folder``: the folder itself, ``exercises/`` and each file are opened without
    following a symbolic link (a linked ``exercises -> <course>/solutions`` is refused, not read), a file with
    another name (a hard link) and anything that is not a regular file are refused, and at most ``max_bytes``
    are read. When the grader is root, what is below ``folder`` is opened with the rights of ``uid``/``gid``
    (an unprivileged user's), not the grader's. Every grading path (``grade``, Gradescope, a Dask cluster)
    reads submissions with this function."""
    files, missing, denied = _read_any(folder, modules, max_bytes, uid, gid)
    if denied and uid is not None:
        # The class folder is the instructor's and may be closed to other users (a 0700 folder of root's): what
        # the unprivileged user cannot open is read with the grader's rights, still through the same descriptors
        # (no link followed, no hard link, the same caps), never giving a student 0 for the instructor's modes.
        files, missing, _ = _read_any(folder, modules, max_bytes, None, None)
    return files, missing


def _read_any(folder, modules, max_bytes, uid, gid, nested_ok=True) -> tuple[dict[str, bytes], dict[str, str], bool]:
    """What students really hand in: the ``<module>.py`` files (or ``exercises/``), else a module's notebook
    ``<module>.ipynb`` (its code cells, as the course's nbgrader notebooks lay them out), a folder nested one level
    (a "Download ZIP" of a repository) or a zip or tar of any of these, read in memory (nothing is extracted: no
    path outside the folder, no link, capped in size and number of files). A module still missing says what the
    folder holds that looks like a submission ("found X, expected Y")."""
    files, missing, denied = _read_submission(folder, modules, max_bytes, uid, gid)
    if not any(why.endswith(ABSENT) for why in missing.values()):
        return files, missing, denied
    try:
        with _reading_as(uid, gid):
            listing = _listing(Path(folder))
    except PermissionError:
        return files, missing, True  # read again with the grader's rights (see read_submission)
    notes: list[str] = []
    # what the other modules' own files are, and the archives that were read: not look-alikes of a missing module
    used = {f"{p}{m}{suffix}" for m in modules for p in ("", "exercises/") for suffix in (".py", NOTEBOOK_SUFFIX)}
    for module in [m for m, why in missing.items() if why.endswith(ABSENT)]:
        for where in ("exercises/", ""):
            if f"{where}{module}{NOTEBOOK_SUFFIX}" in listing.files:
                with _reading_as(uid, gid):
                    data, why = _read_path(Path(folder), f"{where}{module}{NOTEBOOK_SUFFIX}", MAX_ARCHIVE_BYTES)
                _take(files, missing, module, *(from_notebook(data, module, max_bytes) if why is None else (b"", why)))
                break
    nested = [d for d in listing.folders if "/" not in d and not d.startswith((".", "__")) and d != "exercises"]
    if nested_ok and len(nested) == 1 and any(why.endswith(ABSENT) for why in missing.values()):
        inner, _, inner_denied = _read_any(Path(folder) / nested[0], modules, max_bytes, uid, gid, nested_ok=False)
        denied = denied or inner_denied
        for module, data in inner.items():
            if missing.get(module, "").endswith(ABSENT):
                _take(files, missing, module, data, None)
    for name in listing.archives:
        if not any(why.endswith(ABSENT) for why in missing.values()):
            break
        with _reading_as(uid, gid):
            data, why = _read_path(Path(folder), name, MAX_ARCHIVE_BYTES)
        found, why = from_archive(name, data, modules, max_bytes) if why is None else ({}, why)
        if why is not None:
            notes.append(why)
        if found:
            used.add(name)
        for module, (source, problem) in found.items():
            if missing.get(module, "").endswith(ABSENT):
                _take(files, missing, module, source, problem)
    for module, why in list(missing.items()):
        if why.endswith(ABSENT):
            seen = notes + [n for n in listing.look_alikes(module) if n not in used]
            if seen:
                missing[module] = (
                    f"{why}: found {'; '.join(seen)}; expected {module}.py (or exercises/{module}.py, "
                    f"{module}.ipynb, or a zip or tar of them)"
                )
    return files, missing, denied


def _take(files: dict, missing: dict, module: str, data: bytes, why: str | None) -> None:
    if why is None:
        files[module] = data
        missing.pop(module, None)
    else:
        missing[module] = why


class _Listing:
    """The names in a student's folder, its ``exercises/`` and one level below (no link followed)."""

    def __init__(self):
        self.files: list[str] = []
        self.folders: list[str] = []

    @property
    def archives(self) -> list[str]:
        return [n for n in self.files if "/" not in n and n.lower().endswith(ARCHIVE_SUFFIXES)]

    def look_alikes(self, module: str) -> list[str]:
        """Files that look like ``module``'s submission under another name or form."""
        import difflib

        seen = []
        for name in self.files:
            base = name.rsplit("/", 1)[-1].lower()
            stem = base.split(".", 1)[0]
            if (
                module in base.replace("-", "_").replace(" ", "_")
                or difflib.get_close_matches(stem, [module], n=1, cutoff=0.75)
                or base.endswith((".py", NOTEBOOK_SUFFIX, ".rar", ".7z", *ARCHIVE_SUFFIXES))
            ) and not base.startswith((".", "test_")):
                seen.append(name)
        return seen[:5]


def _listing(folder: Path) -> _Listing:
    listing = _Listing()

    def walk(path: Path, prefix: str, depth: int) -> None:
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except PermissionError:
            if depth == 0:
                raise
            return
        except OSError:
            return
        for entry in entries[:200]:
            name = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                listing.folders.append(name)
                if depth < 2:
                    walk(Path(entry.path), name + "/", depth + 1)
            elif entry.is_file(follow_symlinks=False):
                listing.files.append(name)

    if not os.path.islink(folder):
        walk(folder, "", 0)
    return listing


def _read_path(folder: Path, relative: str, max_bytes: int) -> tuple[bytes, str | None]:
    """:func:`_read_regular` of ``relative`` below ``folder``, each folder on the way opened without a link."""
    parts = relative.split("/")
    fds = []
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        fds.append(fd)
        for part in parts[:-1]:
            fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            fds.append(fd)
        data, why = _read_regular(parts[-1], fd, max_bytes)
    except OSError as err:
        return b"", f"{relative} could not be read ({err.strerror})"
    finally:
        for fd in fds:
            os.close(fd)
    return data, why.replace(parts[-1], relative, 1) if why else None


def _read_submission(folder, modules, max_bytes, uid, gid) -> tuple[dict[str, bytes], dict[str, str], bool]:
    files: dict[str, bytes] = {}
    missing: dict[str, str] = {}
    denied = False
    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as err:
        problem = (
            "is a symbolic link, not a folder"
            if err.errno in (errno.ELOOP, errno.ENOTDIR)
            else f"cannot be opened ({err.strerror})"
        )
        return {}, {m: f"your submission's folder {problem}" for m in modules}, False
    base = top
    try:
        with _reading_as(uid, gid):
            try:
                mode = os.stat("exercises", dir_fd=top, follow_symlinks=False).st_mode
            except FileNotFoundError:
                mode = None
            except OSError as err:
                return (
                    {},
                    {m: f"exercises/ could not be read: {err.strerror}" for m in modules},
                    err.errno == errno.EACCES,
                )
            if mode is not None and stat.S_ISLNK(mode):
                return (
                    {},
                    {
                        m: "exercises is a symbolic link, not a folder of regular files; submit the files themselves"
                        for m in modules
                    },
                    False,
                )
            if mode is not None and stat.S_ISDIR(mode):
                try:
                    base = os.open("exercises", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                except OSError as err:
                    return (
                        {},
                        {m: f"exercises/ could not be read: {err.strerror}" for m in modules},
                        err.errno == errno.EACCES,
                    )
            for module in modules:
                name = f"{module}.py"
                data, why = _read_regular(name, base, max_bytes)
                if why is None:
                    files[module] = data
                else:
                    missing[module] = why
                    denied = denied or "readable by other users" in why
    finally:
        if base != top:
            os.close(base)
        os.close(top)
    return files, missing, denied


def _read_regular(name: str, folder_fd: int, max_bytes: int) -> tuple[bytes, str | None]:
    """The bytes of the regular file ``name`` in the open folder, or why it is not taken."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)  # no link, no pipe waited on
    except FileNotFoundError:
        return b"", f"{name} is missing from your submission"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return b"", f"{name} is a symbolic link, not a regular file; submit the file itself"
        return b"", f"{name} could not be read ({err.strerror}): it must be readable by other users"
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # before a file object: a folder named like the module cannot be one
        os.close(fd)
        return b"", f"{name} is not a regular file; submit the file itself"
    with os.fdopen(fd, "rb") as f:
        if info.st_nlink != 1:
            return b"", f"{name} is a link to another file (a hard link), not a regular file of its own; submit a copy"
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        return b"", f"{name} is larger than {max_bytes // 1000} kB"
    return data, None


@contextlib.contextmanager
def _reading_as(uid: int | None, gid: int | None):
    """While active, this thread opens files with the rights of ``uid``/``gid`` (Linux's per-thread fsuid), when
    the grader is root; otherwise with its own (which are not root's)."""
    if uid is None or os.geteuid() != 0 or not sys.platform.startswith("linux"):
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.setfsgid(gid if gid is not None else uid)
    libc.setfsuid(uid)
    try:
        yield
    finally:
        libc.setfsuid(0)
        libc.setfsgid(0)
