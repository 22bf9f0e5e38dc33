"""Loading a student's module from a folder, and telling a stub from an attempt."""

from __future__ import annotations

import ast
import contextlib
import ctypes
import errno
import importlib.util
import os
import stat
import sys
import traceback
from pathlib import Path
from types import ModuleType

from autograder.core.failures import NotStarted


class SubmissionImportError(Exception):
    """The student's module could not be imported; the message says why, in one line."""


MAX_SUBMITTED_FILE_BYTES = 1_000_000
# Whose rights a submission is read with, when the grader runs as root: "nobody", never the grader's.
READER_UID = 65534
READER_GID = 65534


def read_submission(
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
    files, missing, denied = _read_submission(folder, modules, max_bytes, uid, gid)
    if denied and uid is not None:
        # The class folder is the instructor's and may be closed to other users (a 0700 folder of root's): what
        # the unprivileged user cannot open is read with the grader's rights, still through the same descriptors
        # (no link followed, no hard link, the same caps), never giving a student 0 for the instructor's modes.
        files, missing, _ = _read_submission(folder, modules, max_bytes, None, None)
    return files, missing


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
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return b"", f"{name} is not a regular file; submit the file itself"
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


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at ``path`` as a fresh module called ``name``.

    Errors raised while importing become a :class:`SubmissionImportError` with
    the error and the line in the student's file, not a traceback.
    """
    path = Path(path)
    if not path.is_file():
        raise SubmissionImportError(f"{path.name} is missing")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a file's path always has a spec with a loader
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        _restore(name, previous)
        raise SubmissionImportError(
            f"your module could not be imported: SyntaxError line {err.lineno}: {err.msg}"
        ) from None
    except BaseException as err:  # noqa: BLE001 - anything at import time is the student's
        _restore(name, previous)
        where = _student_line(err, path)
        raise SubmissionImportError(f"your module could not be imported: {type(err).__name__}{where}: {err}") from None
    return module


def _restore(name: str, previous: ModuleType | None) -> None:
    if previous is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = previous


def _student_line(err: BaseException, path: Path) -> str:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    return f" line {frames[-1].lineno}" if frames else ""


def stub_functions(path: Path) -> set[str]:
    """Top-level functions whose body is still only ``raise NotImplementedError``.

    A docstring, comments and ``pass`` may stand beside the ``raise``; anything
    else counts as an attempt.
    """
    return stubs_in_source(Path(path).read_text(encoding="utf-8"))


def stubs_in_source(source: str) -> set[str]:
    """:func:`stub_functions` of Python source text (raises ``SyntaxError`` if it does not parse)."""
    tree = ast.parse(source)
    stubs = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _is_stub_body(node.body):
            stubs.add(node.name)
        elif isinstance(node, ast.ClassDef):
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            if methods and all(_is_stub_body(m.body) for m in methods):
                stubs.add(node.name)
    return stubs


def _is_stub_body(body: list[ast.stmt]) -> bool:
    rest = [
        stmt
        for stmt in body
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)) and not isinstance(stmt, ast.Pass)
    ]
    if len(rest) != 1 or not isinstance(rest[0], ast.Raise) or rest[0].exc is None:
        return False
    exc = rest[0].exc
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(target, ast.Name) and target.id == "NotImplementedError"


def not_started(module: str, function: str) -> NotStarted:
    return NotStarted(f"{module}.{function} is not started yet (it still raises NotImplementedError)")
