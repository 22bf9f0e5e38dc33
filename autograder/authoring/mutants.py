"""Mutation operators for the references: one small change at a time, on the AST.

Why our own operators rather than mutmut or cosmic-ray: both mutate a package in place and
run a test command per mutant from the project's layout, while a mutant of the course must be
*the student's file* of one module (the checks load it with ``--submission DIR``), and must
leave the reference (``solutions/``), which the checks compare against, untouched. Neither is
installed in the kit's environment. The operators below are the classic ones of those tools,
restricted to what the course's mistakes look like:

- ``arith``: ``+ <-> -``, ``* <-> /``, ``// -> /``, ``** -> *``, ``@ -> *``, ``% -> //``;
- ``compare``: ``< <-> <=``, ``> <-> >=``, ``== <-> !=``, ``is <-> is not``, ``in <-> not in``;
- ``constant``: an integer ``n -> n + 1`` (``0 -> 1``, ``-1 -> 0``: axes included), a float ``c -> 2c``
  (``0.0 -> 1.0``), ``True <-> False``;
- ``negate``: ``-x -> x``, ``not x -> x``;
- ``boolop``: ``and <-> or``;
- ``none-test``: ``x is None -> not x`` and ``x is not None -> x`` (``if x:`` for ``if x is None:``);
- ``drop-keyword``: a call without one of its keyword arguments (``axis=``, ``keepdims=``, ``dtype=``);
- ``drop-argument``: a call of two or more positional arguments without its last one.

Only the bodies of the functions (and classes) the course grades are mutated, never given
code, docstrings, strings or decorators' targets. Every mutant has a stable id
(``module.function | operator | before -> after | n``): the n-th site of that change in that
function, so an id survives edits elsewhere in the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

_ARITH: dict[type[ast.operator], list[type[ast.operator]]] = {
    ast.Add: [ast.Sub],
    ast.Sub: [ast.Add],
    ast.Mult: [ast.Div],
    ast.Div: [ast.Mult],
    ast.FloorDiv: [ast.Div],
    ast.Pow: [ast.Mult],
    ast.MatMult: [ast.Mult],
    ast.Mod: [ast.FloorDiv],
}
_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Mutant:
    module: str
    function: str
    operator: str
    before: str  # the changed expression, as source
    after: str
    occurrence: int  # the n-th site of this (function, operator, before, after)
    line: int  # in the reference file (for the reader; not part of the id)
    source: str  # the whole mutated module

    @property
    def id(self) -> str:
        return f"{self.module}.{self.function} | {self.operator} | {self.before} -> {self.after} | {self.occurrence}"


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return isinstance(parent, ast.Expr) and isinstance(node, ast.Constant) and isinstance(node.value, str)


def _sites(node: ast.AST) -> Iterator[tuple[ast.expr, str, list[ast.expr]]]:
    """``(node, operator, replacements)`` for every node of ``node``'s subtree that an operator changes.

    A replacement is a new node that takes the place of the site."""
    for child in ast.walk(node):
        if isinstance(child, ast.BinOp) and type(child.op) in _ARITH:
            for new_op in _ARITH[type(child.op)]:
                yield child, "arith", [ast.BinOp(child.left, new_op(), child.right)]
        elif isinstance(child, ast.Compare):
            for i, op in enumerate(child.ops):
                ops = list(child.ops)
                ops[i] = _COMPARE[type(op)]()
                yield child, "compare", [ast.Compare(child.left, ops, child.comparators)]
                if isinstance(op, (ast.Is, ast.IsNot)) and len(child.ops) == 1 and _is_none(child.comparators[0]):
                    test = ast.UnaryOp(ast.Not(), child.left) if isinstance(op, ast.Is) else child.left
                    yield child, "none-test", [test]
        elif (
            isinstance(child, ast.Constant)
            and not isinstance(child.value, (str, bytes))
            and child.value is not Ellipsis
        ):
            value = child.value
            if isinstance(value, bool):
                yield child, "constant", [ast.Constant(not value)]
            elif isinstance(value, int):
                yield child, "constant", [ast.Constant(value + 1)]
            elif isinstance(value, float):
                yield child, "constant", [ast.Constant(value * 2 if value else 1.0)]
        elif isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.USub):
            if (
                isinstance(child.operand, ast.Constant)
                and isinstance(child.operand.value, int)
                and not isinstance(child.operand.value, bool)
            ):
                yield child, "constant", [ast.Constant(-child.operand.value + 1)]  # axis=-1 -> axis=0
            yield child, "negate", [child.operand]
        elif isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.Not):
            yield child, "negate", [child.operand]
        elif isinstance(child, ast.BoolOp):
            other = ast.Or() if isinstance(child.op, ast.And) else ast.And()
            yield child, "boolop", [ast.BoolOp(other, child.values)]
        elif isinstance(child, ast.Call):
            for i in range(len(child.keywords)):
                if child.keywords[i].arg is None:
                    continue  # **kwargs
                yield (
                    child,
                    "drop-keyword",
                    [ast.Call(child.func, child.args, child.keywords[:i] + child.keywords[i + 1 :])],
                )
            if len(child.args) >= 2 and not isinstance(child.args[-1], ast.Starred):
                yield child, "drop-argument", [ast.Call(child.func, child.args[:-1], child.keywords)]


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _skipped(tree: ast.AST) -> set[int]:
    """Nodes never mutated: docstrings, decorators, annotations, the parts of an f-string."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for dec in node.decorator_list:
                if not isinstance(dec, ast.Call):
                    skipped.update(id(n) for n in ast.walk(dec))
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                skipped.add(id(node.body[0].value))
            annotations = (
                [a.annotation for a in ast.walk(node.args) if isinstance(a, ast.arg)]
                if not isinstance(node, ast.ClassDef)
                else []
            )
            annotations += [node.returns] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            for ann in annotations:
                if ann is not None:
                    skipped.update(id(n) for n in ast.walk(ann))
        elif isinstance(node, ast.AnnAssign):
            skipped.update(id(n) for n in ast.walk(node.annotation))
        elif isinstance(node, ast.JoinedStr):
            skipped.update(id(n) for n in ast.walk(node))
    return skipped


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            return self.replacement
        return self.generic_visit(node)


def mutants_of(source: str, module: str, functions: list[str]) -> list[Mutant]:
    """Every mutant of ``functions`` (top-level functions or classes of ``source``), in file order."""
    tree = ast.parse(source)
    skipped = _skipped(tree)
    found: list[Mutant] = []
    seen: dict[tuple, int] = {}
    for top in tree.body:
        if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or top.name not in functions:
            continue
        body = top.body if isinstance(top, ast.ClassDef) else [top]
        targets = []
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                targets += (
                    stmt.body + stmt.decorator_list + stmt.args.defaults + [d for d in stmt.args.kw_defaults if d]
                )
            elif isinstance(stmt, ast.ClassDef):
                targets.append(stmt)
            elif not isinstance(top, ast.ClassDef) or not (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            ):
                targets.append(stmt)  # class attributes (a dataclass field's default)
        sites = []
        for target in targets:
            sites += [s for s in _sites(target) if id(s[0]) not in skipped]
        sites.sort(key=lambda s: (s[0].lineno, s[0].col_offset))
        for node, operator, replacements in sites:
            for replacement in replacements:
                mutated = _Replace(node, ast.copy_location(replacement, node)).visit(tree)
                text = ast.unparse(ast.fix_missing_locations(mutated))
                _Replace(replacement, node).visit(tree)  # put the original back
                before, after = ast.unparse(node), ast.unparse(replacement)
                if before == after:
                    continue
                key = (top.name, operator, before, after)
                seen[key] = seen.get(key, 0) + 1
                found.append(Mutant(module, top.name, operator, before, after, seen[key], node.lineno, text))
    return found
