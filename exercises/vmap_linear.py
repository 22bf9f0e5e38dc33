"""Module 4 — automatic vectorisation with ``jax.vmap``.

Write a function for ONE example, and let JAX give you the batched version:

    def f(x):                      # x: (d,)
        ...
    f_batched = jax.vmap(f)        # xs: (B, d) -> stacks f(xs[i]) for every i

``vmap`` does not run a loop. It traces ``f`` once and rewrites every
operation in it to carry an extra batch axis: a dot product of one example
becomes one matrix product over the whole batch, which is exactly the code
you would have written by hand, but derived from the simple one.

``in_axes`` says, per argument, which axis is the batch axis, or ``None``
for an argument shared by every example (like the weights of a layer):

    jax.vmap(g, in_axes=(0, None))(xs, W)   # xs[i] for each example, the same W

Transformations compose: ``jax.grad(loss)`` is the gradient for one example,
and ``jax.vmap(jax.grad(loss), ...)`` gives every example's own gradient in
one call (per-example gradients, used e.g. for differential privacy), which
is not the gradient of the mean loss.

Calling ``jax.vmap(f)(...)`` inside your function is fine: vmap compiles
nothing. Wrapping a *new* ``jax.jit(jax.vmap(f))`` around it on every call
is not: each new ``jit`` object starts with an empty cache, so every call
traces and compiles again. Build jitted functions once (``@jax.jit`` or at
module level) and reuse them.

Arrays may arrive as NumPy or JAX arrays. Run the checks with

    pytest exercises/test_vmap_linear.py
"""

import jax
import jax.numpy as jnp


def linear(x, W, b):
    """One example through a linear layer: ``x @ W + b``.

    ``x`` has shape (d_in,), ``W`` (d_in, d_out), ``b`` (d_out,); the result
    has shape (d_out,). Must work under ``jax.jit``.
    """
    # TODO: one line, for one example
    raise NotImplementedError


def batched_linear(xs, W, b):
    """``linear`` applied to every row of ``xs`` (B, d_in); returns (B, d_out).

    Build it from ``linear`` with ONE ``jax.vmap``: map axis 0 of ``xs`` and
    share ``W`` and ``b`` (``in_axes=(0, None, None)``). No Python loop over
    the examples, no ``lax.map``, and no hand-written ``xs @ W + b``: the
    checks look at how ``linear`` is called. Called again with same-shaped
    inputs it must not trace again.
    """
    # TODO: jax.vmap(linear, in_axes=...) and call it
    raise NotImplementedError


def per_example_grads(params, xs, ys):
    """The gradient of every example's own loss with respect to ``params``.

    ``params = {"W": (d_in, d_out), "b": (d_out,)}``, ``xs`` (B, d_in), ``ys``
    (B, d_out). The loss of one example is
    ``0.5 * sum((linear(x, W, b) - y) ** 2)``. Return a dict like ``params``
    whose leaves have a leading batch axis: ``{"W": (B, d_in, d_out), "b": (B, d_out)}``,
    entry ``i`` being the gradient of example ``i``'s loss. Use
    ``jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))``: no Python loop.
    """
    # TODO: write the loss of one example, take jax.grad of it, vmap over examples only
    raise NotImplementedError
