"""Module 8 — ``jit`` with static arguments, traced values, loops and side effects.

``jax.jit`` does not run your Python function on your numbers. It calls it
once with *tracers*: stand-ins that carry only a shape and a dtype. Every
``jnp`` operation on a tracer is recorded into a program (print it with
``jax.make_jaxpr``), XLA compiles that program, and later calls with inputs
of the same shapes and dtypes run the compiled program without touching your
Python code again. Four consequences, one per exercise:

1. **Static arguments.** An argument that decides a shape must be a plain
   Python value while tracing: declare it with ``static_argnames`` (or
   ``static_argnums``), e.g. ``functools.partial(jax.jit,
   static_argnames=("n",))``. Each new static value compiles a new program;
   values seen before reuse theirs. Shapes (``x.shape``) are always static,
   so arithmetic on them is done with Python (or NumPy) integers: ``jnp`` on
   them gives a tracer, which cannot be a shape.
2. **No Python ``if`` on traced values.** A tracer has no value to be True or
   False. Choose with ``jnp.where`` (both sides are computed) or
   ``jax.lax.cond``. Careful with gradients: ``jnp.where`` also differentiates
   the side it does not pick, so a ``NaN`` there (``sqrt`` at 0 has an
   infinite derivative) poisons the gradient unless the unpicked side is fed
   a safe value.
3. **Loops.** A Python ``for`` loop under ``jit`` is unrolled: ``n`` copies of
   the body in the program. ``jax.lax.scan`` and ``jax.lax.fori_loop`` keep
   one copy and loop at run time.
4. **Side effects.** A Python ``print`` or ``list.append`` runs while tracing
   only — once, on tracers — and is absent from the compiled program. What
   the program should produce, it returns; what it should print,
   ``jax.debug.print`` prints on every call.

Run the checks with

    pytest exercises/test_jit_static.py
"""

import functools

import jax
import jax.numpy as jnp


# TODO: make pad_to_multiple a jax.jit function in which `multiple` is static
def pad_to_multiple(x, multiple):
    """Pad ``x`` with zero rows so that its length is a multiple of ``multiple``.

    ``x`` is (n, ...) of any dtype, n >= 1; ``multiple`` is a Python int >= 1.
    Return ``(padded, mask)``: ``padded`` has shape (N, ...) with
    N = ceil(n / multiple) * multiple (N = n when n already is a multiple),
    ``padded[:n] == x`` and the added rows are zeros of ``x``'s dtype;
    ``mask`` is a bool (N,) array, True for the first n rows.

    Writing the decorator is part of the task: ``multiple`` decides the
    output shape, so it must be static, whether it is passed by position
    (``pad_to_multiple(x, 4)``) or by keyword (``pad_to_multiple(x,
    multiple=4)``). Compute N from ``x.shape`` with Python integers.
    """
    # TODO: N from the static shape with Python ints; a zero array of N rows with x written at the start; the mask
    raise NotImplementedError


@jax.jit
def clip_by_norm(x, max_norm):
    """Scale ``x`` down to norm ``max_norm`` when it is longer; leave it as it is otherwise.

    ``x`` is float32 of any shape; ``max_norm`` is a float32 scalar > 0 (a
    Python float or a 0-d array), and a *traced* argument: new values must
    not compile again. With ``norm = sqrt(sum(x ** 2))`` over all entries,
    return ``x * (max_norm / norm)`` when ``norm > max_norm`` and ``x``
    otherwise, with ``x``'s shape and dtype.

    Choose with ``jnp.where`` (a Python ``if`` cannot look at a tracer). The
    gradient must be finite everywhere, ``x = 0`` included, also under
    ``jax.vmap``: never take the square root (or divide by) a value that can be
    0, even in the branch that is not chosen. A second ``where`` that feeds a
    safe value (1.0) to the square root when the norm is small does it.
    """
    # TODO: compare sum(x ** 2) with max_norm ** 2; square root of a safe value only; choose with jnp.where
    raise NotImplementedError


# TODO: make newton_sqrt a jax.jit function in which `n_steps` is static
def newton_sqrt(a, n_steps):
    """Newton's iteration for the square root of every entry of ``a``.

    ``a`` is float32 (k,), all entries > 0; ``n_steps`` is a Python int >= 1.
    Start from ``x_0 = a`` and step ``x_(i+1) = (x_i + a / x_i) / 2``. Return
    ``(x_n, history)`` where ``history`` is float32 (n_steps, k) with
    ``history[i] = x_(i+1)``, so ``x_n = history[-1]``.

    Loop with ``jax.lax.scan`` (the step returns the new carry and the value
    to stack into ``history``) or with ``jax.lax.fori_loop`` writing into an
    array: a Python loop would put n_steps copies of the step into the
    program. Return the iterates; never append them to a list outside the
    function (under jit that list would receive tracers, once).
    """
    # TODO: one Newton step as the body of jax.lax.scan, run n_steps times from x_0 = a
    raise NotImplementedError


@jax.jit
def standardize_logged(x):
    """Return ``(x - mean) / std`` and print the statistics on every call.

    ``x`` is float32 (n,), n >= 2, not constant; ``std`` is the population
    standard deviation (``jnp.std``). On every call, print exactly one line,
    ``mean=<mean> std=<std>``, with
    ``jax.debug.print("mean={m} std={s}", m=mean, s=std)``. A Python
    ``print`` here would run only while tracing: once, showing tracers.
    """
    # TODO: mean and std with jnp; jax.debug.print them; return the standardized x
    raise NotImplementedError
