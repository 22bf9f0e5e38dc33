"""Tracing: jitted functions are ``jax.jit`` functions that stop tracing once warm.

Traces are counted with a ``jax.monitoring`` listener on JAX's own trace
event, so every trace is seen wherever the ``jit`` happens (a jit created
inside the function, a closure re-jitted per call, ...). Counting cache
entries instead would be wrong: the canonical TrainState loop has two
entries because ``step`` starts as a Python int, yet it never retraces once
warm.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import re
from typing import Any, Callable, Iterator

import jax
import jax.monitoring
import numpy as np

from autograder.core.failures import CheckFailure
from autograder.checks.values import function_name

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_PJIT_FUNCTION = type(jax.jit(lambda x: x))


class TraceCounter:
    """Counts JAX traces and XLA compilations while it is active (``with TraceCounter() as c``)."""

    _active: list["TraceCounter"] = []

    def __init__(self) -> None:
        self.traces = 0
        self.compiles = 0

    def __enter__(self) -> "TraceCounter":
        TraceCounter._active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        TraceCounter._active.remove(self)

    @staticmethod
    def _listener(event: str, duration: float, **_: Any) -> None:
        for counter in TraceCounter._active:
            if event == TRACE_EVENT:
                counter.traces += 1
            elif event == COMPILE_EVENT:
                counter.compiles += 1


jax.monitoring.register_event_duration_secs_listener(TraceCounter._listener)


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


def _tidy(explanation: str, limit: int = 14) -> str:
    lines = [re.sub(r"\S*/site-packages/", "", line) for line in explanation.splitlines() if line.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return "\n".join(lines)


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
    result = None
    for i in range(warmup):
        result = fn(*make_args(i))
    jax.block_until_ready(result)
    traces = compiles = 0
    for i in range(warmup, warmup + calls):
        args = make_args(i)
        with TraceCounter() as counter:
            jax.block_until_ready(fn(*args))
        traces += counter.traces
        compiles += counter.compiles
    if traces or compiles:
        _raise_retraced(fn, make_args(warmup + calls), name, traces, compiles, calls)


def assert_no_retrace_in_loop(
    fn: Callable,
    first_args: tuple,
    next_args: Callable[[Any, int], tuple],
    *,
    warmup: int = 2,
    calls: int = 3,
    name: str | None = None,
) -> None:
    """Like :func:`assert_no_retrace`, in a loop that feeds each result back, as training does.

    Call 0 gets ``first_args``; call ``i`` gets ``next_args(result of call i - 1, i)``.
    A result can differ from a fresh input in what jit caches on (a committed
    array, a sharding, a weak type, a Python int step that became an array),
    so a function may trace once for fresh inputs and once for its own
    outputs: ``warmup`` covers both (2 by default), then ``calls`` more calls
    must trace and compile nothing.
    """
    name = name or function_name(fn)
    result = fn(*first_args)
    for i in range(1, warmup):
        result = fn(*next_args(result, i))
    jax.block_until_ready(result)
    traces = compiles = 0
    for i in range(warmup, warmup + calls):
        args = next_args(result, i)
        with TraceCounter() as counter:
            result = jax.block_until_ready(fn(*args))
        traces += counter.traces
        compiles += counter.compiles
    if traces or compiles:
        _raise_retraced(fn, next_args(result, warmup + calls), name, traces, compiles, calls)


def _raise_retraced(fn: Callable, args: tuple, name: str, traces: int, compiles: int, calls: int) -> None:
    with explain_cache_misses() as log:
        jax.block_until_ready(fn(*args))
    why = _tidy(log.getvalue()) or "(JAX gave no explanation: a function is probably created anew on every call)"
    raise CheckFailure(
        f"{name} does not trace or compile again on same-shaped inputs once warm",
        f"{name} traced {traces} and compiled {compiles} more time(s) in {calls} calls with same-shaped "
        "inputs after warming up",
        "every retrace costs a full compilation. Common causes: jax.jit(...), a lambda, an optimizer or a model "
        "created inside the function on every call; Python numbers passed as static arguments; values computed "
        "on the host from traced state.\nJAX explains the cache miss:\n" + why,
    )


def _static_difference(given: Any, returned: Any, where: str = "state") -> str | None:
    """What about ``returned`` makes ``jax.jit`` see another signature than ``given``: a static field, a leaf's type."""
    tree = jax.tree_util
    if tree.tree_structure(given) != tree.tree_structure(returned):
        if type(given) is not type(returned):
            return f"{where} is a {type(returned).__qualname__}, it was a {type(given).__qualname__}"
        if dataclasses.is_dataclass(given):
            for field in dataclasses.fields(given):
                before, after = getattr(given, field.name, None), getattr(returned, field.name, None)
                if not field.metadata.get("pytree_node", True):
                    if before is not after and not _static_equal(before, after):
                        if type(before) in (int, float, bool, str):
                            held = f"it was {before!r}, the returned state holds {after!r}"
                        else:
                            held = f"the returned state holds a new {type(after).__qualname__} object ({_short(after)})"
                        return f"{where}.{field.name} is a static field (part of the compiled signature) and {held}"
                elif tree.tree_structure(before) != tree.tree_structure(after):
                    return _static_difference(before, after, f"{where}.{field.name}") or f"{where}.{field.name}"
        return f"{where} has another pytree structure: {tree.tree_structure(returned)} instead of {tree.tree_structure(given)}"
    for (path, a), (_, b) in zip(tree.tree_flatten_with_path(given)[0], tree.tree_flatten_with_path(returned)[0]):
        sig_a, sig_b = _signature(a), _signature(b)
        if sig_a != sig_b:
            return f"{where}{tree.keystr(path)} is {sig_b}, it was {sig_a}"
    return None


def _short(value: Any, limit: int = 70) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _static_equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == is not a bool
        return False


def _signature(leaf: Any) -> str:
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        weak = " (weakly typed)" if getattr(leaf, "weak_type", False) else ""
        return f"a {type(leaf).__name__ if not isinstance(leaf, jax.Array) else 'jax.Array'} {leaf.dtype}{list(leaf.shape)}{weak}"
    return f"a Python {type(leaf).__name__}"


def assert_chained_steps_do_not_retrace(
    step: Callable,
    state: Any,
    batches: list,
    *,
    next_state: Callable[[Any, Any], Any] = lambda state, result: result[0],
    warmup: int = 2,
    name: str | None = None,
) -> None:
    """A loop of steps, each fed the state the previous one returned, traces and compiles nothing once warm.

    This is how a student's training loop calls a step: ``state, ... =
    step(state, batch)``. A step that returns a state of another static
    structure than it was given (a new ``apply_fn`` or ``tx`` object, a step
    counter turned static, a leaf of another dtype) compiles again on every
    step, although it never retraces on the same input twice.
    ``next_state(state, result)`` is the state of the next call (by default
    ``result[0]``; for an evaluation step, the state after a reference
    training step). The first ``warmup`` calls may compile (a TrainState's
    step starts as a Python int); each of the others, with the batch
    ``batches[i % len(batches)]``, must not. ``batches`` must all have one shape.
    Unlike :func:`assert_no_retrace_in_loop` (any function, any arguments), a
    failure names what changed between the state given and the state returned.
    """
    name = name or function_name(step)
    calls = max(len(batches), warmup + 3)
    retraced: list[int] = []
    traces = compiles = 0
    cause = None
    for i in range(calls):
        batch = batches[i % len(batches)]
        with TraceCounter() as counter:
            result = step(state, batch)
            jax.block_until_ready(result)
        if i >= warmup and (counter.traces or counter.compiles):
            retraced.append(i + 1)
            traces += counter.traces
            compiles += counter.compiles
        following = next_state(state, result)
        if cause is None and i >= warmup - 1:
            cause = _static_difference(state, following)
        state = following
    if not retraced:
        return
    with explain_cache_misses() as log:
        jax.block_until_ready(step(state, batches[calls % len(batches)]))
    why = _tidy(log.getvalue()) or "(JAX gave no explanation: a function is probably created anew on every call)"
    found = f"\nwhat changed between steps: {cause}" if cause else ""
    raise CheckFailure(
        f"{name} does not trace or compile again in a training loop once warm "
        f"(each step given the state the previous step returned)",
        f"{name} traced {traces} and compiled {compiles} more time(s) in a loop of {calls} chained steps after "
        f"{warmup} warm-up steps (at step(s) {', '.join(map(str, retraced))}){found}",
        "a jitted step compiles again whenever its input has another static structure than before. Return a state "
        "built from the one you received (state.apply_gradients(...), state.replace(...)) with the same apply_fn "
        "and tx objects, the same dtypes, and no Python numbers where the input had arrays; create no optimizer, "
        "model or function inside the step.\nJAX explains the cache miss:\n" + why,
    )
