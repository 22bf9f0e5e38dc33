"""autograder.checks.jaxprs: every array a traced program builds, nested programs and constants included."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import jaxprs
from autograder.core.failures import CheckFailure

N = 64


def matrix_inside(x):
    return jnp.sum(jnp.outer(x, x), axis=0)


def vector_only(x):
    return jnp.sin(x) * jnp.cumsum(x)


def with_jvp(g):
    g.defjvp(lambda primals, tangents: jax.jvp(g.fun, primals, tangents))
    return g


WRAPPERS = {
    "plain": lambda g: g,
    "jit": jax.jit,
    "nested-jit": lambda g: jax.jit(lambda x: jax.jit(g)(x) + 1),
    "closed_call": lambda g: lambda x: jax.closure_convert(g, x)[0](x),
    "custom_jvp": lambda g: with_jvp(jax.custom_jvp(g)),
    "scan": lambda g: lambda x: jax.lax.scan(lambda c, _: (g(c), None), x, length=2)[0],
    "cond": lambda g: lambda x: jax.lax.cond(x[0] > 0, g, lambda y: y, x),
    "while": lambda g: lambda x: jax.lax.fori_loop(0, jnp.int32(x.shape[0]) * (x[0] > 0), lambda i, y: g(y), x),
    "vmap": lambda g: lambda x: jax.vmap(g)(x[None])[0],
}


@pytest.mark.parametrize("wrapper", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_an_n_by_n_array_is_found_wherever_it_is_built(wrapper):
    with pytest.raises(
        CheckFailure, match=rf"too big: the traced program holds a float32\[(1,)?{N},{N}\] array \({N * N} elements\)"
    ):
        jaxprs.assert_no_intermediate_of_size(
            wrapper(matrix_inside), jnp.ones(N), limit=N * N, check="c", problem="too big", advice="a"
        )


@pytest.mark.parametrize("wrapper", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_program_of_vectors_passes(wrapper):
    jaxprs.assert_no_intermediate_of_size(
        wrapper(vector_only), jnp.ones(N), limit=N * N, check="c", problem="p", advice="a"
    )


def test_a_captured_constant_counts():
    big = np.ones((N, N), np.float32)
    found = jaxprs.intermediates(lambda x: big @ x, jnp.ones(N))
    assert any(i.shape == (N, N) and i.primitive == "a captured constant" for i in found)


def test_the_message_names_the_line_and_prefers_the_floating_array():
    with pytest.raises(CheckFailure) as err:
        jaxprs.assert_no_intermediate_of_size(
            lambda x: jax.jacfwd(vector_only)(x) @ x, jnp.ones(N), limit=N * N, check="c", problem="p", advice="a"
        )
    assert re.search(rf"a float32\[{N},{N}\] array .* at test_check_jaxprs.py line \d+", str(err.value)), str(err.value)


def test_static_arguments_stay_python_values():
    found = jaxprs.intermediates(lambda x, n: jnp.tile(x, n), jnp.ones(3), 4, static_argnums=(1,))
    assert max(i.size for i in found) == 12
