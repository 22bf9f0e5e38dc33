"""A module's given code: what its stub file defines besides the graded functions (a model class, a data maker,
a loss). A student who changes it is told once, naming it; the checks use the course's own, so that no function
pays for it (whether its code is the reference's or not)."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

from autograder.core import syntax


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
