"""The kit's four mutation operators of its own (provider ``kit``), for the course's mistakes cosmic-ray has no
operator for: a call without a keyword argument (``kit/DropKeyword``) or without its last positional one
(``kit/DropArgument``), ``@`` for ``*`` (``kit/ReplaceMatMultWithMul``) and ``is None`` for a falsy test
(``kit/ReplaceNoneTestWithFalsy``). They implement cosmic-ray's ``Operator`` interface on parso nodes and are
applied as the library's are (:mod:`autograder.authoring.mutants`); :data:`KIT_OPERATORS` lists them.
"""

from __future__ import annotations

import parso
import parso.python.tree as pt
from cosmic_ray.operators.operator import Example, Operator


def _is(leaf: object, value: str) -> bool:
    return isinstance(leaf, pt.Leaf) and leaf.value == value


def _call_arguments(trailer) -> list:
    """The arguments of a call's ``( ... )`` trailer (parso), commas left out."""
    if trailer.type != "trailer" or not _is(trailer.children[0], "(") or len(trailer.children) != 3:
        return []
    inner = trailer.children[1]
    if inner.type == "arglist":
        return [c for c in inner.children if not _is(c, ",")]
    return [inner]


def _is_keyword(argument) -> bool:
    return argument.type == "argument" and len(argument.children) == 3 and _is(argument.children[1], "=")


def _is_positional(argument) -> bool:
    if argument.type != "argument":
        return True
    return not (_is(argument.children[0], "*") or _is(argument.children[0], "**") or _is_keyword(argument))


def _drop(trailer, argument) -> None:
    """Remove ``argument`` (and a comma next to it) from the call's trailer."""
    inner = trailer.children[1]
    if inner is argument:
        trailer.children = [trailer.children[0], trailer.children[2]]
        return
    children = inner.children
    i = children.index(argument)
    if i + 1 < len(children) and _is(children[i + 1], ","):
        del children[i : i + 2]
        if i < len(children):  # the next argument takes the removed one's place (and its spacing)
            children[i].get_first_leaf().prefix = argument.get_first_leaf().prefix
    else:
        del children[i - 1 : i + 1]


class DropKeyword(Operator):
    """A call without one of its keyword arguments."""

    def mutation_positions(self, node):
        for argument in _call_arguments(node):
            if _is_keyword(argument):
                yield (argument.start_pos, argument.end_pos)

    def mutate(self, node, index):
        _drop(node, [a for a in _call_arguments(node) if _is_keyword(a)][index])
        return node

    @classmethod
    def examples(cls):
        return (
            Example("f(x, axis=0)", "f(x)"),
            Example("f(x, axis=0, keepdims=True)", "f(x, axis=0)", occurrence=1),
        )


class DropArgument(Operator):
    """A call of two or more positional arguments without its last one."""

    def mutation_positions(self, node):
        positional = [a for a in _call_arguments(node) if _is_positional(a)]
        if len(positional) >= 2:
            yield (positional[-1].start_pos, positional[-1].end_pos)

    def mutate(self, node, index):
        _drop(node, [a for a in _call_arguments(node) if _is_positional(a)][-1])
        return node

    @classmethod
    def examples(cls):
        return (Example("f(x, y, axis=0)", "f(x, axis=0)"),)


class ReplaceMatMultWithMul(Operator):
    """``a @ b -> a * b``."""

    def mutation_positions(self, node):
        if _is(node, "@") and node.parent.type == "term":
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        node.value = "*"
        return node

    @classmethod
    def examples(cls):
        return (Example("x @ W", "x * W"),)


class ReplaceNoneTestWithFalsy(Operator):
    """``x is None -> not x``, ``x is not None -> x``."""

    def mutation_positions(self, node):
        if (
            node.type == "comparison"
            and len(node.children) == 3
            and node.children[1].get_code().strip() in ("is", "is not")
            and _is(node.children[2], "None")
        ):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        left = node.children[0].get_code(include_prefix=False)
        prefix = node.get_first_leaf().prefix
        negated = node.children[1].get_code().strip() == "is"
        return parso.parse(f"{prefix}{'not ' if negated else ''}{left}")

    @classmethod
    def examples(cls):
        return (Example("if x is None: pass", "if not x: pass"), Example("y = x is not None", "y = x"))


KIT_OPERATORS: dict[str, type[Operator]] = {
    "kit/DropKeyword": DropKeyword,
    "kit/DropArgument": DropArgument,
    "kit/ReplaceMatMultWithMul": ReplaceMatMultWithMul,
    "kit/ReplaceNoneTestWithFalsy": ReplaceNoneTestWithFalsy,
}
