"""``autograder reset MODULE[.FUNCTION]``: put a stub back as it was released.

Where the released stub comes from, first found wins:

1. ``.autograder/pristine/<module>.py``: a copy of ``exercises/<module>.py``
   taken whenever a student command (``watch``, ``status``, ``reset``, ``hint``)
   sees every function of the module still a stub, i.e. as released. It needs
   neither ``solutions/`` nor git, so it works in a student release.
2. git: the newest committed version of ``exercises/<module>.py`` in which
   the function (or every function of the module) is still a stub. In the kit
   that is ``HEAD``; in a student's repository, the release commit.

The student's version is first copied to ``.autograder/backups/<module>.py.<timestamp>``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import time
from pathlib import Path

from autograder.core import syntax
from autograder.core.course import Course
from autograder.core.progress import FOLDER
from autograder.core.submission import stub_functions, stubs_in_source

PRISTINE = "pristine"
BACKUPS = "backups"


class ResetError(Exception):
    """The stub cannot be put back; the message says why."""


def pristine_path(course: Course, module: str) -> Path:
    return course.root / FOLDER / PRISTINE / f"{module}.py"


def keep_pristine_copies(course: Course) -> None:
    """Copy every module file that is exactly as released (all functions stubs) to the hidden folder."""
    for module in course.modules:
        path = course.exercise_path(module.name)
        try:
            stubs = stub_functions(path)
        except (OSError, SyntaxError):
            continue
        if all(fn.name in stubs for fn in module.functions):
            target = pristine_path(course, module.name)
            if not target.is_file() or target.read_bytes() != path.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


def _stubs_in(source: str) -> set[str]:
    try:
        return stubs_in_source(source)
    except SyntaxError:
        return set()


def _defined(tree: ast.Module) -> dict[str, ast.stmt]:
    return {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def _git_versions(course: Course, module: str):
    relative = course.exercise_path(module).relative_to(course.root).as_posix()
    try:
        log = subprocess.run(
            ["git", "log", "--format=%H", "--", relative], cwd=course.root, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return
    for commit in log:
        shown = subprocess.run(
            ["git", "show", f"{commit}:./{relative}"], cwd=course.root, capture_output=True, text=True
        )
        if shown.returncode == 0:
            yield f"git {commit[:10]}", shown.stdout


def released_source(course: Course, module: str, names: set[str]) -> tuple[str, str]:
    """``(where, source)`` of the released file in which all of ``names`` are stubs."""
    pristine = pristine_path(course, module)
    if pristine.is_file():
        source = pristine.read_text(encoding="utf-8")
        if names <= _stubs_in(source):
            return f"{pristine.relative_to(course.root)}", source
    for where, source in _git_versions(course, module):
        if names <= _stubs_in(source):
            return where, source
    raise ResetError(
        f"no released version of exercises/{module}.py found (neither {FOLDER}/{PRISTINE}/{module}.py "
        "nor a git commit in which it is still a stub)"
    )


def _with_definition(current: str, released: str, name: str) -> str:
    """``current`` with its top-level ``name`` replaced by the released one (appended if missing)."""
    new_node = _defined(syntax.parse(released))[name]
    new_lines = released.splitlines()[_first_line(new_node) - 1 : new_node.end_lineno]
    lines = current.splitlines()
    old = _defined(syntax.parse(current)).get(name)
    if old is None:
        return current.rstrip("\n") + "\n\n\n" + "\n".join(new_lines) + "\n"
    lines[_first_line(old) - 1 : old.end_lineno] = new_lines
    return "\n".join(lines) + "\n"


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def plan(course: Course, target: str) -> tuple[str, list[str]]:
    """``(module, functions)`` a ``MODULE[.FUNCTION]`` argument names."""
    module, _, function = target.partition(".")
    try:
        names = [fn.name for fn in course.module(module).functions]
    except KeyError:
        raise ResetError(
            f"{module!r} is not a module of this course ({', '.join(m.name for m in course.modules)})"
        ) from None
    if function and function not in names:
        raise ResetError(f"{module} has no function {function!r} ({', '.join(names)})")
    return module, [function] if function else names


def reset(course: Course, target: str) -> tuple[Path, str]:
    """Put the stub(s) back; returns the backup's path and where the stub came from."""
    module, functions = plan(course, target)
    path = course.exercise_path(module)
    where, released = released_source(course, module, set(functions))
    backups = course.root / FOLDER / BACKUPS
    backups.mkdir(parents=True, exist_ok=True)
    backup = backups / f"{module}.py.{time.strftime('%Y%m%d-%H%M%S')}"
    n = 1
    while backup.exists():
        backup = backup.with_name(f"{module}.py.{time.strftime('%Y%m%d-%H%M%S')}.{n}")
        n += 1
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    backup.write_text(current, encoding="utf-8")
    if len(functions) == len(course.module(module).functions) or not current:
        new = released
    else:
        try:
            new = _with_definition(current, released, functions[0])
        except SyntaxError:
            raise ResetError(
                f"exercises/{module}.py has a syntax error, so {functions[0]} cannot be put back alone; "
                f"`autograder reset {module}` resets the whole file"
            ) from None
    path.write_text(new, encoding="utf-8")
    return backup, where
