"""Loading a student's module from a folder, and telling a stub from an attempt."""

from __future__ import annotations

import ast
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from autograder.core.failures import NotStarted


class SubmissionImportError(Exception):
    """The student's module could not be imported; the message says why, in one line."""


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at ``path`` as a fresh module called ``name``.

    Errors raised while importing become a :class:`SubmissionImportError` with
    the error and the line in the student's file, not a traceback.
    """
    path = Path(path)
    if not path.is_file():
        raise SubmissionImportError(f"{path.name} is missing")
    spec = importlib.util.spec_from_file_location(name, path)
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
        raise SubmissionImportError(
            f"your module could not be imported: {type(err).__name__}{where}: {err}"
        ) from None
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
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        and not isinstance(stmt, ast.Pass)
    ]
    if len(rest) != 1 or not isinstance(rest[0], ast.Raise) or rest[0].exc is None:
        return False
    exc = rest[0].exc
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(target, ast.Name) and target.id == "NotImplementedError"


def not_started(module: str, function: str) -> NotStarted:
    return NotStarted(f"{module}.{function} is not started yet (it still raises NotImplementedError)")
