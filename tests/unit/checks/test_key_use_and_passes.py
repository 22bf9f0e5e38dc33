"""checks.keyuse and checks.marked: key use and forward passes read from the program a function compiles to.

- keyuse: the program must give the reference's keys and draws, and pass no key value to two draws or splits (nor
  return one it drew with); JAX's checker only words a failure (the student's line).
- marked: the marked ``f`` puts one cube root into the program per trace, whatever transformation traced it, and
  the program must give the reference's values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import keyuse, marked
from autograder.core.failures import CheckFailure


def two_normals(key):
    key, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def draws_twice(key):
    key, sub = jax.random.split(key)
    return key, jax.random.normal(sub), jax.random.normal(sub)


def returns_the_input_key(key):
    _, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def splits_twice(key):  # the reference's values, from a key split twice
    _, k1, _ = jax.random.split(key, 3)
    new, _, k2 = jax.random.split(key, 3)
    return new, jax.random.normal(k1), jax.random.normal(k2)


def text_of(fn, *args) -> str:
    return jax.export.export(jax.jit(fn))(*args).mlir_module()


@pytest.mark.parametrize("key", [jax.random.key(3), jax.random.PRNGKey(3)], ids=["typed", "legacy"])
def test_the_contracts_split_pattern_passes(key):
    keyuse.assert_program_uses_each_key_once(two_normals, two_normals, key)
    assert keyuse.keys_used_twice(text_of(two_normals, key)) == []


@pytest.mark.parametrize(
    "fn, said",
    [
        (draws_twice, r"used the key `sub` a second time"),
        (returns_the_input_key, r"the returned key\[0\] was already used"),
        (splits_twice, r"used the key `key` a second time"),
    ],
    ids=["draws-twice", "returns-the-input-key", "splits-twice-for-the-right-values"],
)
def test_a_key_used_twice_fails_with_jaxs_account_of_where(fn, said):
    with pytest.raises(CheckFailure, match=said) as failure:
        keyuse.assert_program_uses_each_key_once(fn, two_normals, jax.random.key(3))
    assert failure.value.check == f"{fn.__name__} uses every PRNG key at most once"


@pytest.mark.parametrize("fn", [draws_twice, returns_the_input_key, splits_twice])
def test_the_program_shows_the_key_used_twice(fn):
    assert keyuse.keys_used_twice(text_of(fn, jax.random.key(3)))


def test_another_split_pattern_without_reuse_fails_on_its_values():
    def chain(key):
        key, k1 = jax.random.split(key)
        key, k2 = jax.random.split(key)
        return key, jax.random.normal(k1), jax.random.normal(k2)

    assert keyuse.keys_used_twice(text_of(chain, jax.random.key(3))) == []
    with pytest.raises(CheckFailure, match="other keys or draws than the reference"):
        keyuse.assert_program_uses_each_key_once(chain, two_normals, jax.random.key(3))


def tanh_of_running_sum(x):
    return jnp.sum(jnp.tanh(jnp.cumsum(x)) ** 2)


def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


X = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
V = np.ones(5, np.float32)
HVP_FORMS = {
    "forward-over-reverse": hvp,
    "reverse-over-forward": lambda f, x, v: jax.grad(lambda y: jax.jvp(f, (y,), (v,))[1])(x),
    "reverse-over-reverse": lambda f, x, v: jax.grad(lambda y: jnp.vdot(jax.grad(f)(y), v))(x),
    "linearize-of-grad": lambda f, x, v: jax.linearize(jax.grad(f), x)[1](v),
    "hessian": lambda f, x, v: jax.hessian(f)(x) @ v,
}


@pytest.mark.parametrize("form", HVP_FORMS)
def test_every_order_of_differentiation_traces_f_once(form):
    marked.assert_program_calls_once(
        HVP_FORMS[form], hvp, tanh_of_running_sum, X, V, caller="hvp", advice="", rtol=1e-4, atol=5e-5
    )


@pytest.mark.parametrize(
    "form, times",
    [
        (lambda f, x, v: hvp(f, x, v) + 0 * f(x), 2),
        (lambda f, x, v: (jax.grad(f)(x + 1e-2 * v) - jax.grad(f)(x - 1e-2 * v)) / 2e-2, 2),
    ],
    ids=["and-f-again", "finite-differences-of-gradients"],
)
def test_more_forward_passes_fail_with_their_count(form, times):
    with pytest.raises(CheckFailure, match=f"hvp called f {times} times for one call"):
        marked.assert_program_calls_once(form, hvp, tanh_of_running_sum, X, V, caller="hvp", advice="")


def test_one_pass_with_other_values_fails_on_its_values():
    with pytest.raises(CheckFailure, match="fix the values first"):
        marked.assert_program_calls_once(
            lambda f, x, v: 2 * hvp(f, x, v), hvp, tanh_of_running_sum, X, V, caller="hvp", advice=""
        )


def test_the_marker_is_named_after_f_and_counted_once_per_trace():
    f = marked.marked(tanh_of_running_sum)
    assert f.__name__ == "tanh_of_running_sum_marked"
    assert marked.markers_of_one_trace(f, X) == 1
    assert marked.markers(text_of(lambda x: (f(x), jax.grad(f)(x)), X)) == 2
