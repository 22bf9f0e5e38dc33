"""Module 1 — immutable arrays and ``.at[]``.

A JAX array can never be changed in place: ``x[0] = 1.0`` raises a
``TypeError``. This is not an inconvenience but the reason JAX can trace,
compile and differentiate your code: a function that cannot write into its
inputs is a pure function of them.

To "update" an array you ask for a *new* array that differs in some places:

    y = x.at[idx].set(v)    # y[idx] = v
    y = x.at[idx].add(v)    # y[idx] += v   (repeated indices accumulate)
    y = x.at[idx].mul(v)    # also .min(v), .max(v), .get()

``x`` is left exactly as it was. Under ``jax.jit`` XLA usually performs the
update in place anyway, when it can prove ``x`` is not used again, so the
functional style costs nothing.

Every function here must also work inside ``jax.jit``. Run the checks with

    pytest exercises/test_at_updates.py
"""

import jax
import jax.numpy as jnp


def set_diagonal(x, value):
    """Return a copy of the square matrix ``x`` (n, n) whose diagonal is ``value``.

    Every ``x[i, i]`` becomes ``value``; all other entries are unchanged, and
    ``x`` itself is not modified. ``value`` is a float scalar.

    Example: ``set_diagonal(jnp.zeros((2, 2)), 1.0)`` is ``[[1, 0], [0, 1]]``.
    Hint: ``.at[]`` accepts a pair of index arrays, one per axis.
    """
    # TODO: build the indices of the diagonal and use x.at[...].set(...)
    raise NotImplementedError


def scatter_add(x, indices, updates):
    """Add ``updates[j]`` to ``x[indices[j]]`` for every ``j``; return the new array.

    ``x`` has shape (n,), ``indices`` is an int array of shape (k,), ``updates``
    has shape (k,). Indices may repeat, and repeated indices accumulate:
    ``scatter_add(zeros(3), [1, 1], [2., 5.])`` is ``[0, 7, 0]``.
    """
    # TODO: one .at[] call does this, repeated indices included
    raise NotImplementedError


def clamp_at(x, indices, lo, hi):
    """Clamp the entries of ``x`` (n,) at ``indices`` into ``[lo, hi]``.

    Entries whose index appears in ``indices`` (possibly several times) become
    ``min(max(x[i], lo), hi)``; all other entries are unchanged. ``lo <= hi``.
    Example: ``clamp_at([-5., 0., 5.], [0, 2], -1., 1.)`` is ``[-1, 0, 1]``.
    """
    # TODO: .at[] has .min() and .max() updates
    raise NotImplementedError


def replace_negatives(x, value):
    """Return ``x`` (any shape) with every entry ``< 0`` replaced by ``value``.

    This function must work under ``jax.jit``. Boolean indexing such as
    ``x.at[x < 0].set(value)`` or ``x[x < 0]`` selects a number of entries
    that depends on the *values* of ``x``, and under ``jit`` shapes must be
    known from shapes alone. Choose per entry instead, keeping the shape.
    """
    # TODO: keep the shape: pick value or x entry by entry
    raise NotImplementedError
