"""A student's submission: read once into a :class:`Submission` (its files, why the others are missing, its
digest), loading a student's module from a folder, and telling a stub from an attempt.

The reading itself is :mod:`autograder.core.reading` (a folder, a notebook or an archive:
:mod:`autograder.core.archives`), the given code :mod:`autograder.core.givens`; their public names are
re-exported here, where the kit has always imported them.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from autograder.core import reading, syntax
from autograder.core.archives import ARCHIVE_SUFFIXES as ARCHIVE_SUFFIXES
from autograder.core.archives import MAX_ARCHIVE_BYTES as MAX_ARCHIVE_BYTES
from autograder.core.archives import MAX_ARCHIVE_FILES as MAX_ARCHIVE_FILES
from autograder.core.archives import MAX_ARCHIVE_UNPACKED as MAX_ARCHIVE_UNPACKED
from autograder.core.archives import NOTEBOOK_SUFFIX as NOTEBOOK_SUFFIX
from autograder.core.archives import notebook_source as notebook_source
from autograder.core.failures import NotStarted
from autograder.core.givens import changed_givens as changed_givens
from autograder.core.givens import given_definitions as given_definitions
from autograder.core.givens import given_note as given_note
from autograder.core.givens import restore_givens as restore_givens
from autograder.core.reading import MAX_SUBMITTED_FILE_BYTES, READER_GID, READER_UID


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


def files_digest(files: Mapping[str, bytes]) -> str:
    """One digest of named files (the name and the content of each, in name order)."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


@dataclass(frozen=True)
class Submission:
    """One student's submission as read once per run (:meth:`read`) and passed down to every step that needs it:
    the ``<module>.py`` files taken, why each other module is missing, and :attr:`digest`, what was graded (the
    record ``grade --resume`` compares)."""

    files: Mapping[str, bytes]
    missing: Mapping[str, str]
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "digest",
            files_digest(
                {
                    **{f"{m}.py": data for m, data in self.files.items()},
                    **{f"{m}.missing": why.encode() for m, why in self.missing.items()},
                }
            ),
        )

    @classmethod
    def read(
        cls,
        folder: Path,
        modules: tuple[str, ...] | list[str],
        *,
        max_bytes: int = MAX_SUBMITTED_FILE_BYTES,
        uid: int | None = READER_UID,
        gid: int | None = READER_GID,
    ) -> Submission:
        """``folder``'s submission of ``modules`` (:func:`read_submission`)."""
        files, missing = reading.read_files(folder, modules, max_bytes=max_bytes, uid=uid, gid=gid)
        return cls(files, missing)


def read_submission(
    folder: Path,
    modules: tuple[str, ...] | list[str],
    *,
    max_bytes: int = MAX_SUBMITTED_FILE_BYTES,
    uid: int | None = READER_UID,
    gid: int | None = READER_GID,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """A student's ``<module>.py`` files (from ``exercises/`` when the folder has one), and why others are missing
    (:func:`autograder.core.reading.read_files`, where the rules are). A run reads each student once, into a
    :class:`Submission`."""
    return reading.read_files(folder, modules, max_bytes=max_bytes, uid=uid, gid=gid)


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
        raise SubmissionImportError(syntax_failure(err)) from None
    except BaseException as err:  # noqa: BLE001 - anything at import time is the student's
        _restore(name, previous)
        where = _student_line(err, path)
        raise SubmissionImportError(f"{IMPORT_FAILED}: {type(err).__name__}{where}: {err}") from None
    return module


def syntax_failure(err: SyntaxError) -> str:
    """The import failure of a module Python cannot compile (its own syntax error, not one raised while it runs)."""
    where = f" line {err.lineno}" if err.lineno is not None else ""  # none for a null byte
    return f"{IMPORT_FAILED}: SyntaxError{where}: {err.msg}"


def compile_failure(data: bytes, name: str) -> str | None:
    """What importing ``data`` (the file ``name``) would fail with before any of it runs: not UTF-8 text, or not
    Python (:func:`load_module`'s message, word for word); None when it compiles, or when only running it would
    tell (a source too deep for the compiler)."""
    problem = encoding_problem(data, name)
    if problem:
        return problem
    try:
        syntax.compile_source(data, name)
    except SyntaxError as err:
        return syntax_failure(err)
    except (ValueError, RecursionError, MemoryError):  # null bytes, too deep: the import says what it says
        return None
    return None


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
