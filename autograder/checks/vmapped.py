"""Vmapped: which calls a helper received while a function ran, read from the helper's calls (observed where it runs).

- :func:`record_calls`            which calls a helper (e.g. the student's ``linear``) received, and with what

"One vmap of the helper" is decided from the program instead (:mod:`autograder.checks.vmap_program`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np


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
