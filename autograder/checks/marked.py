"""Forward passes counted in the program (issue 42): "calls f once" decided on the trusted side.

:func:`autograder.checks.calls.assert_called_once` counts the Python calls of ``f`` while the student's code runs:
an observed verdict. Here ``f`` is handed over *marked*: :func:`marked` adds to it a term whose program holds an
operation found nowhere else, a cube root (:data:`MARKER`), which JAX's derivative rules never emit again (the
derivative of ``cbrt`` reuses its result). Every trace of ``f`` puts one marker into the program, whatever
transformation traced it (``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, any order of them for a
Hessian-vector product, ``vmap`` of a pullback): the program of a function that asks for one forward pass holds
exactly as many markers as the program of ``f`` alone; ``f(x)`` then ``jax.grad(f)(x)`` holds two, finite
differences two or more, a Python loop of ``jax.vjp`` one per row.

The program (:func:`autograder.checks.programs.program_of`, rebuilt from bytes as hostile data) must also give the
reference's values on the check's inputs: a process that sends another program than its function's earns these
points only with one that computes the reference's values from one trace of ``f``, which is a correct solution's.

- :func:`marked`                          ``f`` plus a marked term (named after ``f``)
- :func:`assert_program_calls_once`       the program traces the marked ``f`` once
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from autograder.checks import programs
from autograder.checks.values import function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import decided_elsewhere

MARKER = "stablehlo.cbrt"
_MARKER_OP = re.compile(rf"=\s*{re.escape(MARKER)}\b")
SHIFT = 4.0  # the cube root is taken of x + SHIFT: the checks' inputs stay well away from its pole at 0


def marked(f: Callable) -> Callable:
    """``f(x) + sum(cbrt(x + SHIFT))``: ``f`` with one marker operation per trace, named ``<f>_marked``."""

    def with_marker(x: Any) -> Any:
        return f(x) + jnp.sum(jnp.cbrt(x + SHIFT))

    with_marker.__name__ = with_marker.__qualname__ = f"{function_name(f)}_marked"
    return with_marker


def markers(text: str) -> int:
    """How many marker operations a program's text holds."""
    return len(_MARKER_OP.findall(text))


def markers_of_one_trace(f: Callable, x: Any) -> int:
    """The markers in the program of the marked ``f`` alone, lowered here for ``x`` (the check's own function)."""
    return markers(jax.export.export(jax.jit(f))(x).mlir_module())


def assert_program_calls_once(
    fn: Callable,
    reference: Callable,
    f: Callable,
    *args: Any,
    caller: str,
    advice: str,
    argument: str = "f",
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> programs.Program:
    """The program of ``fn(marked(f), *args)`` (jitted, the marked ``f`` closed over) traces ``f`` once and gives
    what ``reference`` gives: decided from the program (see the module). ``caller`` names the student's function
    in the message (e.g. with the size of an argument), ``argument`` the name ``f`` has in its signature."""
    check = f"{caller} calls {argument} exactly once"
    with_marker = marked(f)
    expected = reference(with_marker, *args)
    program = programs.program_of(fn, *args, fixed=(with_marker,), result_like=expected, check=check, advice=advice)
    once, found = markers_of_one_trace(with_marker, args[0]), markers(program.text)
    if found != once:
        times = found // once if once else found
        raise CheckFailure(
            check,
            f"{caller} called {argument} {times} time{'s' if times != 1 else ''} for one call: its compiled "
            f"program runs the forward pass of {argument} {times} time{'s' if times != 1 else ''}",
            advice,
        )
    if decided_elsewhere(fn):  # recorded for the trusted side, which runs it and decides (oracle.decided_elsewhere)
        return program
    try:
        programs.assert_gives(program, *args, expected=expected, rtol=rtol, atol=atol)
    except CheckFailure as wrong:
        raise CheckFailure(
            check,
            f"{caller} calls {argument} once, but its compiled program does not give the reference's values: fix "
            "the values first (the correctness check shows where); this check passes with them",
            f"{wrong.problem}\n{wrong.details}",
        ) from None
    return program
