"""Checks for module 6, ``batchnorm``: run ``pytest exercises/test_batchnorm.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. States and batches are built with the reference. The
training scenario starts from running averages far from their initial values
(mean 0, variance 1) and from the data's statistics, so a step that forgets to
pass them in, or to keep the new ones, or that runs in the wrong mode, gives
different numbers.

The fixtures build what the checks are *given* (states, batches); the checks
ask the reference only for the answers they compare. The student's steps are
judged along the student's own path: each starts from the state the student's
previous step returned and is compared with the reference's step from that
same state. (``grade`` records the fixtures' givens on its trusted side and
judges this module there: its grading processes hold no reference.)
"""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from autograder.checks import loops, purity, retraces, states, structure, train_steps, values
from autograder.checks.keys import make_key
from autograder.checks.scenario import (
    BATCH,
    EPOCHS,
    TRAIN_SIZE,
    assert_is_train_state,
    created_state,
    epoch_batches,
    eval_cases,
    eval_cases_of_two_models,
    evaluation_batches,
    full_batches,
    given_state,
    run_step,
    sample_input,
    states_trained_elsewhere,
    two_steps,
    unseen_step,
)
from autograder.core.failures import CheckFailure
from autograder.core.oracle import continue_from, sibling

correctness = pytest.mark.correctness
decided_by_values = pytest.mark.decided("values")
# Decided on the trusted side from the program the student's own jax.jit function compiles to (issue 42).
decided_by_program = pytest.mark.decided("program")
# Decided from the program (one program serves every step) and the source (no jax.jit made per call, no new static
# parts in a returned state: autograder.core.retrace_sources); the count of traces is observed first.
one_program_per_loop = pytest.mark.decided("program", "retraces_in_a_loop")

HIDDEN, LEARNING_RATE = 6, 0.3
# A second model size for the value checks: no one model kept at module level matches both, so only
# state.apply_fn passes.
OTHER_HIDDEN = 7
STATE_FIELDS = ("step", "params", "opt_state", "batch_stats")

RUNNING_AVERAGES = (
    "new batch_stats = 0.9 * state.batch_stats + 0.1 * the batch's statistics: apply the model to "
    "{'params': params, 'batch_stats': state.batch_stats} with train=True and mutable=['batch_stats'], "
    "and store updates['batch_stats'] (not the whole dict apply returns) in the new state"
)
ZERO_GRADIENTS = (
    "the gradients were all zero: differentiate a loss function of its params argument, and run the model "
    "with that argument ({'params': params, ...}), not with state.params"
)
SGD_ADVICE = "the optimizer must be optax.sgd(learning_rate): plain SGD with the learning rate you were given"


@pytest.fixture(scope="module")
def data(reference):
    return sibling(reference, "data")


def far_state(reference, hidden=HIDDEN, seed=0):
    """A state of a BNClassifier(hidden, 1) whose running averages are far from (0, 1) and from the data's statistics."""
    model = reference.BNClassifier(hidden, 1)
    state = given_state(reference.create_train_state_bn, model, seed, LEARNING_RATE, np.zeros((4, 2), np.float32))
    stats = state.batch_stats["BatchNorm_0"]
    far = {
        "mean": jnp.linspace(2.0, -2.0, hidden, dtype=jnp.float32),
        "var": jnp.linspace(3.0, 6.0, hidden, dtype=jnp.float32),
    }
    assert jax.tree_util.tree_structure(far) == jax.tree_util.tree_structure(dict(stats))
    return state.replace(batch_stats={"BatchNorm_0": far})


@pytest.fixture(scope="module")
def classifier(reference):
    """The course's ``BNClassifier`` (given in the module, not the student's to change)."""
    return reference.BNClassifier


@pytest.fixture(scope="module")
def start(reference):
    """The scenario's first state. Every check starts from this object (its apply_fn and tx are static for
    jax.jit: a new TrainStateBN.create would compile again)."""
    return far_state(reference)


@pytest.fixture(scope="module")
def other_start(reference):
    """The first state of a BNClassifier(OTHER_HIDDEN, 1): a step must run the state's model."""
    return far_state(reference, OTHER_HIDDEN, seed=2)


@pytest.fixture(scope="module")
def steps(data):
    """(label, batch) of every step of the scenario's epochs: the student's steps run over them from ``start``."""
    return epoch_batches(data)


@pytest.fixture(scope="module")
def trained(reference, data):
    """A first, a middle and a last state of the reference's training elsewhere (another start and other data
    than the checks judge): the states evaluation and the checks of other properties are given."""
    return states_trained_elsewhere(reference.train_step_bn, data, far_state(reference, seed=3))


@pytest.fixture(scope="module")
def test_batches(data):
    return evaluation_batches(data)


def run_train_step_bn(student, state, batch):
    return run_step(
        student.train_step_bn,
        state,
        batch,
        returns=("new_state", "loss"),
        function="train_step_bn",
        check="train_step_bn(state, batch) returns (new_state, loss)",
    )


# create_train_state_bn ------------------------------------------------------

CREATE_CASES = [
    {"key": ("typed", 0), "hidden": 4, "n": 3, "learning_rate": 0.7},
    {"key": ("legacy", 1), "hidden": 8, "n": 5, "learning_rate": 0.05},
]


def _create(module, classifier, case):
    model = classifier(case["hidden"], 1)
    sample = sample_input(case["n"])
    return created_state(module.create_train_state_bn, model, case, sample), model, sample


def _assert_is_train_state_bn(state, check):
    assert_is_train_state(
        state,
        check,
        function="create_train_state_bn",
        field="batch_stats",
        advice="build it with TrainStateBN.create(apply_fn=..., params=..., batch_stats=..., tx=...)",
    )


@correctness
def test_create_train_state_bn_matches_reference(student, reference, classifier):
    check = "create_train_state_bn's params and batch_stats are those of model.init(rng, sample_input, train=False)"
    for case in CREATE_CASES:
        got, _, _ = _create(student, classifier, case)
        expected, _, _ = _create(reference, classifier, case)
        with values.located(f"with a {case['key'][0]} key and BNClassifier({case['hidden']}, 1)"):
            states.assert_fields_close(got, expected, ("params", "batch_stats"), name="state", check=check)


@decided_by_values
def test_create_train_state_bn_returns_a_train_state_of_the_model(student, classifier):
    check = "create_train_state_bn returns a TrainState with batch_stats, at step 0, whose apply_fn is model.apply"
    for case in CREATE_CASES:
        got, model, sample = _create(student, classifier, case)
        _assert_is_train_state_bn(got, check)
        states.assert_fields_close(got, SimpleNamespace(step=0), ("step",), name="state", check=check)
        variables = model.init(jax.random.PRNGKey(1), sample, train=False)
        with values.located("state.apply_fn(variables, x, train=False)"):
            values.assert_trees_close(
                got.apply_fn(variables, sample, train=False),
                model.apply(variables, sample, train=False),
                name="output",
                check=check,
            )


@decided_by_values
def test_create_train_state_bn_optimizer_is_sgd_with_the_learning_rate(student, classifier):
    """The optimizer is judged by what it does: three steps with the same gradients as optax.sgd(learning_rate)."""
    for case in CREATE_CASES:
        got, _, _ = _create(student, classifier, case)
        check = f"create_train_state_bn's optimizer makes the steps of optax.sgd({case['learning_rate']})"
        _assert_is_train_state_bn(got, check)
        states.assert_steps_like_optimizer(
            got, optax.sgd(case["learning_rate"]), seed=case["key"][1], check=check, advice=SGD_ADVICE
        )


def create_args(classifier):
    case = CREATE_CASES[1]
    return (
        make_key(7, "legacy"),
        classifier(case["hidden"], 1),
        case["learning_rate"],
        np.ones((case["n"], 2), np.float32),
    )


@decided_by_values
def test_create_train_state_bn_is_pure(student, classifier):
    """The arguments unchanged, the same variables twice, whatever the global generators: decided from values."""
    purity.assert_pure_by_values(
        student.create_train_state_bn,
        *create_args(classifier),
        first=("variables of", train_steps.fields_of("params", "batch_stats")),
    )


@pytest.mark.decided("source", "module_state")
def test_create_train_state_bn_keeps_no_module_state(student, classifier):
    purity.assert_module_state_unchanged(student, student.create_train_state_bn, *create_args(classifier))


# train_step_bn --------------------------------------------------------------


@correctness
def test_train_step_bn_matches_reference_at_every_step(student, reference, start, other_start, steps):
    """Each step of the student's own training loop is compared with the reference's step from the same state."""
    check = (
        f"train_step_bn equals the reference at every step of {EPOCHS} epochs of a DataLoader "
        f"({len(steps)} steps, batches of {BATCH} and a last batch of {TRAIN_SIZE % BATCH}), "
        f"starting from running averages far from their initial values, and on states of a BNClassifier({OTHER_HIDDEN}, 1)"
    )
    other = f"BNClassifier({OTHER_HIDDEN}, 1)"
    paths = [
        (start, steps, ""),
        (other_start, [(f"with a {other} state, at step {i + 1}", b) for i, (_, b) in enumerate(steps[:2])], other),
    ]
    for state, path, model in paths:
        for label, batch in path:
            with structure.runs_the_states_model("train_step_bn", model):
                new_state, loss = run_train_step_bn(student, state, batch)
            expected_state, expected_loss = reference.train_step_bn(state, batch)
            with values.located(label):
                states.assert_fields_close(
                    new_state, expected_state, STATE_FIELDS, check=check, advice={"batch_stats": RUNNING_AVERAGES}
                )
                values.assert_trees_close(loss, expected_loss, name="loss", check=check)
            state = continue_from(reference, state, new_state, expected_state)


@decided_by_values
def test_train_step_bn_updates_the_running_averages(student, start, trained, steps):
    """A step in evaluation mode (train=False) leaves batch_stats as they were: from running averages far from
    every batch's statistics, a step in training mode moves every one of them."""
    check = "train_step_bn moves batch_stats towards the batch's statistics"
    for label, state, batch in two_steps(start, trained[1], steps):
        new_state, _ = run_train_step_bn(student, state, batch)
        with values.located(label):
            states.assert_leaves_moved(
                state.batch_stats,
                getattr(new_state, "batch_stats", None),
                name="new_state.batch_stats",
                check=check,
                advice="run the model in training mode (train=True) with mutable=['batch_stats'] and keep "
                "updates['batch_stats'] in the new state",
            )


@decided_by_values
def test_train_step_bn_keeps_the_batch_stats_structure(student, start, steps):
    new_state, _ = run_train_step_bn(student, start, steps[0][1])
    check = "the new state's batch_stats have the structure of the old ones"
    got = getattr(new_state, "batch_stats", None)
    if isinstance(got, dict) and "batch_stats" in got:
        raise CheckFailure(
            check,
            "new_state.batch_stats holds the whole dict apply returned ({'batch_stats': {...}})",
            "apply(..., mutable=['batch_stats']) returns (output, updates) with updates = {'batch_stats': ...}; "
            "store updates['batch_stats'], or the next step finds no 'BatchNorm_0' statistics",
        )
    values.assert_trees_close(
        jax.tree_util.tree_map(np.shape, got),
        jax.tree_util.tree_map(np.shape, start.batch_stats),
        name="new_state.batch_stats shapes",
        check=check,
    )


def without_the_bias_before_batchnorm(params):
    """``params`` without Dense_0's bias: BatchNorm subtracts the batch mean right after Dense_0, so in training
    mode that bias has no gradient (it moves by rounding only, or not at all)."""
    if not isinstance(params, dict) or not isinstance(params.get("Dense_0"), dict):
        return params
    return {**params, "Dense_0": {k: v for k, v in params["Dense_0"].items() if k != "bias"}}


@decided_by_values
def test_train_step_bn_takes_gradients_with_respect_to_params(student, start, trained, steps):
    check = "train_step_bn moves every parameter that has a gradient (all but Dense_0's bias, which BatchNorm cancels)"
    for label, state, batch in two_steps(start, trained[1], steps):
        new_state, _ = run_train_step_bn(student, state, batch)
        with values.located(label):
            states.assert_leaves_moved(
                without_the_bias_before_batchnorm(state.params),
                without_the_bias_before_batchnorm(getattr(new_state, "params", None)),
                name="new_state.params",
                check=check,
                advice=ZERO_GRADIENTS,
            )


@decided_by_values
def test_train_step_bn_leaves_its_input_state_unchanged(student, start, trained, steps):
    for _, state, batch in two_steps(start, trained[1], steps):
        purity.assert_arguments_unchanged_as_values(
            student.train_step_bn, purity.fresh_copy(state), purity.fresh_copy(batch), names=("state", "batch")
        )


@decided_by_program
def test_train_step_bn_is_jitted(student, reference, trained, steps):
    """The program of the student's own jax.jit function, run on a state and batch against the reference's step."""
    state, batch = trained[1], full_batches(steps)[0]
    expected = reference.train_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
    train_steps.assert_jitted_gives_the_reference(
        student.train_step_bn,
        purity.fresh_copy(state),
        purity.fresh_copy(batch),
        expected=expected,
        name="train_step_bn",
    )


@one_program_per_loop
def test_train_step_bn_does_not_retrace(student, reference, trained, steps):
    """A training loop: each step is given the state the previous one returned, from an unseen step number."""
    batches = full_batches(steps)
    retraces.observed(
        student.train_step_bn,
        "chained",
        lambda real: loops.assert_chained_steps_do_not_retrace(
            real, unseen_step(trained[1], 0), batches, name="train_step_bn"
        ),
    )
    retraces.assert_one_program(
        student.train_step_bn,
        *retraces.reference_loop(
            reference.train_step_bn,
            unseen_step(trained[1], 0),
            lambda i, state: (state, purity.fresh_copy(batches[i % len(batches)])),
            lambda i, state, result: result[0],
            calls=4,
        ),
        name="train_step_bn",
        check="train_step_bn does not trace or compile again in a training loop once warm",
    )


@decided_by_values
def test_train_step_bn_is_pure(student, reference, trained, steps):
    """Same state and batch, same new state (params and running averages), loss and accuracy."""
    state, batch = trained[1], full_batches(steps)[0]
    expected = reference.train_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
    train_steps.assert_same_result_by_values(
        student.train_step_bn, purity.fresh_copy(state), purity.fresh_copy(batch), expected=expected
    )


@pytest.mark.decided("source", "module_state")
def test_train_step_bn_keeps_no_module_state_and_leaks_no_tracer(student, trained, steps):
    state, batch = trained[1], full_batches(steps)[0]
    purity.assert_module_state_unchanged(
        student, purity.cold(student.train_step_bn), purity.fresh_copy(state), purity.fresh_copy(batch)
    )
    purity.assert_no_leaked_tracers(
        purity.cold(student.train_step_bn), purity.fresh_copy(state), purity.fresh_copy(batch), module=student
    )


# eval_step_bn ---------------------------------------------------------------


@correctness
def test_eval_step_bn_matches_reference(student, reference, trained, other_start, test_batches):
    check = "eval_step_bn(state, batch) is the accuracy in evaluation mode (train=False: running averages)"
    models = f"BNClassifier({HIDDEN}, 1)", f"BNClassifier({OTHER_HIDDEN}, 1)"
    for label, state, batch, model in eval_cases_of_two_models(trained, other_start, test_batches, *models):
        with structure.runs_the_states_model("eval_step_bn", model):
            got = student.eval_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
        with values.located(label):
            values.assert_trees_close(got, reference.eval_step_bn(state, batch), name="accuracy", check=check)


@correctness
def test_eval_step_bn_counts_a_logit_of_zero_as_class_0(student, reference, trained, test_batches):
    """With the last Dense's kernel and bias zero every logit is exactly 0, and the prediction ``logits > 0`` is
    class 0: the accuracy is the share of label 0 (an odd batch: never one half, so class 1 would differ)."""
    state = trained[-1]
    params = dict(state.params)
    params["Dense_1"] = jax.tree.map(jnp.zeros_like, params["Dense_1"])  # the output layer: logits = 0
    state = state.replace(params=params)
    batch = tuple(part[:7] for part in test_batches[0])
    check = "eval_step_bn predicts class 1 only where the logit is > 0 (a logit of exactly 0 is class 0)"
    with structure.runs_the_states_model("eval_step_bn", f"BNClassifier({HIDDEN}, 1)"):
        got = student.eval_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
    with values.located("the last Dense's kernel and bias zero (every logit exactly 0), a batch of 7"):
        values.assert_trees_close(got, reference.eval_step_bn(state, batch), name="accuracy", check=check)


@decided_by_values
def test_eval_step_bn_changes_nothing(student, trained, test_batches):
    for _, state, batch in eval_cases(trained, test_batches)[-2:]:
        purity.assert_arguments_unchanged_as_values(
            student.eval_step_bn,
            purity.fresh_copy(state),
            purity.fresh_copy(batch),
            names=("state", "batch"),
            allow_donation=False,
        )


@decided_by_program
def test_eval_step_bn_is_jitted(student, reference, trained, test_batches):
    state, batch = trained[-1], test_batches[0]
    expected = reference.eval_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
    train_steps.assert_jitted_gives_the_reference(
        student.eval_step_bn, purity.fresh_copy(state), purity.fresh_copy(batch), expected=expected, name="eval_step_bn"
    )


@one_program_per_loop
def test_eval_step_bn_does_not_retrace(student, reference, trained, test_batches):
    """Evaluation inside a training loop: each call's state is new (the next step, new params and running averages)."""

    def a_step_later(state, _):
        moved = jax.tree.map(lambda p: p * 0.9 + 0.01, {"params": state.params, "batch_stats": state.batch_stats})
        return state.replace(step=state.step + 1, **moved)

    retraces.observed(
        student.eval_step_bn,
        "chained",
        lambda real: loops.assert_chained_steps_do_not_retrace(
            real, unseen_step(trained[1], 1), [test_batches[0]], next_state=a_step_later, name="eval_step_bn"
        ),
    )
    retraces.assert_one_program(
        student.eval_step_bn,
        *retraces.reference_loop(
            reference.eval_step_bn,
            unseen_step(trained[1], 1),
            lambda i, state: (state, purity.fresh_copy(test_batches[0])),
            lambda i, state, result: a_step_later(state, result),
            calls=4,
        ),
        name="eval_step_bn",
        check="eval_step_bn does not trace or compile again in a training loop once warm",
    )


@decided_by_values
def test_eval_step_bn_is_pure(student, reference, trained, test_batches):
    state, batch = trained[-1], test_batches[0]
    expected = reference.eval_step_bn(purity.fresh_copy(state), purity.fresh_copy(batch))
    train_steps.assert_same_result_by_values(
        student.eval_step_bn, purity.fresh_copy(state), purity.fresh_copy(batch), expected=expected
    )


@pytest.mark.decided("source", "module_state")
def test_eval_step_bn_keeps_no_module_state_and_leaks_no_tracer(student, trained, test_batches):
    state = trained[-1]
    purity.assert_module_state_unchanged(
        student, purity.cold(student.eval_step_bn), purity.fresh_copy(state), purity.fresh_copy(test_batches[0])
    )
    purity.assert_no_leaked_tracers(
        purity.cold(student.eval_step_bn), purity.fresh_copy(state), purity.fresh_copy(test_batches[0]), module=student
    )
