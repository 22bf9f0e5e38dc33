"""Calls: how many times a function the student is given gets called.

A function passed to the student's code (the ``f`` of an autodiff exercise)
is wrapped in a :class:`CountedFunction`, which counts its Python calls. A
transformation such as ``jax.value_and_grad`` or ``jax.jvp`` calls ``f`` once
to trace it, whatever the size of the input, so the count says how many
forward passes the student's code asks for: ``f(x)`` followed by
``jax.grad(f)(x)`` makes two, finite differences make n + 1, a Python loop of
``jax.vjp`` makes one per row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from autograder.core.failures import CheckFailure


class CountedFunction:
    """``fn`` itself, counting how many times it is called (``.calls``).

    It looks like ``fn`` to introspection (name, signature, ``__wrapped__``)
    and is hashable, so it can also be a static argument of ``jax.jit``.
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        self.calls = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def count_calls(fn: Callable, run: Callable[[Callable], Any]) -> tuple[Any, int]:
    """``run(counted_fn)``'s result and how many times it called ``fn`` (through the counted stand-in)."""
    counted = CountedFunction(fn)
    result = run(counted)
    return result, counted.calls


def assert_called_once(
    fn: Callable,
    run: Callable[[Callable], Any],
    *,
    caller: str,
    argument: str = "f",
    advice: str,
) -> Any:
    """``run(counted_fn)`` calls ``fn`` exactly once; returns ``run``'s result.

    ``caller`` names the student's function (the one ``run`` calls), and
    ``argument`` the name ``fn`` has in its signature.
    """
    result, calls = count_calls(fn, run)
    if calls != 1:
        raise CheckFailure(
            f"{caller} calls {argument} exactly once",
            f"{caller} called {argument} {calls} time{'s' if calls != 1 else ''} for one call",
            advice,
        )
    return result
