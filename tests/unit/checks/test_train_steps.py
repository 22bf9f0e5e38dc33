"""checks.train_steps: a step's own jax.jit program against the reference, and the same result from values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import train_steps
from autograder.checks.values import assert_trees_close
from autograder.core.failures import CheckFailure

STATE = {"w": np.arange(3, dtype=np.float32), "step": np.int32(0)}
BATCH = np.ones(3, np.float32)


def step(state, batch):
    return {"w": state["w"] - 0.1 * batch, "step": state["step"] + 1}, jnp.sum(state["w"] * batch)


EXPECTED = jax.tree.map(np.asarray, step(STATE, BATCH))


def test_the_own_jit_program_of_a_pytree_step_is_run_against_the_reference():
    program = train_steps.assert_jitted_gives_the_reference(
        jax.jit(step, donate_argnums=0), STATE, BATCH, expected=EXPECTED, name="step"
    )
    assert program.operations() > 0


def test_a_step_that_is_not_a_jit_function_fails():
    with pytest.raises(CheckFailure, match=r"step is not a jax.jit function \(it is a function\)"):
        train_steps.assert_jitted_gives_the_reference(step, STATE, BATCH, expected=EXPECTED, name="step")


def test_a_jitted_step_with_other_values_fails_and_says_the_values_are_the_mistake():
    wrong = jax.jit(lambda state, batch: step(state, 2 * batch))
    with pytest.raises(CheckFailure, match="fix the values first"):
        train_steps.assert_jitted_gives_the_reference(wrong, STATE, BATCH, expected=EXPECTED, name="step")


def test_the_same_result_twice_whatever_the_global_generators():
    train_steps.assert_same_result_by_values(jax.jit(step), STATE, BATCH, expected=EXPECTED)


def test_a_counter_kept_between_calls_fails():
    calls = [0]

    def counting(state, batch):
        calls[0] += 1
        new_state, loss = step(state, batch)
        return new_state, loss * calls[0]

    first = step(STATE, BATCH)  # the first call of the record is the reference's: only the second differs
    with pytest.raises(CheckFailure, match="returned something different the second time"):
        train_steps.assert_same_result_by_values(counting, STATE, BATCH, expected=jax.tree.map(np.asarray, first))


def test_noise_from_numpys_global_generator_fails():
    def noisy(state, batch):
        new_state, loss = step(state, batch)
        return new_state, loss + np.float32(np.random.uniform())

    first = noisy(STATE, BATCH)
    with pytest.raises(CheckFailure, match=r"changed when only NumPy's global RNG \(np.random\) was re-seeded"):
        train_steps.assert_same_result_by_values(noisy, STATE, BATCH, expected=first, atol=1.0)


def test_results_alike_but_not_the_references_fail():
    with pytest.raises(CheckFailure, match="does not give the reference's values"):
        train_steps.assert_same_result_by_values(
            lambda state, batch: step(state, 0 * batch), STATE, BATCH, expected=EXPECTED
        )


def test_a_state_is_compared_by_its_fields_not_its_new_optimizer_object():
    from types import SimpleNamespace

    from autograder.checks import purity

    def create(x):
        return SimpleNamespace(params={"w": x * 2}, tx=object())  # a new optimizer object on every call

    purity.assert_pure_by_values(create, np.ones(2, np.float32), first=("params of", train_steps.fields_of("params")))
    with pytest.raises(CheckFailure, match="re-seeded"):
        purity.assert_pure_by_values(
            lambda x: SimpleNamespace(params={"w": x * np.random.uniform()}),
            np.ones(2, np.float32),
            first=("params of", train_steps.fields_of("params")),
        )


def test_states_are_compared_by_their_data_not_by_their_class_object():
    """A module's own state class (batchnorm's ``TrainStateBN``) is another class object in the reference's module
    than in the one the trusted side rebuilds a recorded state with: two states with the same data, of two classes
    of the same name, are the same result (before, the reference of batchnorm failed its train_step_bn_is_pure in
    `grade`); another value of the data is not."""
    import optax
    from flax.training import train_state

    def state_class():
        class TrainStateBN(train_state.TrainState):
            batch_stats: dict

        return TrainStateBN

    def state(cls, w):
        return cls.create(apply_fn=None, params={"w": w}, tx=optax.sgd(0.1), batch_stats={"m": w})

    ones = np.ones(2, np.float32)
    one, other = state(state_class(), ones), state(state_class(), ones)
    with pytest.raises(CheckFailure, match="structure"):
        assert_trees_close(one, other)
    assert_trees_close(train_steps.data_of((one, 1.0)), train_steps.data_of((other, 1.0)))
    with pytest.raises(CheckFailure, match="m"):
        assert_trees_close(train_steps.data_of(one), train_steps.data_of(state(state_class(), 0 * ones)))
