"""autograder.checks.values: right answers pass, wrong or untrustworthy ones fail with a message naming the leaf."""

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state

from autograder.checks import states
from autograder.checks.values import assert_leaf_types, assert_matches_reference, assert_trees_close, describe
from autograder.core.failures import CheckFailure


def fails(pattern, got, expected, **kw):
    with pytest.raises(CheckFailure, match=pattern):
        assert_trees_close(got, expected, **kw)


def test_equal_trees_pass_whatever_array_library():
    expected = {"W": jnp.ones((2, 3)), "b": jnp.zeros(3), "n": jnp.int32(4)}
    assert_trees_close({"W": np.ones((2, 3), np.float32), "b": jnp.zeros(3), "n": np.int32(4)}, expected)


def test_values_within_tolerance_pass_and_outside_fail_with_index():
    expected = jnp.arange(6.0).reshape(2, 3)
    assert_trees_close(expected + 1e-7, expected)
    fails(
        r"result\['x'\] differs from the reference at 1 of 6 entries \(float32, shape \(2, 3\)\)(.|\n)*\[1, 2\]: expected 5\.0, got 6\.0",
        {"x": expected.at[1, 2].set(6.0)},
        {"x": expected},
    )


def test_scalar_difference_names_expected_and_got():
    fails(r"result differs from the reference: expected 1\.0, got 2\.0", jnp.float32(2.0), jnp.float32(1.0))


def test_a_comparison_with_something_else_than_the_reference_names_it():
    fails(
        r"result differs from the first result: expected 1\.0, got 2\.0",
        jnp.float32(2.0),
        jnp.float32(1.0),
        source="the first result",
    )
    fails(
        r"result does not have the structure of f without jit\n",
        (jnp.float32(1.0),),
        [jnp.float32(1.0)],
        source="f without jit",
    )


def test_shape_and_dtype_are_checked():
    fails(r"result has shape \(3,\), expected \(1, 3\)", jnp.zeros(3), jnp.zeros((1, 3)))
    fails(r"result has dtype float64, expected float32", np.zeros(3), jnp.zeros(3))
    fails(r"result has dtype int32, expected float32", jnp.zeros(3, jnp.int32), jnp.zeros(3))


def test_structure_mismatch_names_missing_and_extra_leaves():
    fails(
        r"does not have the structure(.|\n)*missing: result\['b'\](.|\n)*unexpected: result\['bias'\]",
        {"W": jnp.ones(2), "bias": jnp.ones(2)},
        {"W": jnp.ones(2), "b": jnp.ones(2)},
    )
    fails(r"does not have the structure", [jnp.ones(2)], (jnp.ones(2),))


def test_integers_and_booleans_are_exact():
    fails(r"differs from the reference", jnp.array([1, 2, 4]), jnp.array([1, 2, 3]), atol=10)
    fails(r"differs from the reference", jnp.array([True, False]), jnp.array([True, True]))


def test_frozen_dict_and_dict_compare_equal():
    params = {"params": {"Dense_0": {"kernel": jnp.ones((2, 2))}}}
    assert_trees_close(flax.core.freeze(params), params)
    assert_trees_close(params, flax.core.freeze(params))


def test_train_states_compare_leaf_by_leaf():
    def make(scale):
        return train_state.TrainState.create(apply_fn=None, params={"w": jnp.ones(3) * scale}, tx=optax.sgd(0.1))

    assert_trees_close(make(1.0), make(1.0))
    fails(r"result\.params\['w'\] differs", make(2.0), make(1.0))


def test_keys_compare_by_key_data_and_kind():
    assert_trees_close(jax.random.key(3), jax.random.key(3))
    fails(r"differs from the reference", jax.random.key(4), jax.random.key(3))
    fails(
        r"is a legacy uint32 key \(jax\.random\.PRNGKey\), but the reference returns a typed key",
        jax.random.PRNGKey(3),
        jax.random.key(3),
    )
    fails(
        r"is a typed key \(jax\.random\.key\), but the reference returns a legacy",
        jax.random.key(3),
        jax.random.PRNGKey(3),
    )


class AlwaysEqual:
    def __eq__(self, other):
        return True

    shape = (3,)
    dtype = np.dtype("float32")


class SneakyArray(np.ndarray):
    def __eq__(self, other):
        return np.ones(self.shape, bool)


def test_objects_that_claim_equality_cannot_pass():
    fails(r"result is a .*AlwaysEqual, not an array", AlwaysEqual(), jnp.zeros(3))
    sneaky = np.zeros(3, np.float32).view(SneakyArray)
    fails(r"result is a .*SneakyArray, not an array", sneaky, jnp.zeros(3))


def test_nan_where_the_reference_has_nan_is_fine_elsewhere_not():
    assert_trees_close(jnp.array([jnp.nan, 1.0]), jnp.array([jnp.nan, 1.0]))
    fails(r"differs", jnp.array([jnp.nan, 1.0]), jnp.array([0.0, 1.0]))


def test_a_leaked_tracer_is_named_as_such():
    leaked = []
    jax.jit(lambda x: leaked.append(x) or x)(jnp.ones(2))
    fails(r"result is a JAX tracer", leaked[0], jnp.ones(2))


def test_leaf_types_are_exact():
    assert_leaf_types([np.zeros(2)], (np.ndarray,), check="numpy leaves")
    with pytest.raises(CheckFailure, match=r"result\[0\] is a jaxlib.*ArrayImpl; it must be a numpy.ndarray"):
        assert_leaf_types([jnp.zeros(2)], (np.ndarray,), check="numpy leaves")


def test_matches_reference_calls_both_and_names_the_function():
    def double(x):
        return 2 * x

    def triple(x):
        return 3 * x

    assert_matches_reference(double, double, jnp.ones(2))
    with pytest.raises(CheckFailure, match=r"checked: triple\(\.\.\.\) equals the reference"):
        assert_matches_reference(triple, double, jnp.ones(2))


def test_describe_summarises_a_tree():
    assert describe({"W": jnp.ones((2, 3))}) == "{'W': 'float32[2, 3]'}"


@pytest.mark.parametrize(
    "tx, same",
    [
        (optax.sgd(0.1), True),
        (optax.chain(optax.scale(-0.1)), True),
        (optax.inject_hyperparams(optax.sgd)(learning_rate=0.1), True),
        (optax.sgd(0.01), False),
        (optax.sgd(0.1, momentum=0.9), False),  # shows from the second step on
        (optax.adam(0.1), False),
    ],
)
def test_an_optimizer_is_judged_by_its_steps_against_the_one_the_contract_names(tx, same):
    from autograder.checks.states import assert_steps_like_optimizer

    params = {"W": jnp.ones((2, 3)), "b": jnp.zeros(3)}
    state = train_state.TrainState.create(apply_fn=lambda p, x: x, params=params, tx=tx)
    if same:
        assert_steps_like_optimizer(state, optax.sgd(0.1), check="sgd", advice="use optax.sgd")
    else:
        with pytest.raises(CheckFailure, match=r"after \d optimizer step"):
            assert_steps_like_optimizer(state, optax.sgd(0.1), check="sgd", advice="use optax.sgd")


def test_assert_leaves_moved_without_an_expected_update_wants_every_leaf_changed():
    before = {"W": np.ones((2, 2), np.float32), "b": np.zeros(2, np.float32)}
    moved = {"W": before["W"] - 0.1, "b": before["b"] + 0.1}
    states.assert_leaves_moved(before, moved, name="p", check="c", advice="a")
    with pytest.raises(CheckFailure, match=r"p\['b'\] did not change at all, although a gradient step"):
        states.assert_leaves_moved(before, {"W": moved["W"], "b": before["b"].copy()}, name="p", check="c", advice="a")
    # with the reference's update, only the leaves it changes must change
    states.assert_leaves_moved(
        before,
        {"W": moved["W"], "b": before["b"]},
        {"W": moved["W"], "b": before["b"]},
        name="p",
        check="c",
        advice="a",
    )


def test_a_state_whose_optimizer_cannot_run_fails_with_the_checks_message():
    """On the trusted side an optimizer no recipe describes (SGD with momentum) is recorded as its class only."""
    from autograder.checks.states import assert_steps_like_optimizer
    from autograder.recording.plain_data import OpaqueStatic

    params = {"W": jnp.ones((2, 3))}
    state = train_state.TrainState.create(apply_fn=lambda p, x: x, params=params, tx=optax.sgd(0.1))
    state = state.replace(tx=OpaqueStatic("GradientTransformationExtraArgs"))
    with pytest.raises(CheckFailure, match=r"the state's tx is .*not an optimizer that makes the steps asked for"):
        assert_steps_like_optimizer(state, optax.sgd(0.1), check="sgd", advice="use optax.sgd")
