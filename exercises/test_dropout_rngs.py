"""Checks for module 10, ``dropout_rngs``: run ``pytest exercises/test_dropout_rngs.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. States are built with the reference from a
``DropoutClassifier(7, 1, rate=0.4)``, a size no module-level model of the
student's can guess, so a step must use ``state.apply_fn``. Batches come from
the ``data`` module's reference (``XORDataset``, ``make_loader``), and one
base dropout key is given at every step, as a training loop does.

The fixtures build what the checks are *given* (states, batches); the checks
ask the reference only for the answers they compare. The student's steps are
judged along the student's own path: each step starts from the state the
student's previous step returned, and is compared with the reference's step
from that same state. (``grade`` records the fixtures' givens on its trusted
side and judges this module there: its grading processes hold no reference.)
"""

import functools
import inspect
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autograder.checks import keys, keyuse, loops, programs, purity, retraces, states, structure, train_steps, values
from autograder.checks.scenario import (
    assert_is_train_state,
    created_state,
    drawn_key,
    epochs_of,
    eval_cases,
    full_batches,
    given_state,
    run_step,
    two_steps,
    xor_loader,
)
from autograder.core.failures import CheckFailure
from autograder.core.oracle import continue_from, sibling, transformed

correctness = pytest.mark.correctness
decided_by_values = pytest.mark.decided("values")
# Decided on the trusted side from the program the student's function compiles to (issue 42).
decided_by_program = pytest.mark.decided("program")
# Decided from the program (one program serves every step) and the source (no jax.jit made per call, no new static
# parts in a returned state: autograder.core.retrace_sources); the count of traces is observed first.
one_program_per_loop = pytest.mark.decided("program", "retraces_in_a_loop")

HIDDEN, RATE, LEARNING_RATE = 7, 0.4, 0.3
TRAIN_SIZE, TEST_SIZE, BATCH, EPOCHS = 96, 32, 32, 2  # full batches: one shape, one compilation
STATE_FIELDS = ("step", "params", "opt_state")
DROPOUT_SEED = 11
# The states the checks are given start from other keys than create_train_state_dropout is judged on
# (CREATE_CASES), and the trained one walks another path than the student's steps are judged on.
START_SEED, TRAINED_SEED, TRAINED_KEY_SEED, RATE_0_9_SEED = 2, 3, 13, 5

KEY_DERIVATION = (
    "this step's dropout key is jax.random.fold_in(dropout_key, state.step): the same base key is given at "
    "every step, and the step number makes each step's mask new. Do not split dropout_key, use it as it is, "
    "or make a key of your own"
)
ZERO_GRADIENTS = (
    "the gradients were all zero: differentiate a loss function of its params argument, and run the model "
    "with that argument ({'params': params}), not with state.params"
)
SGD_ADVICE = "the optimizer must be optax.sgd(learning_rate): plain SGD with the learning rate you were given"


def dropout_key(kind="typed"):
    return drawn_key("dropout key", DROPOUT_SEED, kind)


@pytest.fixture(scope="module")
def data(reference):
    """The reference ``data`` module: XORDataset and make_loader."""
    return sibling(reference, "data")


@pytest.fixture(scope="module")
def classifier(reference):
    """The course's ``DropoutClassifier`` (given in the module, not the student's to change)."""
    return reference.DropoutClassifier


SAMPLE_INPUT = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)


def new_state(reference, hidden=HIDDEN, rate=RATE, learning_rate=LEARNING_RATE, seed=START_SEED):
    model = reference.DropoutClassifier(hidden, 1, rate=rate)
    state = given_state(reference.create_train_state_dropout, model, seed, learning_rate, SAMPLE_INPUT)
    # Its step is already an int32 array, as after any first step, so every state of a scenario has the
    # same types and each jitted step compiles once (from TrainState.create's Python int 0 it compiles twice).
    return state.replace(step=jnp.zeros((), jnp.int32))


@pytest.fixture(scope="module")
def start(reference):
    """The scenario's first state; every check starts from this object (apply_fn and tx are static for jit)."""
    return new_state(reference)


@pytest.fixture(scope="module")
def steps(data):
    """The batches of two epochs of a real DataLoader: the student's steps run over them from ``start``,
    each given the same base key, and each is compared with the reference's step from the same state."""
    return epochs_of(xor_loader(data, TRAIN_SIZE, 7, BATCH, shuffle_seed=3), EPOCHS)


@pytest.fixture(scope="module")
def trained(reference, data):
    """A state the reference trained elsewhere (another start, data and base key than the checks judge):
    the state the evaluation and Monte-Carlo checks are given."""
    state = new_state(reference, seed=TRAINED_SEED)
    for _, batch in epochs_of(xor_loader(data, TRAIN_SIZE, 8, BATCH, shuffle_seed=4), EPOCHS):
        state, _ = reference.train_step_dropout(state, batch, drawn_key("dropout key", TRAINED_KEY_SEED))
    return state


@pytest.fixture(scope="module")
def test_batches(data):
    return list(xor_loader(data, TEST_SIZE, 11, BATCH))


def run_train_step(student, state, batch, key):
    """The student's step on fresh copies (it may donate them), checked to return ``(new_state, loss)``."""
    return run_step(
        student.train_step_dropout,
        state,
        batch,
        key,
        returns=("new_state", "loss"),
        function="train_step_dropout",
        check="train_step_dropout(state, batch, dropout_key) returns (new_state, loss)",
    )


def assert_tracing_writes_no_module_state(student, fn, *args, static_argnums=()):
    """Run ``fn``'s Python body once by tracing it (``jax.make_jaxpr``: nothing is compiled); it must add,
    rebind or mutate no module-level variable. ``fn``'s jit cache is cleared first, or its body would not run."""
    fn = purity.cold(fn)

    @functools.wraps(fn)
    def traced(*a):
        return jax.make_jaxpr(fn, static_argnums=static_argnums)(*a)

    purity.assert_module_state_unchanged(student, traced, *args)


# create_train_state_dropout -------------------------------------------------

# One model size and input shape (each new shape compiles every op of init again); both key kinds.
CREATE_CASES = [
    {"key": ("typed", 0), "rate": 0.5, "learning_rate": 0.7},
    {"key": ("legacy", 1), "rate": 0.2, "learning_rate": 0.05},
]


def _create(module, classifier, case, kind=None):
    model = classifier(HIDDEN, 1, rate=case["rate"])
    return created_state(module.create_train_state_dropout, model, case, SAMPLE_INPUT, kind), model, SAMPLE_INPUT


def _assert_is_train_state(state, check):
    assert_is_train_state(state, check, function="create_train_state_dropout")


@correctness
def test_create_train_state_dropout_params_match_reference(student, reference, classifier):
    check = "create_train_state_dropout's params are model.init(rng, sample_input, train=False)['params']"
    for case in CREATE_CASES:
        got, _, _ = _create(student, classifier, case)
        expected, _, _ = _create(reference, classifier, case)
        _assert_is_train_state(got, check)
        with values.located(f"with a {case['key'][0]} key and DropoutClassifier({HIDDEN}, 1, rate={case['rate']})"):
            states.assert_fields_close(got, expected, ("params",), name="state", check=check)


@decided_by_values
def test_create_train_state_dropout_holds_only_the_two_dense_layers(student, classifier):
    check = "state.params holds only the model's parameters: {'Dense_0': ..., 'Dense_1': ...}"
    got, _, _ = _create(student, classifier, CREATE_CASES[1])
    _assert_is_train_state(got, check)
    layers = set(got.params) if hasattr(got.params, "keys") else None
    if layers != {"Dense_0", "Dense_1"}:
        extra = (
            "model.init returns all the variable collections, {'params': {...}}: keep variables['params'] only"
            if layers and "params" in layers
            else "there is no dropout or batch_stats collection: params are the two Dense layers' kernels and biases"
        )
        raise CheckFailure(check, f"state.params is {values.describe(got.params)}", extra)


@decided_by_values
def test_create_train_state_dropout_returns_a_train_state_of_the_model(student, classifier):
    check = "create_train_state_dropout returns a TrainState at step 0 whose apply_fn is model.apply"
    for case in CREATE_CASES:
        got, model, sample = _create(student, classifier, case)
        _assert_is_train_state(got, check)
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
def test_create_train_state_dropout_optimizer_is_sgd_with_the_learning_rate(student, classifier):
    """The optimizer is judged by what it does: three steps with the same gradients as optax.sgd(learning_rate)."""
    for case in CREATE_CASES:
        got, _, _ = _create(student, classifier, case)
        check = f"create_train_state_dropout's optimizer makes the steps of optax.sgd({case['learning_rate']})"
        _assert_is_train_state(got, check)
        states.assert_steps_like_optimizer(
            got, optax.sgd(case["learning_rate"]), seed=case["key"][1], check=check, advice=SGD_ADVICE
        )


@decided_by_values
def test_create_train_state_dropout_gives_the_same_params_for_both_key_kinds(student, classifier):
    check = "create_train_state_dropout gives the same params for jax.random.key(s) and jax.random.PRNGKey(s)"
    case = CREATE_CASES[1]
    typed, _, _ = _create(student, classifier, case, kind="typed")
    legacy, _, _ = _create(student, classifier, case, kind="legacy")
    _assert_is_train_state(typed, check)
    states.assert_fields_close(legacy, typed, ("params",), name="state (legacy key)", check=check)


def create_args(classifier):
    case = CREATE_CASES[1]
    model = classifier(HIDDEN, 1, rate=case["rate"])
    return keys.make_key(7, "legacy"), model, case["learning_rate"], np.ones_like(SAMPLE_INPUT)


@decided_by_values
def test_create_train_state_dropout_is_pure(student, classifier):
    """The arguments unchanged, the same params twice, whatever the global generators: decided from values."""
    purity.assert_pure_by_values(
        student.create_train_state_dropout,
        *create_args(classifier),
        first=("params of", train_steps.fields_of("params")),
    )


@pytest.mark.decided("source", "module_state")
def test_create_train_state_dropout_keeps_no_module_state(student, classifier):
    purity.assert_module_state_unchanged(student, student.create_train_state_dropout, *create_args(classifier))


# train_step_dropout ---------------------------------------------------------


@functools.partial(jax.jit, static_argnums=0)
def _loss_with_key(apply_fn, params, batch, key):
    x, labels = batch
    logits = apply_fn({"params": params}, x, train=True, rngs={"dropout": key}).squeeze(-1)
    return optax.sigmoid_binary_cross_entropy(logits, labels).mean()


def which_key(state, batch, key, loss):
    """The name of the (wrong) dropout key that gives the student's ``loss`` from ``state`` on ``batch``, or None."""
    candidates = {
        "dropout_key itself (the same mask at every step)": key,
        "jax.random.split(dropout_key)[0]": jax.random.split(key)[0],
        "jax.random.split(dropout_key)[1]": jax.random.split(key)[1],
        "a fixed key of your own, jax.random.key(0)": jax.random.key(0),
        "fold_in(dropout_key, state.step + 1)": jax.random.fold_in(key, state.step + 1),
    }
    for name, candidate in candidates.items():
        if np.allclose(
            np.asarray(loss), np.asarray(_loss_with_key(state.apply_fn, state.params, batch, candidate)), rtol=1e-6
        ):
            return name
    return None


@decided_by_program
def test_train_step_dropout_is_jitted(student, reference, trained, steps):
    """The program of the student's own jax.jit function, run on a state, batch and key against the reference."""
    state, batch = trained, steps[1][1]
    expected = reference.train_step_dropout(purity.fresh_copy(state), purity.fresh_copy(batch), dropout_key())
    train_steps.assert_jitted_gives_the_reference(
        student.train_step_dropout,
        purity.fresh_copy(state),
        purity.fresh_copy(batch),
        dropout_key(),
        expected=expected,
        name="train_step_dropout",
    )


@correctness
def test_train_step_dropout_matches_reference_at_every_step(student, reference, start, steps):
    """Each step of the student's own training loop is compared with the reference's step from the same state."""
    check = (
        f"train_step_dropout equals the reference at every step of {EPOCHS} epochs of a DataLoader "
        f"({len(steps)} steps), one base dropout_key given at every step"
    )
    state = start
    for label, batch in steps:
        new_state, loss = run_train_step(student, state, batch, dropout_key())
        expected_state, expected_loss = reference.train_step_dropout(state, batch, dropout_key())
        with values.located(label):
            try:
                values.assert_trees_close(loss, expected_loss, name="loss", check=check)
            except CheckFailure as failure:
                used = which_key(state, batch, dropout_key(), loss) if np.shape(loss) == () else None
                if used is None:
                    raise
                raise CheckFailure(
                    check, f"{failure.problem}: the step used {used} as its dropout key", KEY_DERIVATION
                ) from None
            states.assert_fields_close(
                new_state, expected_state, STATE_FIELDS, check=check, advice={"params": KEY_DERIVATION}
            )
        state = continue_from(reference, state, new_state, expected_state)


@decided_by_values
def test_train_step_dropout_gives_the_same_numbers_for_legacy_keys(student, start, trained, steps):
    check = "train_step_dropout gives the same numbers for jax.random.key(s) and jax.random.PRNGKey(s)"
    for label, state, batch in two_steps(start, trained, steps):
        typed = run_train_step(student, state, batch, dropout_key("typed"))
        legacy = run_train_step(student, state, batch, dropout_key("legacy"))
        with values.located(f"{label}, with a legacy key"):
            same = "the same step with a typed key"
            values.assert_trees_close(legacy[1], typed[1], rtol=1e-6, name="loss", check=check, source=same)
            states.assert_fields_close(legacy[0], typed[0], ("params",), rtol=1e-6, check=check, source=same)


@decided_by_values
def test_train_step_dropout_uses_a_new_mask_at_every_step(student, trained, steps):
    """The same params, batch and key at two step numbers: the masks, hence the losses, must differ."""
    batch = steps[1][1]
    check = "train_step_dropout draws a new dropout mask at every step number (from the same base key)"
    at = int(trained.step)
    _, loss = run_train_step(student, trained, batch, dropout_key())
    _, next_loss = run_train_step(student, trained.replace(step=trained.step + 1), batch, dropout_key())
    if np.array_equal(np.asarray(loss), np.asarray(next_loss)):
        raise CheckFailure(
            check,
            f"from the same params and batch, the steps numbered {at} and {at + 1} gave the same loss: "
            "the dropout mask does not depend on state.step",
            KEY_DERIVATION,
        )


LOOP_STEPS = 3


def looped_with_one_key(train_step_dropout):
    """``train_step_dropout`` in a loop of :data:`LOOP_STEPS` steps from ``state``, each given the next of
    ``batches`` and the same base ``key``, as data: ``(the last state, the losses)``. The loop runs under
    ``jax.debug_key_reuse(True)``: where it runs the student's step, a step that consumes the key fails there with
    the step's number (which only words a failure: the values decide a pass)."""

    def loop(state, batches, key):
        losses = []
        for i in range(LOOP_STEPS):
            try:
                with jax.debug_key_reuse(True):
                    state, loss = values.assert_returns_tuple(
                        train_step_dropout(state, batches[i % len(batches)], key),
                        ("new_state", "loss"),
                        function="train_step_dropout",
                        check="train_step_dropout(state, batch, dropout_key) returns (new_state, loss)",
                    )
            except jax.errors.KeyReuseError as err:
                raise CheckFailure(
                    CONSUMING_CHECK,
                    f"at step {i + 1} of a loop that gives the same dropout_key to every step, JAX reports that the "
                    "key was already used: an earlier step consumed it (split it, or drew from it)",
                    f"JAX says: {str(err).splitlines()[0]}\n{KEY_DERIVATION}; fold_in does not consume the base key, "
                    "split does",
                ) from None
            losses.append(loss)
        return state, losses

    return loop


CONSUMING_CHECK = (
    "train_step_dropout does not consume the dropout_key it is given: a loop of steps given the same key gives the "
    "reference's states and losses"
)


@decided_by_values
def test_train_step_dropout_uses_the_base_key_without_consuming_it(student, reference, start, steps):
    """A loop of steps from the same state, each given the same base key (and run under jax.debug_key_reuse(True)
    where the student's step runs), gives the reference's losses and last state: decided from those values, which
    only the contract's fold_in(dropout_key, state.step) gives; a step that splits the key draws other masks."""
    batches, key = full_batches(steps, BATCH), keys.as_typed(dropout_key())
    form = "a loop with one base key"
    got = structure.transformed_once(student.train_step_dropout, form, looped_with_one_key)(
        purity.fresh_copy(start), purity.fresh_copy(batches), key
    )
    expected = transformed(reference, "train_step_dropout", form, looped_with_one_key)(
        purity.fresh_copy(start), purity.fresh_copy(batches), key
    )
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], list) and len(got[1]) == LOOP_STEPS):
        raise CheckFailure(
            CONSUMING_CHECK, "the loop's states and losses could not be recorded as data", KEY_DERIVATION
        )
    for i, (loss, want) in enumerate(zip(got[1], expected[1])):
        try:
            values.assert_trees_close(loss, want, rtol=1e-5, atol=1e-6, name=f"the loss of step {i + 1}")
        except CheckFailure as wrong:
            raise CheckFailure(CONSUMING_CHECK, wrong.problem, f"{wrong.details}\n{KEY_DERIVATION}") from None
    states.assert_fields_close(
        got[0], expected[0], STATE_FIELDS, name=f"the state after {LOOP_STEPS} steps", check=CONSUMING_CHECK
    )


@one_program_per_loop
def test_train_step_dropout_does_not_retrace_in_a_training_loop(student, reference, start, steps):
    """A real loop: each step gets the previous step's new_state, a new batch, and the same base key."""
    batches = full_batches(steps, BATCH)

    def make_args(i, state):
        return state, purity.fresh_copy(batches[i % len(batches)]), dropout_key()

    def next_state(i, state, result):
        return values.assert_returns_tuple(
            result,
            ("new_state", "loss"),
            function="train_step_dropout",
            check="train_step_dropout(state, batch, dropout_key) returns (new_state, loss)",
        )[0]

    retraces.observed(
        student.train_step_dropout,
        "loop",
        lambda real: loops.assert_no_retrace_in_loop(
            real, purity.fresh_copy(start), make_args, next_state, name="train_step_dropout"
        ),
    )
    retraces.assert_one_program(
        student.train_step_dropout,
        *retraces.reference_loop(
            reference.train_step_dropout, purity.fresh_copy(start), make_args, next_state, calls=4
        ),
        name="train_step_dropout",
        check="train_step_dropout does not trace or compile again in a training loop once warm",
    )


@decided_by_values
def test_train_step_dropout_takes_gradients_with_respect_to_params(student, start, trained, steps):
    """From these states no parameter's gradient is zero, so a step must move every one of them."""
    check = "train_step_dropout moves every parameter (a step of SGD on the loss of params)"
    for label, state, batch in two_steps(start, trained, steps):
        new_state, _ = run_train_step(student, state, batch, dropout_key())
        with values.located(label):
            states.assert_leaves_moved(
                state.params,
                getattr(new_state, "params", None),
                name="new_state.params",
                check=check,
                advice=ZERO_GRADIENTS,
            )


@decided_by_values
def test_train_step_dropout_leaves_its_arguments_unchanged(student, start, trained, steps):
    for _, state, batch in two_steps(start, trained, steps):
        purity.assert_arguments_unchanged_as_values(
            student.train_step_dropout,
            purity.fresh_copy(state),
            purity.fresh_copy(batch),
            dropout_key(),
            names=("state", "batch", "dropout_key"),
        )


@decided_by_values
def test_train_step_dropout_is_pure(student, reference, trained, steps):
    """Same state, batch and key, same new state and loss: all randomness comes from the key."""
    batch = steps[1][1]
    expected = reference.train_step_dropout(purity.fresh_copy(trained), purity.fresh_copy(batch), dropout_key())
    train_steps.assert_same_result_by_values(
        student.train_step_dropout,
        purity.fresh_copy(trained),
        purity.fresh_copy(batch),
        dropout_key(),
        expected=expected,
    )


@pytest.mark.decided("source", "module_state")
def test_train_step_dropout_keeps_no_module_state_and_leaks_no_tracer(student, trained, steps):
    args = lambda: (purity.fresh_copy(trained), purity.fresh_copy(steps[1][1]), dropout_key())  # noqa: E731
    assert_tracing_writes_no_module_state(student, student.train_step_dropout, *args())
    purity.assert_no_leaked_tracers(purity.cold(student.train_step_dropout), *args(), module=student)


# The contract's target, on fewer epochs: the reference reaches 99.8% after 10 epochs (100% after 100),
# and 10 epochs cost a tenth of the time.
TARGET_EPOCHS, TARGET_ACCURACY = 10, 0.95
CONTRACT = "DropoutClassifier(16, 1, rate=0.1)"


@pytest.fixture(scope="module")
def contract(reference, data):
    """The contract's run: its model, first state (lr 0.1), every batch of TARGET_EPOCHS epochs of
    XORDataset(2500, 42) in batches of 128, and the test set XORDataset(500, 123) as arrays."""
    test = data.XORDataset(500, 123)
    return SimpleNamespace(
        model=reference.DropoutClassifier(16, 1, rate=0.1),
        start=new_state(reference, hidden=16, rate=0.1, learning_rate=0.1, seed=0),
        batches=[
            batch
            for _, batch in epochs_of(
                data.make_loader(data.XORDataset(2500, 42), 128, shuffle=True, seed=0), TARGET_EPOCHS
            )
        ],
        test=(np.asarray(test.data), np.asarray(test.label)),
    )


def accuracy_of(model, params, x, labels):
    """The share of ``x`` the network, dropout off, puts in the class of ``labels`` (class 1 where its logit is above 0)."""
    logits = np.asarray(model.apply({"params": params}, x, train=False))[:, 0]
    return float(np.mean((logits > 0) == labels))


@decided_by_values
def test_train_step_dropout_trains_the_classifier_of_the_contract(student, contract):
    """DropoutClassifier(16, 1, rate=0.1), lr 0.1, XORDataset(2500, 42) in batches of 128, base key jax.random.key(1);
    the accuracy is the model's own (not the state's apply_fn) on the trained params."""
    check = f"{TARGET_EPOCHS} epochs of train_step_dropout train a {CONTRACT} to >= {TARGET_ACCURACY:.0%} on XORDataset(500, 123)"
    state, key = contract.start, jax.random.key(1)
    for batch in contract.batches:
        state, _ = run_train_step(student, state, batch, key)
    try:
        accuracy = accuracy_of(contract.model, state.params, *contract.test)
    except Exception as err:  # noqa: BLE001 - whatever the trained state holds, it is not the model's params
        raise CheckFailure(
            check,
            f"the trained state's params do not fit the {CONTRACT} ({type(err).__name__})",
            "new_state must hold the model's params after the SGD step, with the structure of state.params",
        ) from None
    if accuracy < TARGET_ACCURACY:
        raise CheckFailure(
            check,
            f"the accuracy on the test set is {accuracy:.1%}",
            "each step must make one SGD step on params, with dropout on (train=True) and a new mask per step",
        )


# eval_step_dropout ----------------------------------------------------------

EVAL_CHECK = "eval_step_dropout(state, batch) is the accuracy of the network with dropout off (train=False)"
EVAL_ADVICE = "run the model with train=False: Dropout is then off (no mask, no rescaling, no key)"


@decided_by_program
def test_eval_step_dropout_is_jitted(student, reference, trained, test_batches):
    state, batch = trained, test_batches[0]
    expected = reference.eval_step_dropout(purity.fresh_copy(state), purity.fresh_copy(batch))
    train_steps.assert_jitted_gives_the_reference(
        student.eval_step_dropout,
        purity.fresh_copy(state),
        purity.fresh_copy(batch),
        expected=expected,
        name="eval_step_dropout",
    )


@correctness
def test_eval_step_dropout_matches_reference(student, reference, start, trained, test_batches):
    for label, state, batch in eval_cases((start, trained), test_batches):
        got = student.eval_step_dropout(purity.fresh_copy(state), purity.fresh_copy(batch))
        with values.located(label):
            values.assert_trees_close(got, reference.eval_step_dropout(state, batch), name="accuracy", check=EVAL_CHECK)


@pytest.fixture(scope="module")
def at_rate_0_9(reference):
    return new_state(reference, rate=0.9, seed=RATE_0_9_SEED)


@correctness
def test_eval_step_dropout_equals_the_plain_network_at_rate_0_9(student, reference, at_rate_0_9, test_batches):
    """At rate 0.9 a dropout mask changes almost every prediction, so any randomness shows."""
    for batch in test_batches:
        got = student.eval_step_dropout(purity.fresh_copy(at_rate_0_9), purity.fresh_copy(batch))
        with values.located(f"with DropoutClassifier({HIDDEN}, 1, rate=0.9), test batch of {len(batch[0])}"):
            try:
                values.assert_trees_close(
                    got, reference.eval_step_dropout(at_rate_0_9, batch), name="accuracy", check=EVAL_CHECK
                )
            except CheckFailure as failure:
                raise CheckFailure(failure.check, failure.problem, failure.details + "\n" + EVAL_ADVICE) from None


@decided_by_values
def test_eval_step_dropout_is_deterministic(student, trained, test_batches):
    purity.assert_deterministic_as_values(student.eval_step_dropout, trained, test_batches[0])


def test_eval_step_dropout_takes_no_key(student):
    check = "eval_step_dropout(state, batch) takes exactly two arguments: no key"
    try:
        params = list(inspect.signature(student.eval_step_dropout).parameters.values())
    except (TypeError, ValueError):
        return  # no readable signature: the calls of the other checks judge it
    names = [p.name for p in params]
    if len(params) != 2 or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise CheckFailure(
            check,
            f"eval_step_dropout takes ({', '.join(names)})",
            "evaluation has no randomness, so it needs no key: " + EVAL_ADVICE,
        )


@one_program_per_loop
def test_eval_step_dropout_does_not_retrace_in_a_training_loop(student, reference, start, test_batches):
    """Evaluate after every step of a loop: every state is new (new params, the next step), and the evaluation
    compiles once."""

    def a_step_later(i, state, _):
        return state.replace(step=state.step + 1, params=jax.tree.map(lambda p: p * 0.9 + 0.01, state.params))

    def evaluation(i, state):
        return state, purity.fresh_copy(test_batches[0])

    retraces.observed(
        student.eval_step_dropout,
        "loop",
        lambda real: loops.assert_no_retrace_in_loop(
            real,
            purity.fresh_copy(start),
            evaluation,
            a_step_later,
            name="eval_step_dropout",
            loop="a training loop that evaluates after every step",
        ),
    )
    retraces.assert_one_program(
        student.eval_step_dropout,
        *retraces.reference_loop(
            reference.eval_step_dropout, purity.fresh_copy(start), evaluation, a_step_later, calls=4
        ),
        name="eval_step_dropout",
        check="eval_step_dropout does not trace or compile again in a training loop once warm",
    )


@decided_by_values
def test_eval_step_dropout_changes_nothing(student, start, trained, test_batches):
    for _, state, batch in eval_cases((start, trained), test_batches)[-2:]:
        purity.assert_arguments_unchanged_as_values(
            student.eval_step_dropout,
            purity.fresh_copy(state),
            purity.fresh_copy(batch),
            names=("state", "batch"),
            allow_donation=False,
        )


@pytest.mark.decided("source", "module_state")
def test_eval_step_dropout_keeps_no_module_state_and_leaks_no_tracer(student, trained, test_batches):
    assert_tracing_writes_no_module_state(
        student, student.eval_step_dropout, purity.fresh_copy(trained), purity.fresh_copy(test_batches[0])
    )
    purity.assert_no_leaked_tracers(
        purity.cold(student.eval_step_dropout),
        purity.fresh_copy(trained),
        purity.fresh_copy(test_batches[0]),
        module=student,
    )


# mc_dropout_predict ---------------------------------------------------------

MC_SAMPLES = 5
MC_X = np.linspace(-0.5, 1.5, 12, dtype=np.float32).reshape(6, 2)
MC_CHECK = (
    f"mc_dropout_predict(state, x, key, {MC_SAMPLES}) is the mean of sigmoid(logits) with dropout on, "
    "sample i using keys[i] of jax.random.split(key, n_samples)"
)


def jitted(fn):
    """One jax.jit of ``fn`` with n_samples (argument 3) static, reused by every check."""
    return structure.jit_once(fn, (3,))


MC_ROWS = (1, 6)  # a batch of one: a squeeze without an axis gives shape ()
# Each new (rows, n_samples) compiles both functions: the examples add one more, a prime batch with one sample.


def mc_inputs(rows):
    return np.linspace(-0.5, 1.5, 2 * rows, dtype=np.float32).reshape(rows, 2)


@correctness
@given(
    kind=st.sampled_from(keys.KINDS),
    seed=st.integers(0, 2**31 - 1),
    rows=st.sampled_from(MC_ROWS),
    n_samples=st.just(MC_SAMPLES),
)
@example(kind="typed", seed=0, rows=1, n_samples=MC_SAMPLES)
@example(kind="legacy", seed=1, rows=7, n_samples=1)
def test_mc_dropout_predict_matches_reference(student, reference, trained, kind, seed, rows, n_samples):
    """Both key kinds; the expected values come from the typed key, since PRNGKey(s) gives the same numbers."""
    x = mc_inputs(rows)
    got = jitted(student.mc_dropout_predict)(trained, x, keys.make_key(seed, kind), n_samples)
    expected = jitted(reference.mc_dropout_predict)(trained, x, keys.make_key(seed, "typed"), n_samples)
    check = MC_CHECK.replace(f"x, key, {MC_SAMPLES})", f"x, key, {n_samples}) for x of {rows} row(s)")
    values.assert_trees_close(got, expected, name="mean probability", check=check)


@decided_by_values
def test_mc_dropout_predict_depends_only_on_the_key(student, trained):
    """Judged from values: the jitted function's two results for one key (recorded together), and its results for
    two keys."""
    fn = jitted(student.mc_dropout_predict)
    for kind in keys.KINDS:
        purity.assert_deterministic_as_values(
            student.mc_dropout_predict,
            trained,
            MC_X,
            keys.make_key(7, kind),
            MC_SAMPLES,
            label="called twice, jitted",
            transform=lambda f: purity.called_twice_on_copies(jitted(f)),
            check="mc_dropout_predict gives the same result for the same key",
            problem=f"mc_dropout_predict returned different results for the same key ({kind} key 7)",
            advice="all randomness must come from the key argument",
        )
        keys.assert_key_changes_result(fn, lambda key: (trained, MC_X, key, MC_SAMPLES), kind)


@decided_by_program
def test_mc_dropout_predict_uses_each_key_once(student, reference, trained):
    """Decided from the compiled program: it gives the reference's mean for the key (the samples' keys are the
    contract's split, each used by one draw), and passes no key value to two draws or splits."""
    keyuse.assert_program_uses_each_key_once(
        student.mc_dropout_predict,
        reference.mc_dropout_predict,
        keys.make_key(3, "typed"),
        trained,
        MC_X,
        MC_SAMPLES,
        key_argnum=2,
        static_argnums=(3,),
    )


@decided_by_program
def test_mc_dropout_predict_has_no_python_loop_over_the_samples(student, reference, trained):
    """Decided from the compiled programs for 4 and 16 samples, each run against the reference."""
    key = keys.make_key(0, "typed")
    check = "mc_dropout_predict compiles to the same program whatever the size of n_samples"
    compiled = {}
    for n in (4, 16):
        expected = reference.mc_dropout_predict(trained, MC_X, key, n)
        compiled[n] = programs.program_of(
            student.mc_dropout_predict, trained, MC_X, key, n, static_argnums=(3,), result_like=expected, check=check
        )
        programs.assert_gives(compiled[n], trained, MC_X, key, expected=expected)
    programs.assert_program_size_constant(
        compiled,
        "n_samples",
        name="mc_dropout_predict",
        advice="a Python loop over the samples puts one copy of the network per sample into the program; "
        "jax.vmap over the array of keys (or jax.lax.map) runs every sample in one program of fixed size",
    )


@decided_by_program
def test_mc_dropout_predict_works_under_jit(student, reference, trained):
    args = (trained, MC_X, keys.make_key(2, "typed"), MC_SAMPLES)
    programs.assert_compiles_to_the_reference(
        student.mc_dropout_predict,
        *args,
        static_argnums=(3,),
        expected=reference.mc_dropout_predict(*args),
    )


@decided_by_values
def test_mc_dropout_predict_leaves_the_state_unchanged(student, trained):
    """Called as it is (no jit of the check's: a write into the state's dicts shows), it keeps the state usable."""
    purity.assert_arguments_unchanged_as_values(
        student.mc_dropout_predict,
        purity.fresh_copy(trained),
        MC_X,
        keys.make_key(4, "typed"),
        MC_SAMPLES,
        names=("state", "x", "key", "n_samples"),
        allow_donation=False,
    )


@pytest.mark.decided("source", "module_state")
def test_mc_dropout_predict_keeps_no_module_state(student, trained):
    assert_tracing_writes_no_module_state(
        student, student.mc_dropout_predict, trained, MC_X, keys.make_key(4, "typed"), MC_SAMPLES, static_argnums=(3,)
    )
