"""Reference solution: parameters as one pytree, the tutorial's linear regression."""

import jax
import jax.numpy as jnp
import numpy as np


def predict(params, x):
    return jnp.dot(x, params["W"]) + params["b"]


def make_regression_data(key, n_samples=20, x_dim=10, y_dim=5, noise=0.1):
    k_w, k_b, k_x, k_noise = jax.random.split(key, 4)
    true_params = {"W": jax.random.normal(k_w, (x_dim, y_dim)), "b": jax.random.normal(k_b, (y_dim,))}
    x = jax.random.normal(k_x, (n_samples, x_dim))
    y = predict(true_params, x) + noise * jax.random.normal(k_noise, (n_samples, y_dim))
    return x, y, true_params


def tree_shapes(tree):
    return jax.tree.map(lambda leaf: tuple(np.shape(leaf)), tree)


def mse(params, x_batched, y_batched):
    def squared_error(x, y):
        d = y - predict(params, x)
        return jnp.inner(d, d) / 2.0

    return jnp.mean(jax.vmap(squared_error)(x_batched, y_batched), axis=0)


@jax.jit
def sgd_update(params, learning_rate, x, y):
    grads = jax.grad(mse)(params, x, y)
    return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)


def fit(params, x, y, learning_rate, n_steps):
    for _ in range(n_steps):
        params = sgd_update(params, learning_rate, x, y)
    return params


def global_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree)))


def param_count(tree):
    return sum(np.size(leaf) for leaf in jax.tree.leaves(tree))
