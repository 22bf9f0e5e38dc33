"""Reference solution: static arguments, traced values, loops and side effects under jit."""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, static_argnames=("multiple",))
def pad_to_multiple(x, multiple):
    n = x.shape[0]
    padded_n = -(-n // multiple) * multiple
    padded = jnp.zeros((padded_n,) + x.shape[1:], x.dtype).at[:n].set(x)
    mask = jnp.arange(padded_n) < n
    return padded, mask


@jax.jit
def clip_by_norm(x, max_norm):
    sq = jnp.sum(x**2)
    too_long = sq > max_norm**2
    safe_sq = jnp.where(too_long, sq, 1.0)
    return jnp.where(too_long, x * (max_norm / jnp.sqrt(safe_sq)), x)


@functools.partial(jax.jit, static_argnames=("n_steps",))
def newton_sqrt(a, n_steps):
    def step(x, _):
        x = (x + a / x) / 2
        return x, x

    x_n, history = jax.lax.scan(step, a, None, length=n_steps)
    return x_n, history


@jax.jit
def standardize_logged(x):
    mean, std = jnp.mean(x), jnp.std(x)
    jax.debug.print("mean={m} std={s}", m=mean, s=std)
    return (x - mean) / std
