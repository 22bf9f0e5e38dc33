"""Reference solution: immutable arrays and ``.at[]`` updates."""

import jax.numpy as jnp


def set_diagonal(x, value):
    n = x.shape[0]
    idx = jnp.arange(n)
    return x.at[idx, idx].set(value)


def scatter_add(x, indices, updates):
    return x.at[indices].add(updates)


def clamp_at(x, indices, lo, hi):
    return x.at[indices].max(lo).at[indices].min(hi)


def replace_negatives(x, value):
    return jnp.where(x < 0, value, x)
