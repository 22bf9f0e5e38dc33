"""Reference solution: stateless PRNG keys and ``split``."""

import jax
import jax.numpy as jnp
from jax import lax


def two_normals(key):
    key, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def init_mlp(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        {
            "W": jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) * jnp.sqrt(2.0 / sizes[i]),
            "b": jnp.zeros(sizes[i + 1]),
        }
        for i in range(len(sizes) - 1)
    ]


def dropout(key, x, rate):
    keep = jax.random.bernoulli(key, 1 - rate, x.shape)
    return jnp.where(keep, x / (1 - rate), 0)


def _walk_step(key, _):
    key, sub = jax.random.split(key)
    return key, jax.random.normal(sub)


def random_walk(key, n_steps):
    _, steps = lax.scan(_walk_step, key, None, length=n_steps)
    return jnp.cumsum(steps)
