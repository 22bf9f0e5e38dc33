"""autograder.core.syntax: the grader parses submissions in several threads; CPython 3.11's AST constructor keeps
one depth counter per interpreter, so concurrent parses raced into ``SystemError: AST constructor recursion depth
mismatch`` (seen in a pre-flight: the reference "failed" and nobody was graded). Under load that provokes it
(finalizers run by the garbage collector, a switch interval of a microsecond), every parse here succeeds."""

from __future__ import annotations

import ast
import sys
import threading
import time

from support import ROOT

from autograder.core import syntax

SOURCE = (ROOT / "exercises" / "test_checkpointing.py").read_text(encoding="utf-8")


class _Finalized:
    def __del__(self):
        sum(range(50))  # Python code run by the collector: a chance to switch threads mid-construction


def _parse_under_load(parse, seconds: float = 3.0) -> tuple[int, int]:
    """(SystemErrors, parses) of four threads parsing for ``seconds`` beside one making garbage with finalizers,
    at a switch interval of a microsecond (``ast.parse`` there: about one mismatch a second on 2 cores)."""
    errors, parsed = [], []
    end = time.monotonic() + seconds

    def parses():
        while time.monotonic() < end:
            try:
                syntax.compile_tree(parse(SOURCE), "<test>")
            except SystemError as err:
                errors.append(str(err))
                return
            parsed.append(1)

    def churns():
        while time.monotonic() < end:
            for _ in range(1000):
                cycle = _Finalized()
                cycle.me = cycle

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=parses) for _ in range(4)] + [threading.Thread(target=churns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return len(errors), len(parsed)


def test_parsing_in_several_threads_at_once_never_raises_the_depth_mismatch():
    errors, parsed = _parse_under_load(syntax.parse)
    assert errors == 0 and parsed > 0


def test_a_parse_is_ast_parse():
    assert ast.dump(syntax.parse(SOURCE)) == ast.dump(ast.parse(SOURCE))
