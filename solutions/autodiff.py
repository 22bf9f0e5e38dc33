"""Reference solution: grad, value_and_grad, jvp, vjp and Hessian-vector products."""

import jax
import jax.numpy as jnp


def value_and_gradient(f, x):
    return jax.value_and_grad(f)(x)


def directional_derivative(f, x, v):
    _, tangent = jax.jvp(f, (x,), (v,))
    return tangent


def vjp_rows(f, x, cotangents):
    _, pullback = jax.vjp(f, x)
    return jax.vmap(lambda c: pullback(c)[0])(cotangents)


def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]
