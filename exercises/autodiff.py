"""Module 7 — automatic differentiation: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``.

Differentiating a function is a transformation like any other in JAX: it
takes a Python function and returns a new one. Because a pure function has no
hidden state, its derivative is well defined, and JAX computes it exactly (no
finite differences, no rounding from a step size).

Every function here receives the function to differentiate, ``f``, as an
argument. You never see its formula, so the answer has to come from JAX.

- ``jax.grad(f)`` works for an ``f`` that returns a **scalar**; ``jax.grad(f)(x)``
  has ``x``'s shape. ``jax.value_and_grad(f)(x)`` returns ``(f(x), grad)``
  from ONE forward and one backward pass: no need to call ``f`` yourself.
- ``jax.jvp(f, (x,), (v,))`` (forward mode) returns the pair
  ``(f(x), J v)``: the Jacobian ``J`` of ``f`` at ``x`` applied to the direction
  ``v``. It costs about one evaluation of ``f``, and the Jacobian itself (m x n
  numbers) is never built. Cheap when the input is small or for one direction.
- ``jax.vjp(f, x)`` (reverse mode) returns ``(f(x), pullback)``; the
  pullback maps a cotangent ``c`` (shaped like ``f(x)``) to ``(c^T J,)`` — a
  tuple, one entry per argument of ``f``. The forward pass is run once and
  the pullback can be applied many times, e.g. under ``jax.vmap``.
- Transformations compose: ``jax.grad(f)`` is itself a function, so
  ``jax.jvp(jax.grad(f), (x,), (v,))`` differentiates the gradient along
  ``v``. That is the Hessian-vector product ``H v``, without the n x n Hessian.

Each transformation calls ``f`` once, to trace it, whatever the size of ``x``.
The checks count those traces in the program your function compiles to (the
``f`` they pass holds one cube root, so each trace of it adds one) and look
at the arrays that program builds at n = 1024: a million-entry Jacobian or
Hessian that the task does not need is reported.

Run the checks with

    pytest exercises/test_autodiff.py
"""

import jax
import jax.numpy as jnp


def value_and_gradient(f, x):
    """Return the pair ``(f(x), gradient of f at x)``.

    ``f`` maps ``x`` (a float32 array of any shape) to a float32 scalar. The
    gradient has ``x``'s shape and dtype. Get both from one transformation, so
    that ``f`` is called exactly once (computing ``f(x)`` separately would run
    the forward pass twice). Must work under ``jax.jit`` with ``f`` closed over.
    """
    # TODO: one transformation that returns the value together with the gradient
    raise NotImplementedError


def directional_derivative(f, x, v):
    """Return the directional derivative ``J_f(x) · v`` (the tangent only).

    ``f`` maps ``x`` (any shape) to an array of any shape, a scalar included;
    ``v`` has ``x``'s shape. The result has the shape of ``f(x)``: for a scalar
    ``f`` it is ``∇f(x) · v``. Use forward mode: it returns a pair, and only
    its second element is asked for here. Do not build the Jacobian (for
    n = m = 1024 that is a million numbers to get 1024 of them).
    """
    # TODO: push the direction v through f with forward-mode autodiff; return only the tangent
    raise NotImplementedError


def vjp_rows(f, x, cotangents):
    """Return the float32 array (k, n) whose row ``i`` is ``cotangents[i] @ J_f(x)``.

    ``f`` maps ``x`` (n,) to (m,); ``cotangents`` is (k, m). Run reverse mode
    once to get the pullback, then apply the pullback to every row at once
    with ``jax.vmap`` (the pullback returns a tuple: take its element 0). No
    Python loop over the rows (it would call ``f`` k times), and no (m, n)
    Jacobian.
    """
    # TODO: one reverse-mode call for the pullback, then vmap it over the rows of cotangents
    raise NotImplementedError


def hvp(f, x, v):
    """Return the Hessian-vector product ``H_f(x) @ v``, float32 (n,).

    ``f`` maps ``x`` (n,) to a scalar, so its gradient maps (n,) to (n,), and
    the Hessian is the Jacobian of the gradient. Its product with ``v`` is the
    directional derivative of the gradient along ``v``: compose two
    transformations (forward-over-reverse). Never form the (n, n) Hessian.
    Must work under ``jax.jit`` and under ``jax.vmap`` over ``v``.
    """
    # TODO: differentiate the gradient of f along v, without building the Hessian
    raise NotImplementedError
