"""The course's contract (``shared/curriculum.md`` beside the course): where it is (:func:`contract_path`), its
modules' names (:func:`parse_contract`) and signatures (:func:`parse_contract_signatures`) read from its tables,
and the ``check-course`` rule that ``course.toml``, the exercises and the solutions name what it lists
(:func:`contract_problems`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from autograder.authoring.problems import Problem, relative
from autograder.core.course import Course, top_level_names

CONTRACT_ROW = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)[(`]")
CONTRACT_SIGNATURE = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)\(([^`]*)\)`")
CONTRACT_RETURNS = re.compile(r"[Rr]eturns (?:the tuple |the pair )?`\(([^`]*)\)`")
CONTRACT_MODULE = re.compile(r"^##\s+\d+\.\s+`([A-Za-z_][A-Za-z0-9_]*)`")


def contract_path(course: Course) -> Path | None:
    """``shared/curriculum.md`` beside the course folder (or beside one of its parents), if there is one."""
    for folder in course.root.parents:
        path = folder / "shared" / "curriculum.md"
        if path.is_file():
            return path
    return None


def parse_contract(text: str) -> dict[str, list[str]]:
    """``{module: [names]}`` from the contract's ``## N. `module``` sections and their ``| function |`` tables."""
    modules: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = CONTRACT_MODULE.match(line)
        if heading:
            current = modules.setdefault(heading.group(1), [])
            continue
        if line.startswith("#"):
            current = None
        row = CONTRACT_ROW.match(line)
        if row and current is not None and row.group(1) not in current:
            current.append(row.group(1))
    return modules


def _top_level_split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def parse_contract_signatures(text: str) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """``{module: {function: (argument names, output names)}}`` from the contract's tables: the
    arguments of ``name(args)``, the outputs of "returns `(a, b)`" (empty when not a tuple)."""
    found: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    current = None
    for line in text.splitlines():
        heading = CONTRACT_MODULE.match(line)
        if heading:
            current = found.setdefault(heading.group(1), {})
            continue
        if line.startswith("#"):
            current = None
        row = CONTRACT_SIGNATURE.match(line)
        if row and current is not None:
            args = [a.split("=")[0].strip().lstrip("*") for a in _top_level_split(row.group(2))]
            returns = CONTRACT_RETURNS.search(line)
            outputs = _top_level_split(returns.group(1)) if returns else []
            current[row.group(1)] = ([a for a in args if a], outputs)
    return found


def contract_problems(course: Course, path: Path | None) -> Iterator[Problem]:
    if path is None:
        return
    contract = parse_contract(path.read_text(encoding="utf-8"))
    for module in course.modules:
        if module.name not in contract:
            yield Problem(
                "course.toml",
                f"module {module.name!r} is not in the contract {path}",
                f"use the module name the contract gives (one of {sorted(contract)}), or add the module to the contract",
            )
            continue
        names = contract[module.name]
        for fn in module.functions:
            if fn.name not in names:
                yield Problem(
                    "course.toml",
                    f"function {fn.qualname} is not in the contract's table of {module.name}",
                    f"use the contract's name (one of {names}), or add it to the contract",
                )
        for kind, file in (
            ("exercise", course.exercise_path(module.name)),
            ("solution", course.solution_path(module.name)),
        ):
            if not file.is_file():
                continue
            defined = top_level_names(file)
            for name in names:
                if name not in defined:
                    yield Problem(
                        relative(course, file),
                        f"does not define {name}, which the contract lists for {module.name}",
                        f"define {name} in the {kind} file with the contract's signature",
                    )
