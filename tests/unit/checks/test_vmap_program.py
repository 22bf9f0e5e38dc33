"""``checks.vmap_program``: "one vmap of the helper" read from the program lowered with the helper's arguments marked."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import vmap_program
from autograder.core.failures import CheckFailure


def linear(x, W, b):
    return x @ W + b


jitted_linear = jax.jit(linear)
AT_IMPORT = jax.vmap(linear, in_axes=(0, None, None))


@jax.jit
def batched_at_import(xs, W, b):
    return AT_IMPORT(xs, W, b)


def one_vmap(xs, W, b):
    return jax.vmap(linear, in_axes=(0, None, None))(xs, W, b)


def vmap_of_the_jitted(xs, W, b):
    return jax.vmap(jitted_linear, in_axes=(0, None, None))(xs, W, b)


XS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
W = np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(3, 2)
B = np.array([0.25, -1.0], np.float32)


def _judge(fn, helper=linear):
    expected = one_vmap(*vmap_program.marked_inputs(XS, W, B))
    return vmap_program.assert_program_is_one_vmap(
        fn, helper, XS, W, B, expected=expected, caller=fn.__name__, names=("x", "W", "b")
    )


@pytest.mark.parametrize("fn", [one_vmap, batched_at_import])
def test_one_vmap_passes_even_through_a_warm_jit_made_at_import(fn):
    fn(XS, W, B)  # warm: without clearing the caches first the jitted function would run no Python, mark nothing
    program = _judge(fn)
    assert [s for s in vmap_program._marker_shapes(program.text, "stablehlo.cbrt")] == [(4, 3)]


def test_one_vmap_of_a_jitted_helper_passes():
    jitted_linear(XS[0], W, B)
    _judge(vmap_of_the_jitted, jitted_linear)


def test_a_jitted_function_traced_while_marked_keeps_no_marked_trace():
    """Its trace inside the marked lowering is not what it runs afterwards (JAX's caches cleared after)."""
    _judge(batched_at_import)
    np.testing.assert_allclose(batched_at_import(XS, W, B), XS @ W + B, rtol=1e-6)


@pytest.mark.parametrize(
    "fn, said",
    [
        (lambda xs, W, b: jnp.stack([linear(x, W, b) for x in xs]), r"one example at a time \(4 call\(s\)"),
        (lambda xs, W, b: jax.lax.map(lambda x: linear(x, W, b), xs), r"lax.map \(or lax.scan\)"),
        (lambda xs, W, b: xs @ W + b, "never calls linear"),
        (lambda xs, W, b: one_vmap(xs, W, b) + one_vmap(xs, W, b), "calls a vmapped linear 2 times"),
        (
            lambda xs, W, b: jax.vmap(linear)(xs, jnp.broadcast_to(W, (4, 3, 2)), b + jnp.zeros((4, 2))),
            "maps linear over W, b too",
        ),
        (lambda xs, W, b: 2 * one_vmap(xs, W, b), "does not give the reference's values"),
    ],
    ids=["python-loop", "lax-map", "hand-written", "two-vmaps", "maps-W-and-b", "other-values"],
)
def test_other_batched_functions_fail_with_what_they_do(fn, said):
    with pytest.raises(CheckFailure, match=said):
        _judge(fn)
