"""autograder.checks.structure: jit compatibility with reasons, call spies that see vmap, and jaxpr sizes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import structure
from autograder.core.failures import CheckFailure


def reference(x):
    return jnp.where(x < 0, 0.0, x)


@pytest.mark.parametrize(
    "fn, pattern",
    [
        (lambda x: x.at[x < 0].set(0.0), r"boolean indexing"),
        (lambda x: x if x.sum() > 0 else -x, r"Python control flow"),
        (lambda x: jnp.asarray(np.maximum(np.asarray(x), 0)), r"converts a traced array to NumPy"),
        (lambda x: jnp.zeros(int(x[0])), r"needs a concrete value|converts a traced array to a Python int"),
    ],
)
def test_untraceable_code_is_explained(fn, pattern):
    with pytest.raises(CheckFailure, match=rf"cannot be compiled with jax.jit: .*{pattern}"):
        structure.assert_works_under_jit(fn, reference, jnp.array([-1.0, 2.0]))


def test_jittable_code_is_compared_with_the_reference():
    structure.assert_works_under_jit(lambda x: jnp.maximum(x, 0.0), reference, jnp.array([-1.0, 2.0]))
    with pytest.raises(CheckFailure, match=r"jax.jit\(<lambda>\) equals the reference"):
        structure.assert_works_under_jit(lambda x: jnp.abs(x), reference, jnp.array([-1.0, 2.0]))


def linear(x, W, b):
    return x @ W + b


LINEAR_AT_IMPORT = jax.vmap(linear, in_axes=(0, None, None))


def test_record_calls_sees_one_batched_call_through_vmap_even_via_an_early_reference():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = structure.record_calls(linear, lambda: LINEAR_AT_IMPORT(xs, W, b))
    assert len(calls) == 1 and calls[0].batched
    assert calls[0].arg_shapes[0] == (3,)


def test_record_calls_sees_a_python_loop_as_one_unbatched_call_per_example():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = structure.record_calls(linear, lambda: jnp.stack([linear(x, W, b) for x in xs]))
    assert len(calls) == 4 and not any(c.batched for c in calls)


def test_record_calls_sees_lax_map_as_one_traced_unbatched_call():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = structure.record_calls(linear, lambda: jax.lax.map(lambda x: linear(x, W, b), xs))
    assert len(calls) == 1 and calls[0].traced and not calls[0].batched


def test_jaxpr_size_constant_for_vmap_and_growing_for_a_loop():
    W, b = jnp.ones((3, 2)), jnp.zeros(2)
    by_size = {n: (jnp.ones((n, 3)), W, b) for n in (2, 5)}
    structure.assert_jaxpr_size_constant(LINEAR_AT_IMPORT, by_size)

    def looped(xs, W, b):
        return jnp.stack([linear(x, W, b) for x in xs])

    with pytest.raises(CheckFailure, match=r"grows with the size of the batch \(2: \d+ equations, 5: \d+ equations\)"):
        structure.assert_jaxpr_size_constant(looped, by_size)


def test_jit_once_reuses_one_wrapper_per_function():
    def f(x):
        return x + 1

    assert structure.jit_once(f) is structure.jit_once(f)
    assert structure.jit_once(f) is not structure.jit_once(f, static_argnums=(0,))
