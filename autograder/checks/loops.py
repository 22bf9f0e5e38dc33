"""Loops: a jitted function called the way a training loop calls it, each output fed into the next call.

:func:`tracing.assert_no_retrace <autograder.checks.tracing.assert_no_retrace>`
calls a function on fresh arguments. A step can pass that and still retrace
in a real loop, because what it *returns* becomes its next input: a state
whose static structure changed (a new optimizer object, a Python-int
``step``, a ``FrozenDict`` where a dict went in), a committed array or a
sharding, or a step number read on the host (``int(state.step)``), only
shows when the output is fed back in.

One loop (:func:`tracing.count_retraces <autograder.checks.tracing.count_retraces>`) counts the traces and
one builder (:func:`tracing.retrace_failure <autograder.checks.tracing.retrace_failure>`) says why; these checks,
like ``tracing.assert_no_retrace``, are presets of them, each saying what was looped:

- :func:`assert_no_retrace_in_loop`: any function and any carry (``make_args``
  and ``next_carry`` say how the loop advances);
- :func:`assert_no_retrace_when_fed_back`: each call gets arguments built from
  the previous call's result (a data-parallel step fed its replicated state);
- :func:`assert_chained_steps_do_not_retrace`: ``state, ... = step(state, batch)``,
  and a failure names what changed between the state given and the state returned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from autograder.checks.tracing import NO_EXPLANATION, count_retraces, retrace_failure, same_shapes_failure  # noqa: F401
from autograder.checks.values import function_name

LOOP_CAUSES = (
    "Common causes: a Python number that changes every step used as a static argument (int(state.step), a "
    "learning rate in static_argnums); a value read on the host from a traced one (int(...), float(...), "
    ".item()); a returned state whose static parts differ from the ones it was given (a new optimizer or "
    "model object, a Python int where an array went in, a FrozenDict where a dict went in); a jax.jit or a "
    "lambda created on every call."
)


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
    seen = count_retraces(fn, carry, make_args, next_carry, warmup=warmup, calls=calls)
    if not seen.traced_at:
        return
    raise retrace_failure(
        fn,
        make_args(warmup + calls, seen.carry),
        check=f"{name} does not trace or compile again in {loop} once warm",
        found=f"in {loop} that feeds each call's output into the next, {name} traced again at call(s) "
        f"{', '.join(map(str, seen.traced_at))} of {warmup + calls} (after {warmup} warm-up calls; "
        f"{seen.compiles} compilation(s))",
        advice="every retrace costs a full compilation, on every step. " + LOOP_CAUSES,
    )


def assert_no_retrace_when_fed_back(
    fn: Callable,
    first_args: tuple,
    next_args: Callable[[Any, int], tuple],
    *,
    warmup: int = 2,
    calls: int = 3,
    name: str | None = None,
) -> None:
    """Like :func:`tracing.assert_no_retrace <autograder.checks.tracing.assert_no_retrace>`, in a loop that
    feeds each result back, as training does.

    Call 0 gets ``first_args``; call ``i`` gets ``next_args(result of call i - 1, i)``.
    A result can differ from a fresh input in what jit caches on (a committed
    array, a sharding, a weak type, a Python int step that became an array),
    so a function may trace once for fresh inputs and once for its own
    outputs: ``warmup`` covers both (2 by default), then ``calls`` more calls
    must trace and compile nothing.
    """
    name = name or function_name(fn)

    def make_args(i: int, result: Any) -> tuple:
        return first_args if i == 0 else next_args(result, i)

    seen = count_retraces(fn, None, make_args, lambda i, carry, result: result, warmup=warmup, calls=calls)
    if seen.traced_at:
        raise same_shapes_failure(fn, next_args(seen.carry, warmup + calls), name, seen, calls)


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
    ``result[0]``; for an evaluation step, a state one training step later).
    The first ``warmup`` calls may compile (a TrainState's
    step starts as a Python int); each of the others, with the batch
    ``batches[i % len(batches)]``, must not. ``batches`` must all have one shape.
    A failure names what changed between the state given and the state returned.
    """
    name = name or function_name(step)
    calls = max(len(batches), warmup + 3)

    def make_args(i: int, state: Any) -> tuple:
        return state, batches[i % len(batches)]

    seen = count_retraces(
        step,
        state,
        make_args,
        lambda i, state, result: next_state(state, result),
        warmup=warmup,
        calls=calls - warmup,
        cause=static_difference,
    )
    if not seen.traced_at:
        return
    changed = f"\nwhat changed between steps: {seen.cause}" if seen.cause else ""
    raise retrace_failure(
        step,
        make_args(calls, seen.carry),
        check=f"{name} does not trace or compile again in a training loop once warm "
        f"(each step given the state the previous step returned)",
        found=f"{name} traced {seen.traces} and compiled {seen.compiles} more time(s) in a loop of {calls} chained "
        f"steps after {warmup} warm-up steps (at step(s) {', '.join(map(str, seen.traced_at))}){changed}",
        advice="a jitted step compiles again whenever its input has another static structure than before. Return a "
        "state built from the one you received (state.apply_gradients(...), state.replace(...)) with the same "
        "apply_fn and tx objects, the same dtypes, and no Python numbers where the input had arrays; create no "
        "optimizer, model or function inside the step.",
    )


def static_difference(given: Any, returned: Any, where: str = "state") -> str | None:
    """What about ``returned`` makes ``jax.jit`` see another signature than ``given``: a static field, a leaf's type."""
    tree = jax.tree_util
    if tree.tree_structure(given) != tree.tree_structure(returned):  # type: ignore[operator]  # jaxlib's stub
        if type(given) is not type(returned):
            return f"{where} is a {type(returned).__qualname__}, it was a {type(given).__qualname__}"
        if dataclasses.is_dataclass(given):
            for fld in dataclasses.fields(given):
                before, after = getattr(given, fld.name, None), getattr(returned, fld.name, None)
                if not fld.metadata.get("pytree_node", True):
                    if before is not after and not _static_equal(before, after):
                        if type(before) in (int, float, bool, str):
                            held = f"it was {before!r}, the returned state holds {after!r}"
                        else:
                            held = f"the returned state holds a new {type(after).__qualname__} object ({_short(after)})"
                        return f"{where}.{fld.name} is a static field (part of the compiled signature) and {held}"
                elif tree.tree_structure(before) != tree.tree_structure(after):  # type: ignore[operator]
                    return static_difference(before, after, f"{where}.{fld.name}") or f"{where}.{fld.name}"
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
