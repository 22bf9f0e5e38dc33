"""``course.toml``: the one source of truth for order, points, hints and limits.

``load_course(root)`` parses and validates it; every error names the key or
file at fault.  Function names are checked against ``exercises/<module>.py``
and ``solutions/<module>.py`` by parsing them (nothing is imported), so a
broken student file never breaks the course definition.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import syntax

FORMAT_VERSION = 1

_TOP_KEYS = {
    "format",
    "title",
    "welcome",
    "grading",
    "hints",
    "modules",
    "late",
    "deliberate_gaps",
}  # [late]: autograder.grading.desk.late; deliberate_gaps: autograder.authoring.gaps
_GRADING_KEYS = {"timeout_per_function", "memory_limit_mb"}
_HINTS_KEYS = {"reveal_after_failed_runs"}
_MODULE_KEYS = {"name", "topic", "functions"}
_FUNCTION_KEYS = {"name", "points", "hint", "reveal", "hidden"}


class CourseError(ValueError):
    """``course.toml`` is malformed or disagrees with the files on disk."""


@dataclass(frozen=True)
class Function:
    name: str
    module: str
    points: float
    hint: str
    hidden: tuple[str, ...] = ()
    reveal: str = ""  # the direct hint, shown only after repeated failures or on request

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class Module:
    name: str
    topic: str
    functions: tuple[Function, ...]

    def function(self, name: str) -> Function:
        for fn in self.functions:
            if fn.name == name:
                return fn
        raise KeyError(f"{self.name} has no function {name!r}")

    @property
    def points(self) -> float:
        return sum(fn.points for fn in self.functions)


@dataclass(frozen=True)
class Grading:
    timeout_per_function: float = 20.0
    memory_limit_mb: int = 4096


@dataclass(frozen=True)
class Hints:
    """When a function's ``reveal`` (the direct hint) is shown without being asked for."""

    reveal_after_failed_runs: int = 3  # separate local runs in which the function failed


@dataclass(frozen=True)
class Course:
    root: Path
    title: str
    welcome: str
    modules: tuple[Module, ...]
    grading: Grading = field(default_factory=Grading)
    hints: Hints = field(default_factory=Hints)

    def module(self, name: str) -> Module:
        for mod in self.modules:
            if mod.name == name:
                return mod
        raise KeyError(f"course.toml has no module {name!r}")

    @property
    def functions(self) -> tuple[Function, ...]:
        return tuple(fn for mod in self.modules for fn in mod.functions)

    @property
    def points(self) -> float:
        return sum(mod.points for mod in self.modules)

    def exercise_path(self, module: str) -> Path:
        return self.root / "exercises" / f"{module}.py"

    def solution_path(self, module: str) -> Path:
        return self.root / "solutions" / f"{module}.py"

    def checks_path(self, module: str) -> Path:
        return self.root / "exercises" / f"test_{module}.py"


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a ``course.toml``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "course.toml").is_file():
            return folder
    return None


def top_level_names(path: Path) -> set[str]:
    """Names a Python file defines at top level (def, class, assignment)."""
    tree = syntax.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _unknown(table: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise CourseError(f"course.toml: unknown key(s) {extra} in {where} (allowed: {sorted(allowed)})")


def _require(table: dict, key: str, kind: type | tuple, where: str):
    if key not in table:
        raise CourseError(f"course.toml: {where} is missing {key!r}")
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise CourseError(f"course.toml: {where}.{key} must be {kind_in_words(kind)}, got {value!r}")
    return value


_KIND_WORDS = {
    int: "a whole number",
    float: "a number",
    str: 'a string (in "quotes")',
    bool: "true or false",
    list: "a list ([...])",
    dict: "a table",
}


def kind_in_words(kind: type | tuple) -> str:
    """What a TOML value must be, as a person says it ("a whole number or a number" reads as "a number")."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if set(kinds) == {int, float}:
        return "a number"
    return " or ".join(_KIND_WORDS.get(k, getattr(k, "__name__", str(k))) for k in kinds)


def parse_course(data: dict, root: Path) -> Course:
    _unknown(data, _TOP_KEYS, "the top level")
    version = _require(data, "format", int, "the top level")
    if version != FORMAT_VERSION:
        raise CourseError(f"course.toml: format {version} is not supported (this kit reads format {FORMAT_VERSION})")
    title = _require(data, "title", str, "the top level")
    welcome = _require(data, "welcome", str, "the top level")

    grading_table = data.get("grading", {})
    _unknown(grading_table, _GRADING_KEYS, "[grading]")
    for key, kind in (("timeout_per_function", (int, float)), ("memory_limit_mb", int)):
        if key in grading_table:
            value = _require(grading_table, key, kind, "[grading]")
            if value <= 0:
                raise CourseError(f"course.toml: [grading].{key} must be {kind_in_words(kind)} above 0, got {value!r}")
    grading = Grading(**grading_table)
    hints_table = data.get("hints", {})
    _unknown(hints_table, _HINTS_KEYS, "[hints]")
    runs = hints_table.get("reveal_after_failed_runs", Hints.reveal_after_failed_runs)
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise CourseError(f"course.toml: [hints].reveal_after_failed_runs must be a positive integer, got {runs!r}")
    hints = Hints(runs)

    modules: list[Module] = []
    seen_modules: set[str] = set()
    for i, mod in enumerate(_require(data, "modules", list, "the top level")):
        where = f"modules[{i}]"
        _unknown(mod, _MODULE_KEYS, where)
        name = _require(mod, "name", str, where)
        where = f"module {name!r}"
        if name in seen_modules:
            raise CourseError(f"course.toml: module {name!r} is listed twice")
        seen_modules.add(name)
        functions: list[Function] = []
        seen_functions: set[str] = set()
        for j, fn in enumerate(_require(mod, "functions", list, where)):
            fwhere = f"{where} functions[{j}]"
            _unknown(fn, _FUNCTION_KEYS, fwhere)
            fname = _require(fn, "name", str, fwhere)
            fwhere = f"function {name}.{fname}"
            if fname in seen_functions:
                raise CourseError(f"course.toml: function {name}.{fname} is listed twice")
            seen_functions.add(fname)
            points = _require(fn, "points", (int, float), fwhere)
            if points <= 0:
                raise CourseError(f"course.toml: {fwhere}.points must be positive, got {points}")
            hidden = fn.get("hidden", [])
            if not isinstance(hidden, list) or not all(isinstance(h, str) for h in hidden):
                raise CourseError(f"course.toml: {fwhere}.hidden must be a list of check names")
            reveal = fn.get("reveal", "")
            if not isinstance(reveal, str):
                raise CourseError(f"course.toml: {fwhere}.reveal must be a string")
            functions.append(
                Function(fname, name, float(points), _require(fn, "hint", str, fwhere), tuple(hidden), reveal)
            )
        if not functions:
            raise CourseError(f"course.toml: {where} lists no functions")
        modules.append(Module(name, _require(mod, "topic", str, where), tuple(functions)))
    return Course(root=root, title=title, welcome=welcome, modules=tuple(modules), grading=grading, hints=hints)


def check_files(course: Course) -> None:
    """Every module has its three files and every function exists in both.

    A student release has a recorded oracle (``oracle/<module>.json``) instead of ``solutions/``.
    """
    for mod in course.modules:
        released = (
            not course.solution_path(mod.name).is_file() and (course.root / "oracle" / f"{mod.name}.json").is_file()
        )
        needed = [course.exercise_path(mod.name), course.checks_path(mod.name)]
        needed += [] if released else [course.solution_path(mod.name)]
        for path in needed:
            if not path.is_file():
                raise CourseError(
                    f"course.toml: module {mod.name!r} needs {path.relative_to(course.root)}, which is missing"
                )
        for path in [p for p in needed if p != course.checks_path(mod.name)]:
            defined = top_level_names(path)
            missing = [fn.name for fn in mod.functions if fn.name not in defined]
            if missing:
                raise CourseError(f"course.toml: {path.relative_to(course.root)} does not define {', '.join(missing)}")


def load_course(root: Path | str, *, verify_files: bool = True) -> Course:
    root = Path(root).resolve()
    path = root / "course.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError(f"no course.toml in {root}") from None
    except tomllib.TOMLDecodeError as err:
        raise CourseError(f"course.toml is not valid TOML: {err}") from None
    course = parse_course(data, root)
    if verify_files:
        check_files(course)
    return course
