"""Loops: a jitted step called the way a training loop calls it, each output fed into the next call.

:func:`tracing.assert_no_retrace` calls a function on fresh arguments. A step
can pass that and still retrace in a real loop, because what it *returns*
becomes its next input: a state whose static structure changed (a new
optimizer object, a Python-int ``step``, a ``FrozenDict`` where a dict went
in), or a step number read on the host (``int(state.step)``), only shows when
the output is fed back in. :func:`assert_no_retrace_in_loop` runs that loop.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import jax

from autograder.checks.tracing import TraceCounter, explain_cache_misses
from autograder.core.failures import CheckFailure

LOOP_CAUSES = (
    "Common causes: a Python number that changes every step used as a static argument (int(state.step), a "
    "learning rate in static_argnums); a value read on the host from a traced one (int(...), float(...), "
    ".item()); a returned state whose static parts differ from the ones it was given (a new optimizer or "
    "model object, a Python int where an array went in, a FrozenDict where a dict went in); a jax.jit or a "
    "lambda created on every call."
)


def _tidy(explanation: str, limit: int = 14) -> str:
    lines = [re.sub(r"\S*/site-packages/", "", line) for line in explanation.splitlines() if line.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


def assert_no_retrace_in_loop(
    fn: Callable,
    carry: Any,
    make_args: Callable[[int, Any], tuple],
    next_carry: Callable[[int, Any, Any], Any],
    *,
    warmup: int = 3,
    calls: int = 4,
    name: str | None = None,
    loop: str = "a training loop",
) -> None:
    """Once warm, a chained loop of ``fn`` calls traces and compiles nothing.

    Call ``i`` is ``result = fn(*make_args(i, carry))`` and then
    ``carry = next_carry(i, carry, result)``: ``next_carry`` feeds the output
    back in (``lambda i, state, out: out[0]`` for a train step), or advances
    the loop some other way (a reference train step between two evaluations).
    ``make_args`` and ``next_carry`` run outside the counted region; only the
    ``calls`` calls after ``warmup`` are counted, and any trace fails.
    """
    name = name or getattr(fn, "__name__", "the step")
    for i in range(warmup):
        result = fn(*make_args(i, carry))
        carry = next_carry(i, carry, result)
    jax.block_until_ready(carry)
    traced_at: list[int] = []
    compiles = 0
    for i in range(warmup, warmup + calls):
        args = make_args(i, carry)
        with TraceCounter() as counter:
            result = fn(*args)
            jax.block_until_ready(result)
        if counter.traces or counter.compiles:
            traced_at.append(i + 1)
        compiles += counter.compiles
        carry = next_carry(i, carry, result)
    if not traced_at:
        return
    i = warmup + calls
    args = make_args(i, carry)
    with explain_cache_misses() as log:
        jax.block_until_ready(fn(*args))
    why = _tidy(log.getvalue()) or "(JAX gave no explanation: a function is probably created anew on every call)"
    shown = ", ".join(map(str, traced_at))
    raise CheckFailure(
        f"{name} does not trace or compile again in {loop} once warm",
        f"in {loop} that feeds each call's output into the next, {name} traced again at call(s) {shown} of "
        f"{warmup + calls} (after {warmup} warm-up calls; {compiles} compilation(s))",
        "every retrace costs a full compilation, on every step. " + LOOP_CAUSES + "\nJAX explains the cache miss:\n" + why,
    )
