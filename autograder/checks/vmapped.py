"""Vmapped: how a batched function is built from its one-example helper, read from the helper's calls.

- :func:`record_calls`            which calls a helper (e.g. the student's ``linear``) received, and with what
- :func:`assert_built_with_vmap`  the batched function calls the helper exactly once, through ``jax.vmap``
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from autograder.checks.values import function_name
from autograder.core.failures import CheckFailure


@dataclass(frozen=True)
class Call:
    """One call of a spied-on function: the kinds and shapes of its positional arguments."""

    arg_kinds: tuple[str, ...]
    arg_shapes: tuple[tuple[int, ...] | None, ...]

    @property
    def batched(self) -> bool:
        """Called by ``jax.vmap`` (an argument is a batch tracer)."""
        return "vmap" in self.arg_kinds

    @property
    def traced(self) -> bool:
        return any(kind != "concrete" for kind in self.arg_kinds)


def _kind(value: Any) -> str:
    from jax._src.interpreters import batching  # BatchTracer is not re-exported publicly

    if isinstance(value, batching.BatchTracer):
        return "vmap"
    if isinstance(value, jax.core.Tracer):
        return "traced"
    return "concrete"


def record_calls(target: Callable, run: Callable[[], Any]) -> tuple[Any, list[Call]]:
    """Run ``run()`` and record every call of ``target``'s code.

    The spy follows the code object, not a name, so calls through any
    reference (a module attribute, a ``jax.vmap(linear)`` made at import, a
    closure) are all seen. Returns ``(run's result, calls)``.
    """
    code = getattr(target, "__wrapped__", target).__code__
    n_args = code.co_argcount
    calls: list[Call] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            values = [frame.f_locals.get(v) for v in code.co_varnames[:n_args]]
            calls.append(
                Call(
                    tuple(_kind(v) for v in values),
                    tuple(tuple(np.shape(v)) if hasattr(v, "shape") else None for v in values),
                )
            )

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(previous)
    return result, calls


def _what_vmap_does(helper: str) -> str:
    return (
        f"jax.vmap({helper}, in_axes=(0, None, None)) takes {helper}, written for ONE example, and returns a "
        "function of the whole batch: it maps axis 0 of the first argument and shares the others, and it adds "
        "the batch axis to every operation inside (one example's x @ W becomes one matrix product over all B "
        "examples). It is one call and one program, with no loop."
    )


def assert_built_with_vmap(
    target: Callable,
    run: Callable[[], Any],
    *,
    caller: str,
    batch_size: int,
    mapped: Sequence[int] = (0,),
) -> Any:
    """``run()`` calls ``target`` exactly once, through ``jax.vmap``, batching only the arguments in ``mapped``.

    Calls are recorded under ``jax.disable_jit()``, so a jitted caller (or a
    jitted ``target``) whose trace is already cached still runs its Python
    code. Rejected, each with a message explaining what vmap would do: no call
    (a hand-written batched computation), one call per example (a Python loop,
    or ``lax.map``/``lax.scan``), several vmapped calls, and batching an
    argument that should be shared (``in_axes`` other than ``mapped``).
    """
    helper = function_name(target)
    check = f"{caller} is built from {helper} with one jax.vmap"
    with jax.disable_jit():
        result, calls = record_calls(target, run)
    batched = [c for c in calls if c.batched]
    if not calls:
        raise CheckFailure(
            check,
            f"{caller} never calls {helper}: a hand-written batched computation (like xs @ W + b) gives the "
            "right numbers, but it is not what this exercise is about",
            _what_vmap_does(helper) + f"\nWrite {helper} for one example and let jax.vmap derive {caller} from it.",
        )
    if not batched:
        raise _one_example_at_a_time(target, run, caller, batch_size, len(calls))
    if len(batched) > 1:
        raise CheckFailure(
            check,
            f"{caller} calls a vmapped {helper} {len(batched)} times for one batch",
            "one jax.vmap over the whole batch is enough: " + _what_vmap_does(helper),
        )
    call = batched[0]
    shared = [i for i, kind in enumerate(call.arg_kinds) if kind == "vmap" and i not in mapped]
    if shared:
        names = getattr(target, "__wrapped__", target).__code__.co_varnames
        which = ", ".join(names[i] if i < len(names) else f"argument {i}" for i in shared)
        raise CheckFailure(
            check,
            f"{caller} maps {helper} over {which} too, so every example gets its own copy of {which}",
            "the parameters are the same for every example: give them in_axes None "
            "(jax.vmap(f, in_axes=(0, None, None))) so they are shared, not broadcast and copied B times",
        )
    return result


def _one_example_at_a_time(target: Callable, run: Callable[[], Any], caller: str, batch_size: int, n_calls: int):
    """The failure of a caller that runs ``target`` once per example (a Python loop, or ``lax.map``/``lax.scan``,
    told apart by a second run with jit on: a compiled loop traces the helper once)."""
    from autograder.checks.tracing import is_jitted

    helper = function_name(target)
    _, traced_calls = record_calls(target, run)
    lax_loop = not is_jitted(target) and batch_size > 1 and len(traced_calls) == 1 and traced_calls[0].traced
    how = (
        "lax.map (or lax.scan) runs it once per example, one after another: a loop compiled into the program"
        if lax_loop
        else "a loop over the examples (a Python for loop, a comprehension, or lax.map/lax.scan) runs it "
        "once per example, one after another"
    )
    return CheckFailure(
        f"{caller} is built from {helper} with one jax.vmap",
        f"{caller} calls {helper} on one example at a time ({n_calls} call(s) for a batch of {batch_size}): {how}",
        _what_vmap_does(helper),
    )
