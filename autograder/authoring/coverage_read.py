"""Reading back what :mod:`autograder.authoring.coverage` recorded, and what a check file's source shows: every
process's record merged into one (:func:`merge`), and the outputs a check file compares with plain Python
(:func:`compared_in_source`) or uses as an object (:func:`used_in_source`), which no wrapped helper sees.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path


def merge(path: Path) -> dict[str, dict]:
    """Every process's record of ``path`` (see :class:`Recorder`), as one."""
    merged: dict[str, dict] = {}
    for file in sorted(path.parent.glob(f"{path.name}.*.json")):
        for qualname, entry in json.loads(file.read_text(encoding="utf-8")).items():
            into = merged.setdefault(qualname, {"calls": 0, "args": {}, "kinds": {}, "outputs": {}})
            into["calls"] += entry["calls"]
            for name, fps in entry["args"].items():
                seen = into["args"].setdefault(name, [])
                seen += [fp for fp in fps if fp not in seen]
            for name, kinds in entry["kinds"].items():
                have = into["kinds"].setdefault(name, [])
                have += [k for k in kinds if k not in have]
            for part, out in entry["outputs"].items():
                have = into["outputs"].setdefault(part, {"calls": 0, "compared": False, "none": True, "object": False})
                have["calls"] += out["calls"]
                have["object"] = have["object"] or out.get("object", False)
                have["compared"] = have["compared"] or out["compared"]
                have["none"] = have["none"] and out["none"]
    return merged


def _results_in_source(check_source: str):
    """For each check function of the file: the names bound to a call's result (``out = student.f(...)``,
    ``a, b = f(...)``: ``{name: (f, "return" or "return[i]")}``) and the function's nodes."""
    tree = ast.parse(check_source)
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names: dict[str, tuple[str, str]] = {}
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and _called(node.value)):
                continue
            target, name = node.targets[0], _called(node.value)
            assert name is not None  # tested above
            if isinstance(target, ast.Name):
                names[target.id] = (name, "return")
            elif isinstance(target, (ast.Tuple, ast.List)):
                for i, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        names[element.id] = (name, f"return[{i}]")
        yield names, list(ast.walk(fn))


def _called(node) -> str | None:
    """``f`` of a call ``student.f(...)`` or ``f(...)``."""
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return node.func.attr
        if isinstance(node.func, ast.Name):
            return node.func.id
    return None


def compared_in_source(check_source: str) -> set[tuple[str, str]]:
    """``(function, output)`` pairs a check file compares with plain Python (``assert student.f(...) is None``,
    ``assert student.f(3) == reference.f(3)``, or a name assigned from the call, or unpacked from it, as an
    operand of a comparison in the same check): the comparisons no wrapped helper sees. ``output`` is
    ``"return"`` or ``"return[i]"``."""
    found: set[tuple[str, str]] = set()
    for names, nodes in _results_in_source(check_source):
        for node in nodes:
            if not isinstance(node, ast.Compare):
                continue
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute):
                    found.add((operand.func.attr, "return"))
                elif isinstance(operand, ast.Name) and operand.id in names:
                    found.add(names[operand.id])
    return found


def used_in_source(check_source: str) -> set[tuple[str, str]]:
    """``(function, output)`` pairs whose result (a name assigned from the call) a check then uses: calls a
    method of it (other than ``close``) or hands it to a call. For an output without array leaves (a
    manager, a loader), its behaviour is what a check can look at."""
    found: set[tuple[str, str]] = set()
    for names, nodes in _results_in_source(check_source):
        for node in nodes:
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in names
                and node.attr != "close"
            ):
                found.add(names[node.value.id])
            elif isinstance(node, ast.Call):
                for arg in (*node.args, *(k.value for k in node.keywords)):
                    if isinstance(arg, ast.Name) and arg.id in names:
                        found.add(names[arg.id])
    return found
