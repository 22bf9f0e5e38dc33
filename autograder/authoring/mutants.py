"""Mutants of the references, made by a maintained mutation library's operators: cosmic-ray's.

Every mutant is one change in one graded function of ``solutions/<module>.py``, made by one
operator at one site, as cosmic-ray itself makes it: the operator classes come from
``cosmic_ray.plugins`` (the ``core`` provider: 211 operators, every one that takes no argument)
and applied as ``cosmic_ray.mutating.mutate_code`` applies them (the operator's ``mutate`` on the
parso node of one site; the module written back with its comments and layout). What the kit does not take from cosmic-ray
is its runner (a test command per mutant over a package mutated in place): a mutant of the
course is *the student's file* of one module, graded by the module's checks with the reference
left untouched (:mod:`autograder.authoring.mutate`).

The core operators: every binary operator for every other (``+ - * / // % ** << >> | & ^``),
every comparison for every other (``== != < <= > >= is is not``; ``is None`` only to ``is not
None``), unary ``+ - ~ not`` replaced or deleted, ``not`` added to a condition, ``True <-> False``,
``and <-> or``, a number ``n -> n + 1`` and ``n -> n - 1``, ``break <-> continue``, a loop over
``[]``, a decorator removed, an ``except`` that no longer catches. Left out: ``VariableReplacer``
and ``VariableInserter``, which need a variable named per run and insert random numbers (an id
would not be stable).

The kit keeps four operators of its own (provider ``kit``), for the course's mistakes the library
has no operator for:

- ``kit/DropKeyword``: a call without one of its keyword arguments (``axis=``, ``keepdims=``,
  ``train=``, ``rngs=``, ``static_argnames=``): the commonest mistake of a JAX/Flax exercise, and
  half the kills of the kit's old operators;
- ``kit/DropArgument``: a call of two or more positional arguments without its last one
  (``jax.random.split(key)`` for ``split(key, n)``);
- ``kit/ReplaceMatMultWithMul``: ``x @ W -> x * W`` (cosmic-ray's binary operators have no ``@``;
  elementwise for matrix product is the linear layer's classic mistake);
- ``kit/ReplaceNoneTestWithFalsy``: ``x is None -> not x``, ``x is not None -> x`` (``if not step:`` for
  a test of ``x is None`` on a step: step 0 is falsy; cosmic-ray only turns ``is`` into ``is not``).

Only the graded functions (and classes) are mutated: their bodies, decorators and defaults, never
given code, docstrings, annotations or f-strings. Mutants that do not compile, change nothing
(the same syntax tree) or repeat an earlier mutant's tree are left out. Every mutant has a stable,
readable id (``module.function | operator | before -> after | n``): the operator's
``provider/name``, the changed expression before and after (as ``ast.unparse`` writes it), and the
n-th site of that change in that function, so an id survives edits elsewhere in the file.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

try:
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.operators.operator import Operator
except ImportError as error:  # the `authoring` extra
    raise ImportError(
        "autograder mutate makes its mutants with cosmic-ray, which is not installed: "
        "pip install 'jax-course-autograder[authoring]' (or cosmic-ray==8.7.0)"
    ) from error

from autograder.authoring.kit_operators import KIT_OPERATORS  # after cosmic-ray, whose Operator they extend


@dataclass(frozen=True)
class Mutant:
    module: str
    function: str
    operator: str  # provider/name: core/... (cosmic-ray's) or kit/... (the kit's own)
    before: str  # the changed expression, as source
    after: str
    occurrence: int  # the n-th site of this (function, operator, before, after)
    line: int  # in the reference file (for the reader; not part of the id)
    source: str  # the whole mutated module

    @property
    def id(self) -> str:
        return f"{self.module}.{self.function} | {self.operator} | {self.before} -> {self.after} | {self.occurrence}"


def library_operators() -> dict[str, type[Operator]]:
    """cosmic-ray's core operators that take no argument, by ``provider/name``, in cosmic-ray's order."""
    operators = {}
    for name in cosmic_ray.plugins.operator_names():
        if name.startswith("core/"):
            operator = cosmic_ray.plugins.get_operator(name)
            if not operator.arguments():
                operators[name] = operator
    return operators


def operators() -> dict[str, type[Operator]]:
    """Every operator ``autograder mutate`` applies: cosmic-ray's, then the kit's own."""
    return {**library_operators(), **KIT_OPERATORS}


# -- where the references may be mutated ------------------------------------------------------------


class _Offsets:
    """Character offsets in ``source`` of parso's (line, column) and the ast's (line, UTF-8 byte) positions."""

    def __init__(self, source: str):
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def parso(self, pos: tuple[int, int]) -> int:
        return self.starts[pos[0] - 1] + pos[1]

    def ast_pos(self, line: int, col: int | None) -> int:
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self.starts[line - 1] + len(text.encode("utf-8")[: col or 0].decode("utf-8", "replace"))

    def node(self, node: ast.expr | ast.stmt) -> tuple[int, int]:
        end = (node.end_lineno, node.end_col_offset) if node.end_lineno is not None else (node.lineno, None)
        return self.ast_pos(node.lineno, node.col_offset), self.ast_pos(*end)


def _regions(tree: ast.Module, functions: list[str], at: _Offsets) -> tuple[list[tuple[int, int, str]], list]:
    """``(start, end, function)`` of every part of the graded functions that may be mutated, and the
    ``(start, end)`` inside them that may not (docstrings, annotations, f-strings)."""

    def whole(node) -> tuple[int, int]:  # from its first decorator's line to its end
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        return at.starts[first - 1], at.node(node)[1]

    allowed: list[tuple[int, int, str]] = []
    for top in tree.body:
        if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or top.name not in functions:
            continue
        if not isinstance(top, ast.ClassDef):
            allowed.append((*whole(top), top.name))
            continue
        for stmt in top.body:  # a class: its methods, nested classes and attributes; not its bases or decorators
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                allowed.append((*whole(stmt), top.name))
            elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                allowed.append((*at.node(stmt), top.name))
    skipped = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                skipped.append(at.node(node.body[0]))
            if not isinstance(node, ast.ClassDef):
                skipped += [
                    at.node(a.annotation) for a in ast.walk(node.args) if isinstance(a, ast.arg) and a.annotation
                ]
                if node.returns is not None:
                    skipped.append(at.node(node.returns))
        elif isinstance(node, ast.AnnAssign):
            skipped.append(at.node(node.annotation))
        elif isinstance(node, ast.JoinedStr):
            skipped.append(at.node(node))
    return allowed, skipped


# -- what a mutant changed, for its id --------------------------------------------------------------

# parso nodes that are part of an expression, not one: widened to the node around them.
_FRAGMENTS = {
    "operator",
    "keyword",
    "comp_op",
    "arglist",
    "argument",
    "trailer",
    "subscript",
    "subscriptlist",
    "sliceop",
    "testlist_comp",
    "exprlist",
}


def _changed(original: str, mutated: str) -> tuple[int, int]:
    """The span of ``original`` that differs from ``mutated`` (empty where text was only inserted)."""
    n = min(len(original), len(mutated))
    start = 0
    while start < n and original[start] == mutated[start]:
        start += 1
    end = 0
    while end < n - start and original[-1 - end] == mutated[-1 - end]:
        end += 1
    return start, len(original) - end


def _normal(text: str) -> str:
    """An expression as ``ast.unparse`` writes it (so that an id does not depend on the layout)."""
    text = text.strip()
    if not text:
        return "(nothing)"
    try:
        return ast.unparse(ast.parse(f"(\n{text}\n)", mode="eval"))
    except SyntaxError:
        return " ".join(text.split())


def _shown(tree, at: _Offsets, site: tuple[int, int], original: str, mutated: str) -> tuple[str, str]:
    """``(before, after)``: the smallest expression around both the operator's site and the changed text."""
    a, b = _changed(original, mutated)
    lo, hi = min(a, site[0]), max(b, site[1])
    node = tree
    while True:  # down to the smallest node that holds [lo, hi]
        inner = [
            c
            for c in getattr(node, "children", [])
            if at.parso(c.get_first_leaf().get_start_pos_of_prefix()) <= lo
            and hi <= at.parso(c.end_pos)
            and c.type != "endmarker"
        ]
        if not inner:
            break
        node = inner[0]
    while node.parent is not None and (
        node.type in _FRAGMENTS
        or (node.type in ("name", "number") and node.parent.type == "factor")  # -1, not 1
        or (node.type == "name" and node.parent.type in ("trailer", "argument"))  # x.shape, not shape
    ):
        node = node.parent
    start, end = min(a, at.parso(node.start_pos)), max(b, at.parso(node.end_pos))
    delta = len(mutated) - len(original)
    return _normal(original[start:end]), _normal(mutated[start : end + delta])


# -- the mutants ------------------------------------------------------------------------------------


def _sites(tree, operator: Operator) -> Iterator[tuple[object, int, tuple[tuple[int, int], tuple[int, int]]]]:
    """``(node, index, (start, end))`` of every site of ``operator`` in the module, in the order of cosmic-ray's
    walk (the n-th is the occurrence n of ``cosmic_ray.mutating.mutate_code``)."""
    for node in ast_nodes(tree):
        for index, position in enumerate(operator.mutation_positions(node)):
            yield node, index, position


def _apply(source: str, at: _Offsets, node, operator: Operator, index: int) -> str:
    """What ``cosmic_ray.mutating.mutate_code`` writes for this site, without parsing the module again for each
    mutant (a tenth of a second each): the operator's ``mutate`` changes a copy of the site's node, and the rest
    of the module's text is kept (``tests/unit/authoring/test_mutate.py`` proves the two the same)."""
    parent, node.parent = node.parent, None
    try:
        site = copy.deepcopy(node)
    finally:
        node.parent = parent
    site.parent = parent  # an operator may look at the node's parent (a binary operator's), never change it
    changed = operator.mutate(site, index)
    start, end = at.parso(node.get_first_leaf().get_start_pos_of_prefix()), at.parso(node.end_pos)
    return source[:start] + ("" if changed is None else changed.get_code()) + source[end:]


def mutants_of(source: str, module: str, functions: list[str]) -> list[Mutant]:
    """Every mutant of ``functions`` (top-level functions or classes of ``source``), in file order."""
    original = ast.parse(source)
    original_dump = ast.dump(original)
    at = _Offsets(source)
    allowed, skipped = _regions(original, functions, at)
    tree = get_ast(source)
    candidates = []
    for name, operator_class in operators().items():
        operator = operator_class()
        for node, index, (start, end) in _sites(tree, operator):
            site = (at.parso(start), at.parso(end))
            owner = [f for lo, hi, f in allowed if lo <= site[0] and site[1] <= hi]
            if not owner or any(lo < site[1] and site[0] < hi for lo, hi in skipped):
                continue
            candidates.append((site, name, operator, node, index, owner[0]))
    candidates.sort(key=lambda c: c[0][0])  # file order (stable: cosmic-ray's operator order at one site)
    found: list[Mutant] = []
    seen_trees = {original_dump}
    seen: dict[tuple, int] = {}
    for site, name, operator, node, index, function in candidates:
        text = _apply(source, at, node, operator, index)
        try:
            dump = ast.dump(ast.parse(text))
            compile(text, f"{module}.py", "exec")
        except (SyntaxError, ValueError):
            continue  # cosmic-ray's "incompetent" mutants: not a program
        if dump in seen_trees:
            continue  # no change, or the same program as an earlier mutant
        seen_trees.add(dump)
        before, after = _shown(tree, at, site, source, text)
        key = (function, name, before, after)
        seen[key] = seen.get(key, 0) + 1
        line = source.count("\n", 0, site[0]) + 1
        found.append(Mutant(module, function, name, before, after, seen[key], line, text))
    return found
