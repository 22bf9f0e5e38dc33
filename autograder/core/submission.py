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

from autograder.core import syntax
from autograder.core.failures import NotStarted


class SubmissionImportError(Exception):
    """The student's module could not be imported; the message says why, in one line (it starts with
    :data:`IMPORT_FAILED`: a failure of the module, not of any one function's checks)."""


IMPORT_FAILED = "your module could not be imported"


def is_import_failure(message: str) -> bool:
    """Whether a check's message is its module's import failure (:class:`SubmissionImportError`), which costs every
    function of the module but is no failure of any function's own checks."""
    return message.startswith(IMPORT_FAILED)


def encoding_problem(data: bytes, name: str) -> str | None:
    """None when Python can read ``data`` as source (UTF-8, or the encoding its ``coding:`` line declares); else
    one line naming the file and the encoding it looks like."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
        return None
    except (SyntaxError, UnicodeDecodeError, LookupError):
        pass
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        looks = "UTF-16 (a byte order mark at the start)"
    else:
        try:
            data.decode("cp1252")
            looks = "Windows-1252 (cp1252) or Latin-1"
        except UnicodeDecodeError:
            looks = "an encoding other than UTF-8"
    return (
        f"{IMPORT_FAILED}: {name} is not UTF-8 text (it looks like {looks}); save it as UTF-8 "
        "(in your editor: Save with Encoding, UTF-8) and run the checks again"
    )


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
    files, missing, denied = _read_any(folder, modules, max_bytes, uid, gid)
    if denied and uid is not None:
        # The class folder is the instructor's and may be closed to other users (a 0700 folder of root's): what
        # the unprivileged user cannot open is read with the grader's rights, still through the same descriptors
        # (no link followed, no hard link, the same caps), never giving a student 0 for the instructor's modes.
        files, missing, _ = _read_any(folder, modules, max_bytes, None, None)
    return files, missing


NOTEBOOK_SUFFIX = ".ipynb"
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
MAX_ARCHIVE_BYTES = 20_000_000  # an archive or a notebook (outputs included) as handed in
MAX_ARCHIVE_FILES = 2000
MAX_ARCHIVE_UNPACKED = 50_000_000
_ABSENT = "is missing from your submission"


def _read_any(folder, modules, max_bytes, uid, gid, nested_ok=True) -> tuple[dict[str, bytes], dict[str, str], bool]:
    """What students really hand in: the ``<module>.py`` files (or ``exercises/``), else a module's notebook
    ``<module>.ipynb`` (its code cells, as the course's nbgrader notebooks lay them out), a folder nested one level
    (a "Download ZIP" of a repository) or a zip or tar of any of these, read in memory (nothing is extracted: no
    path outside the folder, no link, capped in size and number of files). A module still missing says what the
    folder holds that looks like a submission ("found X, expected Y")."""
    files, missing, denied = _read_submission(folder, modules, max_bytes, uid, gid)
    if not any(why.endswith(_ABSENT) for why in missing.values()):
        return files, missing, denied
    try:
        with _reading_as(uid, gid):
            listing = _listing(Path(folder))
    except PermissionError:
        return files, missing, True  # read again with the grader's rights (see read_submission)
    notes: list[str] = []
    # what the other modules' own files are, and the archives that were read: not look-alikes of a missing module
    used = {f"{p}{m}{suffix}" for m in modules for p in ("", "exercises/") for suffix in (".py", NOTEBOOK_SUFFIX)}
    for module in [m for m, why in missing.items() if why.endswith(_ABSENT)]:
        for where in ("exercises/", ""):
            if f"{where}{module}{NOTEBOOK_SUFFIX}" in listing.files:
                with _reading_as(uid, gid):
                    data, why = _read_path(Path(folder), f"{where}{module}{NOTEBOOK_SUFFIX}", MAX_ARCHIVE_BYTES)
                _take(files, missing, module, *(_from_notebook(data, module, max_bytes) if why is None else (b"", why)))
                break
    nested = [d for d in listing.folders if "/" not in d and not d.startswith((".", "__")) and d != "exercises"]
    if nested_ok and len(nested) == 1 and any(why.endswith(_ABSENT) for why in missing.values()):
        inner, _, inner_denied = _read_any(Path(folder) / nested[0], modules, max_bytes, uid, gid, nested_ok=False)
        denied = denied or inner_denied
        for module, data in inner.items():
            if missing.get(module, "").endswith(_ABSENT):
                _take(files, missing, module, data, None)
    for name in listing.archives:
        if not any(why.endswith(_ABSENT) for why in missing.values()):
            break
        with _reading_as(uid, gid):
            data, why = _read_path(Path(folder), name, MAX_ARCHIVE_BYTES)
        found, why = _from_archive(name, data, modules, max_bytes) if why is None else ({}, why)
        if why is not None:
            notes.append(why)
        if found:
            used.add(name)
        for module, (source, problem) in found.items():
            if missing.get(module, "").endswith(_ABSENT):
                _take(files, missing, module, source, problem)
    for module, why in list(missing.items()):
        if why.endswith(_ABSENT):
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


def notebook_source(data: bytes) -> str:
    """A notebook's code as a module: its code cells in order, without the autograded check cells of the course's
    nbgrader notebooks, the course's device set-up lines and IPython's ``%``/``!`` lines. Raises ValueError when it
    is not a notebook."""
    import json

    notebook = json.loads(data.decode("utf-8"))
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("it has no cells")
    chunks = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
        if isinstance(meta, dict) and meta.get("grade") and not meta.get("solution"):
            continue  # a check cell: the checks are the course's own
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        lines = [
            ""
            if line.lstrip().startswith(("%", "!", "from autograder.notebook import", "use_course_backend("))
            else line
            for line in text.splitlines()
        ]
        chunks.append("\n".join(lines))
    return "\n\n".join(chunks) + "\n"


def _from_notebook(data: bytes, module: str, max_bytes: int) -> tuple[bytes, str | None]:
    try:
        source = notebook_source(data).encode("utf-8")
    except (ValueError, UnicodeDecodeError) as err:
        return b"", f"{module}.py {_ABSENT}: found {module}{NOTEBOOK_SUFFIX}, but it is not a notebook ({err})"
    if len(source) > max_bytes:
        return b"", f"{module}.py is larger than {max_bytes // 1000} kB (the code of {module}{NOTEBOOK_SUFFIX})"
    return source, None


def _from_archive(
    name: str, data: bytes, modules, max_bytes: int
) -> tuple[dict[str, tuple[bytes, str | None]], str | None]:
    """The modules a zip or tar holds (``<module>.py``, ``<module>.ipynb``, in ``exercises/`` or one folder
    down), read in memory; or why the archive is not used (a member that is a link or leaves the folder, too many
    files, too large unpacked, not an archive)."""
    import io
    import posixpath
    import tarfile
    import zipfile

    members: dict[str, bytes] = {}
    total = 0

    def accept(path: str, size: int) -> str | None:
        nonlocal total
        clean = posixpath.normpath(path)
        if path.startswith("/") or clean == ".." or clean.startswith("../") or "\\" in path:
            return f"{name} was not used: {path!r} would be outside your folder"
        total += size
        if total > MAX_ARCHIVE_UNPACKED:
            return f"{name} was not used: more than {MAX_ARCHIVE_UNPACKED // 1_000_000} MB unpacked"
        return None

    wanted = {}
    for module in modules:
        for stem in (f"{module}.py", f"{module}{NOTEBOOK_SUFFIX}"):
            wanted[stem] = module
    try:
        if name.lower().endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                infos = archive.infolist()
                if len(infos) > MAX_ARCHIVE_FILES:
                    return {}, f"{name} was not used: more than {MAX_ARCHIVE_FILES} files"
                for info in infos:
                    if stat.S_ISLNK(info.external_attr >> 16):
                        return {}, f"{name} was not used: {info.filename} is a link; zip the files themselves"
                    why = accept(info.filename, info.file_size)
                    if why:
                        return {}, why
                for info in infos:
                    if not info.is_dir() and posixpath.basename(info.filename) in wanted:
                        with archive.open(info) as f:
                            members[posixpath.normpath(info.filename)] = f.read(MAX_ARCHIVE_BYTES + 1)
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                count = 0
                chosen: list[tarfile.TarInfo] = []
                for entry in tar:
                    count += 1
                    if count > MAX_ARCHIVE_FILES:
                        return {}, f"{name} was not used: more than {MAX_ARCHIVE_FILES} files"
                    if entry.issym() or entry.islnk():
                        return {}, f"{name} was not used: {entry.name} is a link; pack the files themselves"
                    if not (entry.isfile() or entry.isdir()):
                        return {}, f"{name} was not used: {entry.name} is not a regular file"
                    why = accept(entry.name, entry.size)
                    if why:
                        return {}, why
                    if entry.isfile() and posixpath.basename(entry.name) in wanted:
                        chosen.append(entry)
                for entry in chosen:
                    packed = tar.extractfile(entry)
                    members[posixpath.normpath(entry.name)] = packed.read(MAX_ARCHIVE_BYTES + 1) if packed else b""
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError, RuntimeError) as err:
        return {}, f"{name} was not used: it could not be opened as an archive ({err})"
    found: dict[str, tuple[bytes, str | None]] = {}
    for path in sorted(members, key=lambda p: (p.count("/"), p)):
        parts = path.split("/")
        base = parts[-1]
        folders = [p for p in parts[:-1] if p != "exercises"]
        if len(folders) > 1 or wanted[base] in found:
            continue
        module = wanted[base]
        if base.endswith(NOTEBOOK_SUFFIX):
            found[module] = _from_notebook(members[path], module, max_bytes)
        elif len(members[path]) > max_bytes:
            found[module] = (b"", f"{module}.py is larger than {max_bytes // 1000} kB (in {name})")
        else:
            found[module] = (members[path], None)
    return found, None


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
        raise SubmissionImportError(f"{IMPORT_FAILED}: {path.name} is missing")
    problem = encoding_problem(path.read_bytes(), path.name)
    if problem:
        raise SubmissionImportError(problem)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a file's path always has a spec with a loader
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        _restore(name, previous)
        raise SubmissionImportError(f"{IMPORT_FAILED}: SyntaxError line {err.lineno}: {err.msg}") from None
    except BaseException as err:  # noqa: BLE001 - anything at import time is the student's
        _restore(name, previous)
        where = _student_line(err, path)
        raise SubmissionImportError(f"{IMPORT_FAILED}: {type(err).__name__}{where}: {err}") from None
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
    stubs = set()
    for node in syntax.parse(source).body:
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


# -- given code -------------------------------------------------------------------------------------
# A module's given code is what its stub file defines besides the graded functions (a model class, a data maker,
# a loss). A student who changes it is told once, naming it; the checks use the course's own, so that no function
# pays for it (whether its code is the reference's or not).


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def given_definitions(source: str, graded: set[str] | frozenset[str]) -> dict[str, ast.stmt]:
    """The given code of a module's source: each top-level definition that is not a graded function (imports and
    dunder names aside), by name, in source order. Raises SyntaxError when it does not parse."""
    found: dict[str, ast.stmt] = {}
    for node in syntax.parse(source).body:
        for name in _defined_names(node):
            if name not in graded and not name.startswith("__"):
                found[name] = node
    return found


def _shape(node: ast.AST) -> str:
    """A definition as compared: its AST without docstrings or positions."""
    import copy

    node = copy.deepcopy(node)
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if (
            isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            inner.body = body[1:] or [ast.Pass()]
    return ast.dump(node)


def changed_givens(student_source: str, course_source: str, graded: set[str] | frozenset[str]) -> list[str]:
    """The given names whose definition in the student's source differs from the course's (or is missing),
    in the course's order; none when the student's source does not parse (its import says why)."""
    try:
        mine = given_definitions(student_source, graded)
    except (SyntaxError, ValueError):
        return []
    course = given_definitions(course_source, graded)
    return [name for name, node in course.items() if name not in mine or _shape(mine[name]) != _shape(node)]


def restore_givens(module: ModuleType, course_file: Path, graded: set[str] | frozenset[str]) -> list[str]:
    """Put the course's own given code (from ``course_file``, the course's stub of the module) in place of what the
    student changed, in the student's loaded ``module``; returns the names restored."""
    try:
        if module.__file__ is None:
            return []
        student_source = Path(module.__file__).read_text(encoding="utf-8")
        course_source = Path(course_file).read_text(encoding="utf-8")
    except (OSError, TypeError, ValueError):
        return []
    names = changed_givens(student_source, course_source, graded)
    if names:
        course = given_definitions(course_source, graded)
        nodes = list(dict.fromkeys(course[name] for name in names))
        # the course's own imports first (``nn``, ``jnp``: the names its given code was written with), in a copy of
        # the student's namespace, so that their own names stay as they wrote them
        imports = [n for n in syntax.parse(course_source).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        namespace = dict(module.__dict__)
        code = syntax.compile_tree(ast.Module(body=[*imports, *nodes], type_ignores=[]), str(course_file), "exec")
        exec(code, namespace)  # noqa: S102 - the course's own code, beside the student's module
        for name in names:
            if name in namespace:
                setattr(module, name, namespace[name])
    return names


def given_note(module: str, names: list[str]) -> str:
    """The one message a student gets for changed given code."""
    shown = ", ".join(f"{module}.{name}" for name in names)
    return (
        f"given code changed: {shown} differs from the course's given code; the checks used the course's own, so no "
        f"function pays for it (put the course's version back: it is not yours to change)"
    )
