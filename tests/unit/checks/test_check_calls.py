"""autograder.checks.calls: a counted stand-in for a function counts every call, traces included."""

import jax
import jax.numpy as jnp
import pytest

from autograder.checks import calls
from autograder.core.failures import CheckFailure


def f(x):
    return jnp.sum(jnp.sin(x))


@pytest.mark.parametrize(
    "run, expected",
    [
        (lambda g: jax.value_and_grad(g)(jnp.ones(3)), 1),
        (lambda g: jax.make_jaxpr(jax.grad(g))(jnp.ones(3)), 1),
        (lambda g: (g(jnp.ones(3)), jax.grad(g)(jnp.ones(3))), 2),
        (lambda g: [g(jnp.ones(3) + i) for i in range(4)], 4),
        (lambda g: jax.vmap(g)(jnp.ones((5, 3))), 1),
        (lambda g: jax.jit(g)(jnp.ones(3)), 1),
        (lambda g: jax.jit(lambda x, h: h(x), static_argnums=1)(jnp.ones(3), g), 1),  # hashable: a static argument
    ],
    ids=["value_and_grad", "make_jaxpr-of-grad", "f-then-grad", "python-loop", "vmap", "jit", "static-argument"],
)
def test_calls_are_counted(run, expected):
    _, n = calls.count_calls(f, run)
    assert n == expected


def test_the_stand_in_looks_like_the_function():
    counted = calls.CountedFunction(f)
    assert counted.__name__ == "f" and counted.__wrapped__ is f
    assert counted(jnp.zeros(2)) == 0 and counted.calls == 1


def test_calling_twice_fails_with_the_count_and_the_advice():
    with pytest.raises(CheckFailure, match=r"g called f 2 times for one call(.*\n)*.*use one pass"):
        calls.assert_called_once(f, lambda h: (h(jnp.ones(2)), h(jnp.ones(2))), caller="g", advice="use one pass")


def test_calling_once_passes_and_returns_the_result():
    assert calls.assert_called_once(f, lambda h: h(jnp.zeros(2)), caller="g", advice="") == 0
