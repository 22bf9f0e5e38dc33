"""Checks for module 5, ``training``: run ``pytest exercises/test_training.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. Every input (states, batches, loaders) is built with the
reference, and while one function is judged, the functions it builds on
(``calculate_loss_acc`` inside ``train_step``, ``train_step`` inside
``train_model``) are the reference's: a bug in one function fails only that
function's checks.
"""

import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks import loops
from autograder.checks import purity
from autograder.checks import structure
from autograder.checks import tracing
from autograder.checks import values
from autograder.core.failures import CheckFailure
from autograder.core.oracle import reference_helpers, sibling, transformed
from autograder.checks.keys import make_key
from autograder.checks.scenario import (
    BATCH, EPOCHS, TRAIN_SIZE, Step, eval_cases, evaluated_states, evaluation_batches, full_batch_steps, sample_input,
    training_steps, unseen_step,
)

correctness = pytest.mark.correctness

# The scenario: a SimpleClassifier(5, 1) trained with SGD(0.3) on 100 XOR
# points in batches of 32 (the last batch of every epoch has 4), 3 epochs.
# Neither 8 hidden units nor a rate of 0.1: a step that ignores the state's
# model or optimizer cannot pass by luck.
HIDDEN, LEARNING_RATE = 5, 0.3
# A second model size for the value checks: the tutorial's demo is SimpleClassifier(8, 1), and no one
# model kept at module level can match both 5 and 7 hidden units, so only state.apply_fn passes.
OTHER_HIDDEN = 7
STATE_FIELDS = ("step", "params", "opt_state")


@pytest.fixture(scope="module")
def data(reference):
    """The reference ``data`` module: XORDataset and make_loader."""
    return sibling(reference, "data")


def initial_state(reference, seed=0, hidden=HIDDEN, learning_rate=LEARNING_RATE):
    model = reference.SimpleClassifier(hidden, 1)
    return reference.create_train_state(jax.random.PRNGKey(seed), model, learning_rate, np.zeros((4, 2), np.float32))


@pytest.fixture(scope="module")
def start(reference):
    """The scenario's first state. Every check starts from this one object: a TrainState's apply_fn and tx
    are static for jax.jit, and a new optimizer object (a new TrainState.create) would compile again."""
    return initial_state(reference)


@pytest.fixture(scope="module")
def scenario(reference, data, start):
    """Every step of the reference over several epochs of a real DataLoader."""
    return training_steps(reference.train_step, data, start, model=f"SimpleClassifier({HIDDEN}, 1)")


@pytest.fixture(scope="module")
def other_model_steps(reference, scenario):
    """Two reference steps of a SimpleClassifier(OTHER_HIDDEN, 1): a step must run the state's model."""
    state, steps = initial_state(reference, seed=2, hidden=OTHER_HIDDEN), []
    for i, step in enumerate(scenario[:2]):
        expected = reference.train_step(state, step.batch)
        model = f"SimpleClassifier({OTHER_HIDDEN}, 1)"
        steps.append(Step(f"with a {model} state, at step {i + 1}", state, step.batch, expected, model))
        state = expected[0]
    return steps


@pytest.fixture(scope="module")
def test_batches(data):
    return evaluation_batches(data)


ZERO_GRADIENTS = (
    "the gradients were all zero. Differentiate with respect to the params argument and make the loss "
    "read that argument: jax.value_and_grad(calculate_loss_acc, argnums=1, has_aux=True)(state, state.params, batch). "
    "A loss that reads state.params instead does not depend on the argument being differentiated."
)


# create_train_state ---------------------------------------------------------

SGD_ADVICE = "the optimizer must be optax.sgd(learning_rate): plain SGD (no momentum, no Adam) with the learning rate you were given"

# A few cases: both kinds of key, two model sizes, three learning rates.
CREATE_CASES = [
    {"key": ("typed", 0), "hidden": 4, "n": 1, "learning_rate": 0.7},
    {"key": ("legacy", 1), "hidden": 8, "n": 5, "learning_rate": 0.01},
    {"key": ("typed", 2), "hidden": 8, "n": 5, "learning_rate": 0.1},
]


def _create(module, reference, case):
    model = reference.SimpleClassifier(case["hidden"], 1)
    sample = sample_input(case["n"])
    state = module.create_train_state(make_key(case["key"][1], case["key"][0]), model, case["learning_rate"], sample)
    return state, model, sample


def _assert_is_train_state(state, check):
    if not isinstance(state, train_state.TrainState):
        raise CheckFailure(
            check,
            f"create_train_state returned a {type(state).__qualname__}, not a flax.training.train_state.TrainState",
            "build it with train_state.TrainState.create(apply_fn=..., params=..., tx=...)",
        )


@correctness
def test_create_train_state_params_match_reference(student, reference):
    check = "create_train_state(rng, model, learning_rate, sample_input).params equals model.init(rng, sample_input)"
    for case in CREATE_CASES:
        got, _, _ = _create(student, reference, case)
        expected, _, _ = _create(reference, reference, case)
        with values.located(f"with a {case['key'][0]} key and SimpleClassifier({case['hidden']}, 1)"):
            values.assert_fields_close(got, expected, ("params",), name="state", check=check)


def test_create_train_state_returns_a_train_state_of_the_model(student, reference):
    check = "create_train_state returns a TrainState at step 0 whose apply_fn is model.apply"
    for case in CREATE_CASES[:2]:
        got, model, sample = _create(student, reference, case)
        _assert_is_train_state(got, check)
        values.assert_fields_close(got, SimpleNamespace(step=0), ("step",), name="state", check=check)
        params = model.init(jax.random.PRNGKey(1), sample)
        with values.located("state.apply_fn(params, x)"):
            values.assert_trees_close(
                got.apply_fn(params, sample), model.apply(params, sample), name="output", check=check
            )


def test_create_train_state_optimizer_is_sgd_with_the_learning_rate(student, reference):
    """The optimizer is judged by what it does: three steps with the same gradients as optax.sgd(learning_rate)."""
    for case in CREATE_CASES:
        got, _, _ = _create(student, reference, case)
        check = f"create_train_state's optimizer makes the steps of optax.sgd({case['learning_rate']})"
        _assert_is_train_state(got, check)
        values.assert_steps_like_optimizer(
            got, optax.sgd(case["learning_rate"]), seed=case["key"][1], check=check, advice=SGD_ADVICE
        )


def test_create_train_state_is_pure(student, reference):
    case = CREATE_CASES[1]
    model = reference.SimpleClassifier(case["hidden"], 1)
    sample = np.ones((case["n"], 2), np.float32)

    @functools.wraps(student.create_train_state)
    def params_of_create_train_state(*args):
        return student.create_train_state(*args).params

    args = (make_key(7, "legacy"), model, case["learning_rate"], sample)
    purity.assert_arguments_unchanged(params_of_create_train_state, *args)
    purity.assert_deterministic(params_of_create_train_state, *args)
    purity.assert_no_hidden_rng(params_of_create_train_state, *args)
    purity.assert_module_state_unchanged(student, student.create_train_state, *args)


# calculate_loss_acc ---------------------------------------------------------

def loss_inputs(sizes=(4, BATCH), containers=(list, tuple)):
    return st.fixed_dictionaries(
        {
            "data_seed": st.integers(0, 2**16),
            "params_seed": st.integers(0, 2**16),
            "scale": st.sampled_from([1.0, 4.0, 30.0]),  # 30: logits far from 0, where BCE on probabilities breaks
            "n": st.sampled_from(sizes),
            "container": st.sampled_from(containers),
            "arrays": st.sampled_from(["numpy", "jax"]),
            "hidden": st.sampled_from([HIDDEN, OTHER_HIDDEN]),
        }
    )


@pytest.fixture(scope="module")
def loss_states(reference):
    """One state per model size (neither the tutorial's 8): static fields (apply_fn, tx) stay the same, so jit
    compiles once per model and shape."""
    return {hidden: initial_state(reference, seed=1, hidden=hidden) for hidden in (HIDDEN, OTHER_HIDDEN)}


@pytest.fixture(scope="module")
def loss_and_grad(student):
    """One jitted value_and_grad of the student's calculate_loss_acc (differentiated w.r.t. params, as train_step does)."""
    return jax.jit(jax.value_and_grad(student.calculate_loss_acc, argnums=1, has_aux=True))


@pytest.fixture(scope="module")
def reference_loss_and_grad(reference):
    return transformed(
        reference,
        "calculate_loss_acc",
        "value_and_grad",
        lambda fn: jax.jit(jax.value_and_grad(fn, argnums=1, has_aux=True)),
    )


def loss_case(data, loss_states, inputs):
    """A state, params that are *not* the state's, and a batch from a real loader."""
    loss_state = loss_states[inputs["hidden"]]
    loader = data.make_loader(data.XORDataset(inputs["n"], inputs["data_seed"]), inputs["n"], shuffle=False)
    x, labels = next(iter(loader))
    if inputs["arrays"] == "jax":
        x, labels = jnp.asarray(x), jnp.asarray(labels)
    rng = np.random.RandomState(inputs["params_seed"])

    def draw(p):  # like a fresh initialisation (logits spread around 0), times the scale
        std = 1 / np.sqrt(p.shape[0]) if p.ndim == 2 else 0.1
        return (rng.normal(size=p.shape) * std * inputs["scale"]).astype(np.float32)

    params = jax.tree_util.tree_map(draw, loss_state.params)
    return loss_state, params, inputs["container"]((x, labels))


@correctness
@settings(max_examples=15)
@given(inputs=loss_inputs())
def test_calculate_loss_acc_matches_reference(student, reference, data, loss_states, inputs):
    state, params, batch = loss_case(data, loss_states, inputs)
    check = "calculate_loss_acc(state, params, batch) returns (mean sigmoid BCE of the logits, accuracy)"
    expected = reference.calculate_loss_acc(state, params, batch)
    with structure.runs_the_states_model("calculate_loss_acc", f"SimpleClassifier({inputs['hidden']}, 1)"):
        result = student.calculate_loss_acc(state, params, purity.fresh_copy(batch))
    got = values.assert_returns_tuple(result, ("loss", "acc"), function="calculate_loss_acc", check=check)
    values.assert_trees_close(got, expected, name="(loss, acc)", check=check)


@settings(max_examples=10)
@given(inputs=loss_inputs())
def test_calculate_loss_acc_uses_the_params_argument(student, data, loss_states, inputs):
    """Other params, other loss: the student's own results for ``params`` and for ``state.params`` differ
    (the values themselves are the correctness check's)."""
    state, params, batch = loss_case(data, loss_states, inputs)
    check = "calculate_loss_acc runs the model with its params argument, not with state.params"
    with structure.runs_the_states_model("calculate_loss_acc", f"SimpleClassifier({inputs['hidden']}, 1)"):
        got = student.calculate_loss_acc(state, params, purity.fresh_copy(batch))
        with_state_params = student.calculate_loss_acc(state, state.params, purity.fresh_copy(batch))
    try:
        same = np.allclose(np.asarray(got[0]), np.asarray(with_state_params[0]))
    except Exception:  # noqa: BLE001 - not a (loss, accuracy) pair: the values check says so
        return
    if same:
        raise CheckFailure(
            check,
            "calculate_loss_acc gives the same loss for the params argument as for state.params: it does not use "
            "its params argument",
            "jax.grad differentiates with respect to the params argument: the logits must be "
            "state.apply_fn(params, x), or every gradient is zero",
        )


@given(inputs=loss_inputs(sizes=[BATCH], containers=[tuple]))  # one shape: one compilation
def test_calculate_loss_acc_gradients_match_reference(data, loss_states, loss_and_grad, reference_loss_and_grad, inputs):
    """jax.jit(jax.value_and_grad(..., argnums=1, has_aux=True)) works and gives the reference's gradients."""
    state, params, batch = loss_case(data, loss_states, inputs)
    with structure.runs_the_states_model("calculate_loss_acc", f"SimpleClassifier({inputs['hidden']}, 1)"):
        (_, _), grads = loss_and_grad(state, params, batch)
    (_, _), expected = reference_loss_and_grad(state, params, batch)
    values.assert_trees_close(
        grads,
        expected,
        rtol=1e-4,
        atol=1e-5,
        name="grads",
        check="the gradient of calculate_loss_acc with respect to params equals the reference's",
    )


@settings(max_examples=3)
@given(inputs=loss_inputs())
def test_calculate_loss_acc_is_pure(student, data, loss_states, inputs):
    state, params, batch = loss_case(data, loss_states, inputs)
    purity.assert_pure(student.calculate_loss_acc, state, params, batch, module=student)
    purity.assert_no_leaked_tracers(student.calculate_loss_acc, state, params, batch, module=student)


# train_step -----------------------------------------------------------------

def run_train_step(student, step):
    """The student's train_step on a fresh copy of the step's state (it may donate it)."""
    check = "train_step(state, batch) returns (new_state, loss, acc)"
    result = student.train_step(purity.fresh_copy(step.state), purity.fresh_copy(step.batch))
    return values.assert_returns_tuple(result, ("new_state", "loss", "acc"), function="train_step", check=check)


@correctness
def test_train_step_matches_reference_at_every_step(student, reference, scenario, other_model_steps):
    check = (
        f"train_step equals the reference at every step of {EPOCHS} epochs of a DataLoader "
        f"({len(scenario)} steps, batches of {BATCH} and a last batch of {TRAIN_SIZE % BATCH}), "
        f"and on states of a SimpleClassifier({OTHER_HIDDEN}, 1)"
    )
    with reference_helpers(student, reference, "calculate_loss_acc"):
        for step in scenario + other_model_steps:
            with structure.runs_the_states_model("train_step", step.model):
                new_state, loss, acc = run_train_step(student, step)
            expected_state, expected_loss, expected_acc = step.expected
            with values.located(step.label):
                values.assert_leaves_moved(
                    step.state.params, new_state.params if hasattr(new_state, "params") else None,
                    expected_state.params, name="new_state.params", check=check, advice=ZERO_GRADIENTS,
                )
                values.assert_fields_close(new_state, expected_state, STATE_FIELDS, check=check)
                values.assert_trees_close(loss, expected_loss, name="loss", check=check)
                values.assert_trees_close(acc, expected_acc, name="acc", check=check)


def test_train_step_takes_gradients_with_respect_to_params(student, reference, scenario):
    check = "train_step moves every parameter the reference's step moves"
    with reference_helpers(student, reference, "calculate_loss_acc"):
        for step in scenario[:2]:
            new_state, _, _ = run_train_step(student, step)
            with values.located(step.label):
                values.assert_leaves_moved(
                    step.state.params, getattr(new_state, "params", None), step.expected[0].params,
                    name="new_state.params", check=check, advice=ZERO_GRADIENTS,
                )


def test_train_step_leaves_its_input_state_unchanged(student, reference, scenario):
    with reference_helpers(student, reference, "calculate_loss_acc"):
        for step in scenario[:2]:
            purity.assert_pytree_arguments_unchanged(
                student.train_step, purity.fresh_copy(step.state), purity.fresh_copy(step.batch), allow_donation=True
            )


def test_train_step_is_jitted(student):
    tracing.assert_is_jitted(student.train_step, "train_step")


def test_train_step_does_not_retrace(student, reference, scenario):
    """A training loop: each step is given the state the previous one returned, from a step number no
    other check used (a step number passed as a static argument retraces for every new value)."""
    steps = full_batch_steps(scenario)
    with reference_helpers(student, reference, "calculate_loss_acc"):
        loops.assert_chained_steps_do_not_retrace(
            student.train_step, unseen_step(steps[0].state, 0), [s.batch for s in steps], name="train_step"
        )


def test_train_step_is_pure(student, reference, scenario):
    step = full_batch_steps(scenario)[0]
    with reference_helpers(student, reference, "calculate_loss_acc"):
        purity.assert_module_state_unchanged(
            student, purity.cold(student.train_step), purity.fresh_copy(step.state), purity.fresh_copy(step.batch)
        )
        purity.assert_no_leaked_tracers(
            purity.cold(student.train_step), purity.fresh_copy(step.state), purity.fresh_copy(step.batch), module=student
        )


# eval_step ------------------------------------------------------------------

@correctness
def test_eval_step_matches_reference(student, reference, scenario, other_model_steps, test_batches):
    check = "eval_step(state, batch) is the accuracy of state.params on the batch"
    cases = [(label, state, batch, f"SimpleClassifier({HIDDEN}, 1)") for label, state, batch in eval_cases(evaluated_states(scenario), test_batches)]
    cases += [(f"{s.label}, test batch of {len(b[0])}", s.state, b, s.model) for s in other_model_steps[1:] for b in test_batches]
    with reference_helpers(student, reference, "calculate_loss_acc"):
        for label, state, batch, model in cases:
            with structure.runs_the_states_model("eval_step", model):
                got = student.eval_step(purity.fresh_copy(state), purity.fresh_copy(batch))
            with values.located(label):
                values.assert_trees_close(got, reference.eval_step(state, batch), name="accuracy", check=check)


def test_eval_step_changes_nothing(student, reference, scenario, test_batches):
    with reference_helpers(student, reference, "calculate_loss_acc"):
        for _, state, batch in eval_cases(evaluated_states(scenario), test_batches)[-2:]:
            purity.assert_pytree_arguments_unchanged(
                student.eval_step, purity.fresh_copy(state), purity.fresh_copy(batch), allow_donation=False
            )


def test_eval_step_is_jitted(student):
    tracing.assert_is_jitted(student.eval_step, "eval_step")


def test_eval_step_does_not_retrace(student, reference, scenario, test_batches):
    """Evaluation inside a training loop: the state of each call is the reference's next training step."""
    steps = full_batch_steps(scenario)
    with reference_helpers(student, reference, "calculate_loss_acc"):
        loops.assert_chained_steps_do_not_retrace(
            student.eval_step,
            unseen_step(steps[0].state, 1),
            [test_batches[0]],
            next_state=lambda state, _: reference.train_step(state, steps[0].batch)[0],
            name="eval_step",
        )


def test_eval_step_is_pure(student, reference, scenario, test_batches):
    state = scenario[-1].state
    with reference_helpers(student, reference, "calculate_loss_acc"):
        purity.assert_module_state_unchanged(
            student, purity.cold(student.eval_step), purity.fresh_copy(state), purity.fresh_copy(test_batches[0])
        )
        purity.assert_no_leaked_tracers(
            purity.cold(student.eval_step), purity.fresh_copy(state), purity.fresh_copy(test_batches[0]), module=student
        )


# train_model ----------------------------------------------------------------

@correctness
def test_train_model_matches_reference(student, reference, data, start):
    """Every batch of every epoch, in the loader's order: a shuffling loader gives a new order per epoch."""
    def loader():
        return data.make_loader(data.XORDataset(TRAIN_SIZE, 5), BATCH, shuffle=True, seed=9)

    check = f"train_model(state, loader, {EPOCHS}) makes one train_step per batch of every epoch, in order"
    expected = reference.train_model(purity.fresh_copy(start), loader(), EPOCHS)
    with reference_helpers(student, reference, "train_step", "calculate_loss_acc"):
        got = student.train_model(purity.fresh_copy(start), loader(), EPOCHS)
    values.assert_fields_close(
        got, expected, STATE_FIELDS, name="final state", check=check,
        advice={"step": f"the loader has {len(loader())} batches per epoch; train on each one of every epoch"},
    )


# The contract's target, on fewer epochs: the reference reaches 100% after 5 epochs already (and after 100),
# and 10 epochs cost a tenth of the time.
TARGET_EPOCHS, TARGET_ACCURACY = 10, 0.95


def test_train_model_reaches_the_accuracy_of_the_contract(student, reference, data):
    """The course contract: XORDataset(2500, 42), batches of 128, SimpleClassifier(8, 1), lr 0.1; 95% after 100
    epochs, asked here after 10."""
    rng, inp_rng, init_rng = jax.random.split(jax.random.PRNGKey(42), 3)
    model = reference.SimpleClassifier(8, 1)
    state = reference.create_train_state(init_rng, model, 0.1, jax.random.normal(inp_rng, (8, 2)))
    loader = data.make_loader(data.XORDataset(2500, 42), 128, shuffle=True, seed=0)
    with reference_helpers(student, reference, "train_step", "calculate_loss_acc"):
        trained = student.train_model(state, loader, TARGET_EPOCHS)
    if not hasattr(trained, "params"):
        raise CheckFailure("train_model returns the trained state", f"train_model returned {values.describe(trained)}")
    test = data.XORDataset(500, 123)
    accuracy = float(reference.eval_step(trained, (test.data, test.label)))
    if accuracy < TARGET_ACCURACY:
        raise CheckFailure(
            f"{TARGET_EPOCHS} epochs of train_model train a SimpleClassifier(8, 1) to >= {TARGET_ACCURACY:.0%} "
            "accuracy on XORDataset(500, 123)",
            f"after {TARGET_EPOCHS} epochs the accuracy on the test set is {accuracy:.1%}, below {TARGET_ACCURACY:.0%}",
            "train on every batch of every epoch and return the last state",
        )


def test_train_model_is_pure(student, reference, data, start):
    def loader():
        return data.make_loader(data.XORDataset(TRAIN_SIZE, 5), BATCH, shuffle=True, seed=9)

    with reference_helpers(student, reference, "train_step", "calculate_loss_acc"):
        purity.assert_pytree_arguments_unchanged(student.train_model, purity.fresh_copy(start), loader(), 1)
        purity.assert_module_state_unchanged(student, student.train_model, purity.fresh_copy(start), loader(), 1)
