"""Jaxprs: which arrays a traced program builds, nested programs included.

``jax.make_jaxpr`` shows every operation a function performs and the shape of
every array it produces, without running anything. The checks here look for
arrays that should not exist at all: the (n, n) Hessian in a Hessian-vector
product, the (m, n) Jacobian in a Jacobian-vector product. Programs inside
programs (``jit``/``pjit``, ``closed_call``, ``custom_jvp_call``,
``custom_vjp_call``, ``scan``, ``while``, ``cond`` branches, ...) are walked
too, and so are the constants a program captured.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend.core
import numpy as np

from autograder.core.failures import CheckFailure


@dataclass(frozen=True)
class Intermediate:
    """One array a traced program builds: the primitive that makes it, its shape and dtype, and where."""

    primitive: str
    shape: tuple[int, ...]
    dtype: str
    where: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def describe(self) -> str:
        article = "an" if self.dtype[:1] in "aeiou" else "a"
        text = f"{article} {self.dtype}[{','.join(map(str, self.shape))}] array ({self.size} elements) made by `{self.primitive}`"
        return text + (f" at {self.where}" if self.where else "")


def _programs_in(value: Any) -> Iterator[tuple[Any, Sequence[Any]]]:
    """The (jaxpr, consts) pairs held by an equation's parameter (a Jaxpr, a ClosedJaxpr, or a list of them)."""
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(item, jax.extend.core.ClosedJaxpr):
            yield item.jaxpr, item.consts
        elif isinstance(item, jax.extend.core.Jaxpr):
            yield item, ()


def _where(eqn: Any) -> str:
    try:
        from jax._src import source_info_util  # the user's line, as JAX's own error messages show it

        where = source_info_util.summarize(eqn.source_info)  # "/path/to/file.py:12:4 (function)"
    except Exception:  # noqa: BLE001 - a location is a courtesy, never a reason to fail
        return ""
    found = re.match(r"(?P<path>.+?):(?P<line>\d+)(:\d+)? \((?P<function>[^)]*)\)$", where)
    if not found:
        return where
    return f"{os.path.basename(found['path'])} line {found['line']} (in {found['function']})"


def walk(jaxpr: Any, consts: Sequence[Any] = ()) -> Iterator[tuple[Any | None, Sequence[Any]]]:
    """The one jaxpr walker: every program in ``jaxpr`` (itself first), depth first in program order.

    A program yields ``(None, its captured constants)`` when it starts, then ``(equation, constants)`` for each
    of its equations, each equation followed by the programs nested in it (``jit``, ``scan``, ``cond``
    branches, ...: a ``Jaxpr`` or ``ClosedJaxpr`` parameter, or a list of them).
    """
    yield None, consts
    for eqn in jaxpr.eqns:
        yield eqn, consts
        for param in eqn.params.values():
            for inner, inner_consts in _programs_in(param):
                yield from walk(inner, inner_consts)


def _intermediates_of(jaxpr: Any, consts: Sequence[Any]) -> Iterator[Intermediate]:
    for eqn, captured in walk(jaxpr, consts):
        if eqn is None:
            for const in captured:
                if hasattr(const, "shape") and hasattr(const, "dtype"):
                    yield Intermediate("a captured constant", tuple(np.shape(const)), np.dtype(const.dtype).name)
            continue
        for var in eqn.outvars:
            aval = getattr(var, "aval", None)
            if aval is not None and hasattr(aval, "shape"):
                yield Intermediate(eqn.primitive.name, tuple(aval.shape), str(aval.dtype), _where(eqn))


def intermediates(fn: Callable, *args: Any, static_argnums: Sequence[int] = ()) -> list[Intermediate]:
    """Every array ``fn(*args)`` builds while it runs (traced, never executed), nested programs included."""
    closed = jax.make_jaxpr(fn, static_argnums=tuple(static_argnums))(*args)
    return list(_intermediates_of(closed.jaxpr, closed.consts))


def assert_no_intermediate_of_size(
    fn: Callable,
    *args: Any,
    limit: int,
    check: str,
    problem: str,
    advice: str,
    static_argnums: Sequence[int] = (),
) -> None:
    """``fn(*args)`` builds no array of ``limit`` or more elements.

    ``problem`` starts the message (e.g. "hvp builds the whole Hessian for
    n = 1024"); the largest offending array, with the line that makes it, is
    added to it.
    """
    found = [i for i in intermediates(fn, *args, static_argnums=static_argnums) if i.size >= limit]
    if found:
        # the largest; among equals a floating array (the Jacobian itself, not the iota that indexes it)
        largest = max(found, key=lambda i: (i.size, i.dtype.startswith(("float", "bfloat", "complex"))))
        raise CheckFailure(check, f"{problem}: the traced program holds {largest.describe()}", advice)
