"""What grading a course's modules imports, read from the files (never run): the top-level names of the libraries,
for the imports a grading process makes before it forks (:func:`autograder.runtime.preload.grading_set`), and the
kit's own modules on the way.

Runs in the grader's process, on the instructor's files (:class:`~autograder.grading.isolation.scratch.Snapshot`'s).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from autograder.core import syntax

_MODULE_FILES = (("exercises", ""), ("exercises", "test_"), ("solutions", ""))
# What every grading process runs of the kit: the student's child, the trusted verifier and the course's plugin.
_GRADING_KIT = (
    "autograder/grading/untrusted/child.py",
    "autograder/grading/trusted/verifier.py",
    "autograder/plugin.py",
    "autograder/pytest_plugin/hooks.py",
)
_BLOCKS, _CLAUSES = ("body", "orelse", "finalbody", "handlers", "cases"), (ast.stmt, ast.excepthandler, ast.match_case)


def _imports(source: bytes) -> set[tuple[str, bool]]:
    """The dotted names ``source`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``), each with whether
    a function encloses the import (deferred to a call); none when it does not parse. One walk of its statements
    (every ``grade`` call reads the kit's files this way before its first sandbox starts)."""
    try:
        tree = syntax.parse(source)
    except (ValueError, SyntaxError):
        return set()
    names: set[tuple[str, bool]] = set()
    pending: list[tuple[ast.AST, bool]] = [(tree, False)]
    while pending:
        node, deferred = pending.pop()
        if isinstance(node, ast.Import):
            names.update((alias.name, deferred) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add((node.module, deferred))
            names.update((f"{node.module}.{alias.name}", deferred) for alias in node.names)
        inside = deferred or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        pending.extend((child, inside) for child in _statements_in(node))
    return names


def _statements_in(node: ast.AST) -> list[ast.AST]:
    """The statements and clauses directly in ``node``'s blocks: an import is a statement, no expression is visited."""
    return [c for f in _BLOCKS for c in getattr(node, f, None) or () if isinstance(c, _CLAUSES)]


def _kit_files(name: str) -> list[str]:
    """The kit files (snapshot paths) importing ``name`` runs: each package on the way, and the module itself."""
    parts = name.split(".")
    if parts[0] != "autograder":
        return []
    found = [f"{'/'.join(parts[:k])}/__init__.py" for k in range(1, len(parts) + 1)]
    return [*found, f"{'/'.join(parts)}.py"]


def follow_imports(
    course: Mapping[str, bytes], kit: Mapping[str, bytes], modules: list[str]
) -> tuple[set[str], set[str]]:
    """The top-level names imported (at module level or in a function) by what grading ``modules`` runs: each
    module's stub, checks and reference, the course's ``conftest.py``, the grading processes' own kit modules, and
    every kit module these import, followed (a kit module's deferred imports run where they are needed); and the kit
    files (snapshot paths) reached."""
    roots = ["conftest.py", *[f"{d}/{p}{m}.py" for m in modules for d, p in _MODULE_FILES]]
    course_files = [course[rel] for rel in roots if rel in course]
    pending = [*course_files, *(kit.get(rel) for rel in _GRADING_KIT)]
    seen, names = {rel for rel in _GRADING_KIT if rel in kit}, set()
    while pending:
        source = pending.pop()
        if source is None:
            continue
        for name, deferred in _imports(source):
            if deferred and source not in course_files:
                continue
            names.add(name.split(".")[0])
            for rel in _kit_files(name):
                if rel in kit and rel not in seen:
                    seen.add(rel)
                    pending.append(kit[rel])
    return names, seen
