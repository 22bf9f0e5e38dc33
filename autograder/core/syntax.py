"""Python source to syntax trees and back to code, one thread at a time.

CPython 3.11 keeps the depth counter of its AST constructor per interpreter, not per thread: two threads that
build or read syntax trees at once (``ast.parse``, ``compile`` of a tree) can interleave (a garbage collection
running a finalizer is enough for a thread switch) and one of them fails with ``SystemError: AST constructor
recursion depth mismatch`` (python/cpython#106905). The grader parses submissions in several threads (one per
``--jobs``): a failure there was the grader's, not the student's. Every parse and tree compile of the grader goes
through here, under one lock.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.Module:
    """``ast.parse``, never at the same time as another parse or tree compile of this process."""
    with _LOCK:
        return ast.parse(source, filename, mode)  # type: ignore[return-value]


def compile_tree(
    tree: ast.Module, filename: str, mode: str = "exec", *, dont_inherit: bool = False, optimize: int = -1
) -> CodeType:
    """``compile`` of a syntax tree, under the same lock as :func:`parse`."""
    with _LOCK:
        return compile(tree, filename, mode, dont_inherit=dont_inherit, optimize=optimize)


def compile_source(source: str | bytes, filename: str) -> CodeType:
    """``compile`` of source text as an import compiles a module (``exec``, nothing inherited), under the same
    lock as :func:`parse`."""
    with _LOCK:
        return compile(source, filename, "exec", dont_inherit=True)
