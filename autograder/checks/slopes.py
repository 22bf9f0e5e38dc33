"""Slopes: ``jax.grad`` through a function against the function's own central differences.

A function can give the right values and the wrong gradient (a ``stop_gradient``, a value taken out of JAX with
``float()`` or NumPy and put back): what JAX differentiates is then not what the function computes.

- :func:`assert_gradient_is_the_slope`      the gradient equals the slope, in the check's process
- :func:`gradient_and_slope`                both, as data (recorded for the trusted side)
- :func:`assert_gradient_matches_the_slope` the comparison of what :func:`gradient_and_slope` gave
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from autograder.checks.values import assert_trees_close, function_name


def assert_gradient_is_the_slope(
    scalar_fn: Callable, x: Any, *, step: float = 1e-2, rtol: float = 1e-2, atol: float = 1e-3, what: str | None = None
) -> None:
    """``jax.grad(scalar_fn)(x)`` equals the slope of ``scalar_fn`` itself, by central differences.

    A function can give the right values and the wrong gradient (a ``stop_gradient``, a value taken
    out of JAX with ``float()`` or NumPy and put back): what JAX differentiates is not what the
    function computes. The comparison is with the function's own values, so no expected values are
    needed; differences are taken in float64 around a float32 ``x`` with ``step``, which is accurate to
    about ``rtol`` for a smooth function (keep ``x`` away from kinks).
    """
    what = what or f"the gradient of {function_name(scalar_fn)}"
    gradient, slope = gradient_and_slope(scalar_fn, x, step=step)
    assert_gradient_matches_the_slope(gradient, slope, what=what, rtol=rtol, atol=atol)


def gradient_and_slope(scalar_fn: Callable, x: Any, *, step: float = 1e-2) -> tuple[np.ndarray, np.ndarray]:
    """``(jax.grad(scalar_fn)(x), the slope of scalar_fn by central differences)``, both float64 arrays: what
    :func:`assert_gradient_is_the_slope` compares, as data (a check decided on the trusted side records them
    through ``transformed_once`` and compares them with :func:`assert_gradient_matches_the_slope`)."""
    point = np.asarray(x, np.float32)
    got = np.asarray(jax.grad(scalar_fn)(jax.numpy.asarray(point)), np.float64)
    slope = np.zeros(point.shape, np.float64)
    for index in np.ndindex(point.shape):
        up, down = point.copy(), point.copy()
        up[index] += step
        down[index] -= step
        rise = float(scalar_fn(jax.numpy.asarray(up))) - float(scalar_fn(jax.numpy.asarray(down)))
        slope[index] = rise / (float(up[index]) - float(down[index]))
    return got, slope


def assert_gradient_matches_the_slope(
    gradient: Any, slope: Any, *, what: str, rtol: float = 1e-2, atol: float = 1e-3
) -> None:
    """:func:`assert_gradient_is_the_slope`'s comparison, on what :func:`gradient_and_slope` gave."""
    check = f"{what} equals the slope of the function itself (central differences)"
    assert_trees_close(
        gradient, slope, rtol=rtol, atol=atol, name="gradient", check=check, source="the central differences"
    )
