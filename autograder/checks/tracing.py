"""Tracing: jitted functions are ``jax.jit`` functions that stop tracing once warm.

Traces are counted from JAX's own trace event (the process's one ``jax.monitoring``
listener, :mod:`autograder.runtime.monitoring`), so every trace is seen wherever the ``jit`` happens (a jit created
inside the function, a closure re-jitted per call, ...). Counting cache
entries instead would be wrong: the canonical TrainState loop has two
entries because ``step`` starts as a Python int, yet it never retraces once
warm.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax

from autograder.checks.values import function_name
from autograder.core.failures import CheckFailure
from autograder.runtime import monitoring

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_PJIT_FUNCTION = type(jax.jit(lambda x: x))


class TraceCounter:
    """Counts JAX traces and XLA compilations while it is active (``with TraceCounter() as c``)."""

    def __init__(self) -> None:
        self.traces = 0
        self.compiles = 0

    def __enter__(self) -> TraceCounter:
        monitoring.subscribe(self._on_event)
        return self

    def __exit__(self, *exc: object) -> None:
        monitoring.unsubscribe(self._on_event)

    def _on_event(self, event: str, duration: float) -> None:
        if event == TRACE_EVENT:
            self.traces += 1
        elif event == COMPILE_EVENT:
            self.compiles += 1


def is_jitted(fn: Any) -> bool:
    return isinstance(fn, _PJIT_FUNCTION)


def assert_is_jitted(fn: Any, name: str | None = None) -> None:
    """``fn`` is itself a ``jax.jit`` function (decorated, or assigned from ``jax.jit(...)``)."""
    name = name or function_name(fn)
    if not is_jitted(fn):
        raise CheckFailure(
            f"{name} is compiled with jax.jit",
            f"{name} is not a jax.jit function (it is a {type(fn).__name__})",
            f"decorate it with @jax.jit, or write `{name} = jax.jit(...)` at module level, "
            "so that it is compiled once and reused on every call",
        )


@contextlib.contextmanager
def explain_cache_misses() -> Iterator[io.StringIO]:
    """Collect JAX's own explanation of every tracing cache miss inside the block."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    logger = logging.getLogger("jax")
    previous_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        with jax.explain_cache_misses(True):
            yield buffer
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)


def tidy_explanation(explanation: str, limit: int = 14) -> str:
    """JAX's cache-miss explanation, short and without site-packages paths (for a student's message)."""
    lines = [re.sub(r"\S*/site-packages/", "", line) for line in explanation.splitlines() if line.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


def start_cold(fn: Callable) -> None:
    """Clear the ``jax.jit`` caches of ``fn`` and of every jitted function it calls by name (its module's
    globals and its closure, followed through the plain functions it calls, a few levels deep).

    A retracing check then starts cold whatever the checks before it called: a step that reads
    ``state.step`` on the host and passes it on as a static argument to a jitted helper compiles once per
    step number, and would trace nothing in a loop over step numbers that earlier checks already ran.
    The module's other jitted functions keep their caches (the checks after this one reuse them).
    """
    seen: set[int] = set()

    def clear(value: Any, depth: int) -> None:
        if id(value) in seen or depth > _COLD_DEPTH:
            return
        seen.add(id(value))
        clear_cache = getattr(value, "clear_cache", None)
        if callable(clear_cache) and callable(getattr(value, "lower", None)):
            clear_cache()
        inner = _unwrapped(value)
        code = getattr(inner, "__code__", None)
        if code is None:
            return
        scope = getattr(inner, "__globals__", {})
        for name in _names_used(code):
            if name in scope:
                clear(scope[name], depth + 1)
        for cell in getattr(inner, "__closure__", None) or ():
            try:
                clear(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                pass

    clear(fn, 0)


_COLD_DEPTH = 4


def _unwrapped(fn: Any) -> Any:
    for _ in range(8):  # jax.jit and functools.wraps wrappers, functools.partial
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None)
        if inner is None or inner is fn:
            break
        fn = inner
    return fn


def _names_used(code: Any) -> set[str]:
    """The global names a function's code (and the functions defined inside it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names_used(const)
    return names


NO_EXPLANATION = "(JAX gave no explanation: a function is probably created anew on every call)"

# What a retracing check says about a function called with fresh same-shaped inputs (:func:`assert_no_retrace`,
# ``loops.assert_no_retrace_when_fed_back``).
SAME_SHAPES_ADVICE = (
    "every retrace costs a full compilation. Common causes: jax.jit(...), a lambda, an optimizer or a model "
    "created inside the function on every call; Python numbers passed as static arguments; values computed "
    "on the host from traced state."
)


@dataclass
class Retraces:
    """What a loop of calls saw (:func:`count_retraces`): the 1-based calls that traced or compiled, the counts,
    the carry after the last call, and the first cause found."""

    traced_at: list[int] = field(default_factory=list)
    traces: int = 0
    compiles: int = 0
    carry: Any = None
    cause: str | None = None


def count_retraces(
    fn: Callable,
    carry: Any,
    make_args: Callable[[int, Any], tuple],
    next_carry: Callable[[int, Any, Any], Any],
    *,
    warmup: int,
    calls: int,
    cause: Callable[[Any, Any], str | None] | None = None,
) -> Retraces:
    """The one retrace loop of the retracing checks (each of them a preset of it).

    ``warmup`` uncounted calls, then ``calls`` counted ones; call ``i`` is ``result = fn(*make_args(i, carry))``,
    then ``carry = next_carry(i, carry, result)`` (both outside the counted region). ``cause(carry, next)``, when
    given, is asked from the last warm-up call on until it names what changed between two calls."""
    seen = Retraces()
    start_cold(fn)
    for i in range(warmup + calls):
        args = make_args(i, carry)
        with TraceCounter() as counter:
            result = fn(*args)
            jax.block_until_ready(result)
        if i >= warmup and (counter.traces or counter.compiles):
            seen.traced_at.append(i + 1)
            seen.traces += counter.traces
            seen.compiles += counter.compiles
        following = next_carry(i, carry, result)
        if cause is not None and seen.cause is None and i >= warmup - 1:
            seen.cause = cause(carry, following)
        carry = following
    seen.carry = carry
    return seen


def retrace_failure(fn: Callable, args: tuple, *, check: str, found: str, advice: str) -> CheckFailure:
    """The one message of a retracing check: what it checks, what it found, the advice, then JAX's own
    explanation of the cache miss of one more call ``fn(*args)``."""
    with explain_cache_misses() as log:
        jax.block_until_ready(fn(*args))
    why = tidy_explanation(log.getvalue()) or NO_EXPLANATION
    return CheckFailure(check, found, advice + "\nJAX explains the cache miss:\n" + why)


def same_shapes_failure(fn: Callable, args: tuple, name: str, seen: Retraces, calls: int) -> CheckFailure:
    """:func:`retrace_failure` for calls with same-shaped inputs (fresh ones, or results fed back)."""
    return retrace_failure(
        fn,
        args,
        check=f"{name} does not trace or compile again on same-shaped inputs once warm",
        found=f"{name} traced {seen.traces} and compiled {seen.compiles} more time(s) in {calls} calls with same-shaped "
        "inputs after warming up",
        advice=SAME_SHAPES_ADVICE,
    )


def assert_no_retrace(
    fn: Callable,
    make_args: Callable[[int], tuple],
    *,
    warmup: int = 2,
    calls: int = 3,
    name: str | None = None,
) -> None:
    """Once warm, calls with fresh same-shaped arguments trace and compile nothing.

    ``make_args(i)`` builds the positional arguments of call ``i``; every call
    gets new values of the same shapes and dtypes. Arguments are built
    outside the counted region.
    """
    name = name or function_name(fn)
    seen = count_retraces(
        fn, None, lambda i, _: make_args(i), lambda i, carry, result: carry, warmup=warmup, calls=calls
    )
    if seen.traced_at:
        raise same_shapes_failure(fn, make_args(warmup + calls), name, seen, calls)
