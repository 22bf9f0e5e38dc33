"""Module 9 — parameters as one pytree: linear regression, the tutorial's way.

A model rarely has one weight array. Passing ``W`` and ``b`` around as separate
arguments, and writing one update line per array, stops scaling at the second
layer. JAX's answer is the *pytree*: any nesting of lists, tuples and dicts
(and registered classes such as a Flax ``TrainState``) whose *leaves* are
arrays or numbers. Here all the parameters are one dict:

    params = {"W": (x_dim, y_dim) array, "b": (y_dim,) array}

Everything in JAX understands pytrees:

* ``jax.grad(loss)(params, x, y)`` differentiates with respect to every leaf
  and returns the gradient *with the same structure*: ``{"W": dW, "b": db}``.
* ``jax.tree.map(f, tree)`` applies ``f`` to every leaf and rebuilds the same
  structure; ``jax.tree.map(f, t1, t2)`` walks two trees of the same structure
  side by side and calls ``f(leaf1, leaf2)``. One line updates every
  parameter, however many there are.
* ``jax.tree.leaves(tree)`` is the flat list of leaves, for reductions over
  the whole tree (a norm, a count).

(Older tutorials write ``jax.tree_map``. That name was removed from JAX: use
``jax.tree.map``, or ``jax.tree_util.tree_map``.)

Shapes are static: under ``jax.jit`` a leaf is a tracer whose *values* are
unknown, but whose ``.shape`` is a plain tuple of Python ints. Anything
computed from shapes alone can stay a Python number.

``predict``, ``make_regression_data`` and ``tree_shapes`` are given. Run the
checks with

    pytest exercises/test_pytrees.py
"""

import jax
import jax.numpy as jnp
import numpy as np


def predict(params, x):
    """The linear model ``x @ W + b``, for one example (x_dim,) or a batch (B, x_dim)."""
    return jnp.dot(x, params["W"]) + params["b"]


def make_regression_data(key, n_samples=20, x_dim=10, y_dim=5, noise=0.1):
    """The tutorial's data: ``(x, y, true_params)`` with ``y = predict(true_params, x) + noise``.

    One split into four keys, each used for one draw.
    """
    k_w, k_b, k_x, k_noise = jax.random.split(key, 4)
    true_params = {"W": jax.random.normal(k_w, (x_dim, y_dim)), "b": jax.random.normal(k_b, (y_dim,))}
    x = jax.random.normal(k_x, (n_samples, x_dim))
    y = predict(true_params, x) + noise * jax.random.normal(k_noise, (n_samples, y_dim))
    return x, y, true_params


def tree_shapes(tree):
    """A worked example of ``jax.tree.map``: the same tree with every leaf replaced by its shape.

    ``tree_shapes({"W": W, "b": b})`` is ``{"W": (10, 5), "b": (5,)}``.
    """
    return jax.tree.map(lambda leaf: tuple(np.shape(leaf)), tree)


def mse(params, x_batched, y_batched):
    """The mean over the batch of ``0.5 * ||y_i - predict(params, x_i)||^2``: a float32 scalar.

    ``x_batched`` is (B, x_dim) and ``y_batched`` is (B, y_dim). The tutorial
    writes the loss of ONE example, ``squared_error(x, y)`` (with
    ``d = y - predict(params, x)``, that is ``jnp.inner(d, d) / 2``), and lets
    ``jax.vmap`` run it over the batch; the mean of those B numbers is the
    result. The result is a 0-d array: not shape (1,), not the (B,)
    per-example errors. Must work under ``jax.jit``.
    """
    # TODO: a per-example squared_error, jax.vmap over the batch, then the mean
    raise NotImplementedError


@jax.jit
def sgd_update(params, learning_rate, x, y):
    """One gradient-descent step on ``mse``; return the new params.

    ``jax.grad(mse)(params, x, y)`` is a pytree shaped like ``params``;
    subtract ``learning_rate`` times it from every leaf with one
    ``jax.tree.map`` over the two trees. The result has ``params``' structure,
    shapes and dtypes, and ``params`` itself is left as it was: build a new
    tree, never write into the dict you were given.

    It is compiled with ``jax.jit``. ``learning_rate`` is an ordinary (traced)
    argument, so a training loop may change it on every call (a schedule)
    without compiling again.
    """
    # TODO: jax.grad of mse, then jax.tree.map(lambda p, g: ..., params, grads)
    raise NotImplementedError


def fit(params, x, y, learning_rate, n_steps):
    """Run ``n_steps`` successive ``sgd_update`` steps from ``params``; return the final params.

    Each step starts from the params the previous one returned. ``n_steps``
    may be 0: then the result equals ``params``. With the tutorial's data
    (``make_regression_data(jax.random.key(0))``), params starting at zeros,
    a learning rate of 0.3 and 101 steps bring ``mse`` below 0.015.
    """
    # TODO: a loop of sgd_update (a Python for loop, or jax.lax.fori_loop)
    raise NotImplementedError


def global_norm(tree):
    """The L2 norm of all the leaves together: ``sqrt(sum over leaves of sum(leaf ** 2))``.

    ``tree`` is any pytree of float arrays with at least one leaf: a params
    dict, a list of layer dicts, nested tuples... Gradient clipping uses
    this number. Return a float32 scalar (0-d); must work under ``jax.jit``.
    """
    # TODO: reduce over jax.tree.leaves(tree)
    raise NotImplementedError


def param_count(tree):
    """The total number of entries in all the leaves of ``tree``, as a Python ``int``.

    A (10, 5) leaf has 50 entries, a (5,) leaf 5, and a Python number is one
    entry. Compute it from the shapes, which are static: then it is a plain
    ``int`` even inside ``jax.jit``, where the leaves are tracers, and it can
    be used as a shape there (``jnp.zeros(param_count(tree))``). Not a
    ``jax.Array``, not a NumPy integer.
    """
    # TODO: add up the sizes of the leaves' shapes with Python integers
    raise NotImplementedError
