"""Modules whose every verdict is known before any of them runs: decided in the grader, no grading process started.

Runs in the grader's process, on the submitted bytes (hostile data: compiled, never run). Two kinds, and only these:

- a module Python cannot import at all: not UTF-8 text, or not Python (a syntax error, found by compiling it as an
  import would). None of its code can run, so every check fails with the import's own message
  (:func:`autograder.core.submission.compile_failure`, the words a grading process would say);
- a module that is the course's stub untouched: the same program as the course's ``exercises/<module>.py`` (the
  same syntax tree: only comments, blank lines and formatting differ), and every function its checks judge still
  only raising ``NotImplementedError``. Its import runs the course's own code, and each check says "not started"
  before its fixtures (:func:`autograder.pytest_plugin.hooks._fail_if_stub`'s verdict, the same words).

A module with anything else of the student's (one more import, a changed constant, a statement at its top level) runs
as before: what its code does is observed where it runs. The grades and every message are the same either way
(``tests/system/test_unrun_modules.py`` grades a class both ways); a class's broken or untouched modules cost it no
sandbox, no zygote and no grading process. The pre-flight runs its stubs in the sandbox all the same (the grader
passes ``proving``): that is its proof that this machine's checks fail a function that does nothing.
``AUTOGRADER_DECIDE_UNRUN=0`` runs every module (benchmarks, the test that compares).
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Mapping, Sequence

from autograder.core import syntax
from autograder.core.status import Status
from autograder.core.submission import compile_failure, not_started, stubs_in_source
from autograder.grading.verdicts import CheckVerdict, clean_message
from autograder.grading.wire import PlannedCheck
from autograder.runtime import stores

SWITCH = "AUTOGRADER_DECIDE_UNRUN"


def decided_unrun(
    module: str, source: bytes, checks: Sequence[PlannedCheck], course: Mapping[str, bytes]
) -> dict[str, CheckVerdict] | None:
    """Every check of ``module``'s verdict when ``source`` cannot be imported or is the course's stub untouched
    (``course``: the course's files by relative path); None when the module must run."""
    if os.environ.get(SWITCH) == "0" or not checks:
        return None
    failure = compile_failure(source, f"{module}.py")
    if failure is not None:
        return {c.id: CheckVerdict(Status.FAILED, clean_message(failure)) for c in checks}
    stub = course.get(f"exercises/{module}.py")
    if stub is not None and untouched_stub(source, stub, {c.function for c in checks}):
        return {
            c.id: CheckVerdict(Status.NOT_STARTED, clean_message(str(not_started(module, c.function)))) for c in checks
        }
    return None


def untouched_stub(source: bytes, stub: bytes, functions: set[str]) -> bool:
    """Whether ``source`` is the program ``stub`` is (the same syntax tree, line numbers aside) and every one of
    ``functions`` is still a stub in it."""
    try:
        text = source.decode("utf-8")
        if ast.dump(syntax.parse(text)) != _program_of(stub):
            return False
        return functions <= stubs_in_source(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


@functools.lru_cache(maxsize=64)
def _program_of(stub: bytes) -> str:
    """The course stub's syntax tree, dumped (once per stub: every student's module is compared with it)."""
    return ast.dump(syntax.parse(stub.decode("utf-8")))


stores.register("grading.unrun.program_of", _program_of, clear=_program_of.cache_clear)
