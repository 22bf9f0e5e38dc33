"""Removing hidden checks: from ``course.toml`` (the ``hidden`` lists) and from the check files (by AST)."""

from __future__ import annotations

import ast
import re

from autograder.core import syntax


def drop_functions(source: str, names: set[str]) -> str:
    """``source`` without the top-level functions ``names`` (decorators included); the rest unchanged."""
    tree = syntax.parse(source)
    lines = source.splitlines(keepends=True)
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            assert node.end_lineno is not None  # set by ast.parse
            spans.append((first - 1, node.end_lineno))
    for start, end in sorted(spans, reverse=True):
        while end < len(lines) and not lines[end].strip():  # the blank lines after it
            end += 1
        del lines[start:end]
    return "".join(lines)


HIDDEN_LINE = re.compile(r"^[ \t]*hidden[ \t]*=[ \t]*\[[^\]]*\][ \t]*(#.*)?\n", re.MULTILINE)
HIDDEN_COMMENT = re.compile(r"^[ \t]*#[^\n]*\bhidden check\b[^\n]*\n", re.MULTILINE | re.IGNORECASE)


def drop_hidden_lists(toml_text: str) -> str:
    """``course.toml`` without its ``hidden = [...]`` lists (and the comments that explain them)."""
    return HIDDEN_COMMENT.sub("", HIDDEN_LINE.sub("", toml_text))


MODULE_BLOCK = re.compile(r"^\[\[modules\]\]\n.*?(?=^\[\[modules\]\]\n|\Z)", re.MULTILINE | re.DOTALL)
MODULE_NAME = re.compile(r'^name\s*=\s*"([^"]+)"', re.MULTILINE)


def keep_modules(toml_text: str, names: set[str]) -> str:
    """``course.toml`` with only the ``[[modules]]`` blocks of ``names`` (a release of part of the course)."""

    def keep(block: re.Match) -> str:
        found = MODULE_NAME.search(block.group(0))
        return block.group(0) if found and found.group(1) in names else ""

    return MODULE_BLOCK.sub(keep, toml_text)
