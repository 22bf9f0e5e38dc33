"""Checks for module 9, ``pytrees``: run ``pytest exercises/test_pytrees.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. Inputs come from a few fixed shapes (every new shape is
a new compilation). ``fit`` is judged with the student's own ``sgd_update``: a
``fit`` that runs that step ``n_steps`` times is right whatever the step does
(a bug in ``sgd_update`` fails ``sgd_update``'s checks only), and so is one
that gives the reference's values. No check here lends the reference's code
to the student's module, so ``grade`` judges the module on the trusted side
only.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import loops, programs, purity, retraces, states, structure, values
from autograder.checks.scenario import drawn_key, drawn_seed
from autograder.checks.strategies import drawn_constant, drawn_from_seed, float32s, floats, integers, linear_problems
from autograder.core.failures import CheckFailure

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")  # the grader runs and inspects the program the function compiles to
# Decided from the program (one program, the learning rate traced, serves every step) and the source (no jax.jit made
# per call: autograder.core.retrace_sources); the count of traces is observed first, in the student's process.
one_program_per_loop = pytest.mark.decided("program", "retraces_in_a_loop")
# Decided on the trusted side from recorded values (issue 42); what values cannot show (module state, a leaked
# tracer) is a check of its own, observed in the student's process.
values_decided = pytest.mark.decided("values")

LEARNING_RATES = (0.05, 0.3)


def regression_problems():
    """``(params, x, y)``: a params dict {"W", "b"} and a batch, NumPy float32, from a few shapes."""
    return linear_problems().map(lambda p: ({"W": p[1], "b": p[2]}, p[0], p[3]))


def assert_float32_scalar(got, function, check, batch=None):
    """``got`` is a 0-d float32 array: the mean, not the per-example values or a (1,) array."""
    shape = tuple(np.shape(got))
    if shape == ():
        return
    if batch is not None and shape == (batch,):
        why = "these are the per-example errors: return their mean over the batch"
    elif shape == (1,):
        why = (
            "a (1,) array is not a scalar: reduce without keepdims, and do not wrap the result in a list or reshape it"
        )
    else:
        why = "reduce over every axis so that one number is left"
    raise CheckFailure(check, f"{function} returned an array of shape {shape}, not a scalar (shape ())", why)


# mse ------------------------------------------------------------------------

MSE_CHECK = "mse(params, x_batched, y_batched) is the mean over the batch of 0.5 * ||y_i - predict(params, x_i)||^2"


@correctness
@given(problem=regression_problems())
def test_mse_matches_reference(student, reference, problem):
    params, x, y = problem
    got = student.mse(params, x, y)
    assert_float32_scalar(got, "mse", MSE_CHECK, batch=len(x))
    values.assert_trees_close(got, reference.mse(params, x, y), check=MSE_CHECK)


@program
@given(problem=regression_problems())
def test_mse_works_under_jit(student, reference, problem):
    programs.assert_compiles_to_the_reference(student.mse, *problem, expected=reference.mse(*problem))


@values_decided
@settings(max_examples=3)
@given(problem=regression_problems())
def test_mse_is_pure(student, problem):
    purity.assert_pure_by_values(student.mse, *problem)


@pytest.mark.decided("source", "module_state")
@settings(max_examples=3)
@given(problem=regression_problems())
def test_mse_keeps_no_module_state_and_leaks_no_tracer(student, problem):
    purity.assert_module_state_unchanged(student, student.mse, *problem)
    purity.assert_no_leaked_tracers(student.mse, *problem, module=student)


# sgd_update -----------------------------------------------------------------

UPDATE_CHECK = "sgd_update(params, learning_rate, x, y) is params - learning_rate * grad(mse), leaf by leaf"
BOTH_LEAVES = (
    "jax.grad(mse)(params, x, y) has a gradient for every leaf of params ({'W': ..., 'b': ...}); "
    "update all of them with jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)"
)


@pytest.fixture(scope="module")
def regression():
    """A fixed problem of one shape: (params, x, y) with params away from the optimum."""
    rng = np.random.RandomState(drawn_seed("regression", 0))
    params = {"W": rng.normal(size=(4, 3)).astype(np.float32), "b": rng.normal(size=(3,)).astype(np.float32)}
    x = rng.normal(size=(8, 4)).astype(np.float32)
    y = rng.normal(size=(8, 3)).astype(np.float32)
    return params, x, y


@program
def test_sgd_update_is_jitted(student, reference, regression):
    """The program of the student's own jax.jit function (only a jitted function has one), run against the reference."""
    params, x, y = regression
    expected = reference.sgd_update(params, 0.1, x, y)
    compiled = programs.program_of(
        student.sgd_update,
        params,
        0.1,
        x,
        y,
        as_is=True,
        result_like=expected,
        name="sgd_update",
        check="sgd_update is compiled with jax.jit",
        advice="decorate it with @jax.jit, or write `sgd_update = jax.jit(...)` at module level, "
        "so that it is compiled once and reused on every call",
    )
    programs.assert_gives(compiled, params, 0.1, x, y, expected=expected)


@correctness
@given(problem=regression_problems(), learning_rate=st.sampled_from(LEARNING_RATES))
def test_sgd_update_matches_reference(student, reference, problem, learning_rate):
    params, x, y = problem
    got = student.sgd_update(purity.fresh_copy(params), learning_rate, x, y)
    values.assert_trees_close(
        got, reference.sgd_update(params, learning_rate, x, y), name="new_params", check=UPDATE_CHECK
    )


@values_decided
def test_sgd_update_moves_both_W_and_b(student, regression):
    """The fixed problem is far from its optimum: every leaf of its gradient is nonzero."""
    params, x, y = regression
    got = student.sgd_update(purity.fresh_copy(params), 0.1, x, y)
    states.assert_leaves_moved(
        params,
        got,
        name="new_params",
        check="sgd_update changes every parameter the gradient step changes",
        advice=BOTH_LEAVES,
    )


@one_program_per_loop
def test_sgd_update_does_not_retrace_in_a_training_loop(student, reference, regression):
    """Each step's params are the previous step's output, with a new learning rate (a schedule) and new data."""
    params, x, y = regression

    def make_args(i, params):
        return params, 0.2 / (1 + i), x + 0.01 * i, y - 0.01 * i

    retraces.observed(
        student.sgd_update,
        "loop",
        lambda real: loops.assert_no_retrace_in_loop(
            real,
            purity.fresh_copy(params),
            make_args,
            lambda i, params, new: new,
            name="sgd_update",
            loop="a loop of gradient steps with a decaying learning rate",
        ),
    )
    retraces.assert_one_program(
        student.sgd_update,
        *retraces.reference_loop(
            reference.sgd_update, purity.fresh_copy(params), make_args, lambda i, params, new: new, calls=4
        ),
        name="sgd_update",
        check="sgd_update does not trace or compile again in a loop of gradient steps with a decaying learning rate",
    )


@values_decided
def test_sgd_update_leaves_params_unchanged(student, regression):
    params, x, y = regression
    purity.assert_arguments_unchanged_by_values(student.sgd_update, purity.fresh_copy(params), 0.1, x, y)


@values_decided
def test_sgd_update_is_pure(student, regression):
    params, x, y = regression
    purity.assert_pure_by_values(student.sgd_update, purity.fresh_copy(params), 0.1, x, y)


@pytest.mark.decided("source", "module_state")
def test_sgd_update_keeps_no_module_state_and_leaks_no_tracer(student, regression):
    params, x, y = regression
    purity.assert_module_state_unchanged(student, purity.cold(student.sgd_update), purity.fresh_copy(params), 0.1, x, y)
    purity.assert_no_leaked_tracers(
        purity.cold(student.sgd_update), purity.fresh_copy(params), 0.1, x, y, module=student
    )


# fit ------------------------------------------------------------------------

# The contract's target: the tutorial's data, zeros, learning rate 0.3, 101 steps.
TARGET_LOSS, TARGET_STEPS, TARGET_RATE = 0.015, 101, 0.3


FIT_HINT = (
    "run exactly n_steps steps, each from the params the previous one returned "
    "(for _ in range(n_steps), or jax.lax.fori_loop(0, n_steps, ...)); with 0 steps return params as they are"
)


def steps_taken(reference, params, x, y, learning_rate, got, most):
    """How many reference steps from ``params`` give ``got`` (None if no count up to ``most`` does)."""
    current = params
    for k in range(most + 1):
        try:
            values.assert_trees_close(got, current, check="")
            return k
        except CheckFailure:
            current = reference.sgd_update(current, learning_rate, x, y)
    return None


def own_steps(student, params, x, y, learning_rate, n_steps):
    """``n_steps`` successive steps of the student's own ``sgd_update`` from ``params`` (each from a fresh
    copy: a step that writes into its argument changes nothing here), or the exception it raised."""
    current = params
    try:
        for _ in range(n_steps):
            current = student.sgd_update(purity.fresh_copy(current), learning_rate, x, y)
    except Exception as err:  # noqa: BLE001 - sgd_update's own checks report it; fit's message names it
        return err
    return current


def _close(got, expected) -> bool:
    try:
        values.assert_trees_close(got, expected, check="")
    except CheckFailure:
        return False
    return True


def assert_fit_runs_the_steps(student, reference, params, x, y, learning_rate, n_steps, *, check, explain=None):
    """``fit(params, x, y, learning_rate, n_steps)`` equals ``n_steps`` reference steps, or ``n_steps`` steps of
    the student's own ``sgd_update`` when those move the params (a step that moves nothing cannot tell a
    fit that runs it from one that does nothing). Both runs use the student's ``sgd_update``. ``explain(got)``
    may word a difference that none of the diagnoses here explains."""
    mine = own_steps(student, params, x, y, learning_rate, n_steps)
    try:
        got = student.fit(purity.fresh_copy(params), x, y, learning_rate, n_steps)
    except Exception as err:
        if not isinstance(mine, Exception):
            raise
        raise CheckFailure(
            check,
            f"fit raised {type(err).__name__}: {err}, and so does your sgd_update on these params",
            "fit is judged with your own sgd_update: make sgd_update run first (its checks say what is wrong)",
        ) from None
    expected = reference.fit(params, x, y, learning_rate, n_steps)
    if _close(got, expected):
        return
    moved = not isinstance(mine, Exception) and n_steps > 0 and not _close(mine, params)
    if moved and _close(got, mine):
        return  # fit runs the student's step n_steps times: the step's values are sgd_update's checks' business
    if isinstance(mine, Exception):
        raise CheckFailure(
            check,
            f"fit's result differs from {n_steps} reference steps, and your sgd_update raised "
            f"{type(mine).__name__}: {mine}",
            "fit is judged with your own sgd_update: fix sgd_update first",
        )
    if n_steps > 0 and not moved:
        raise CheckFailure(
            check,
            f"your sgd_update leaves the params unchanged, so fit's result cannot be told apart from "
            f"doing nothing: it differs from {n_steps} reference steps",
            "fit is judged with your own sgd_update: fix sgd_update first (its checks say what is wrong)",
        )
    taken = steps_taken(reference, params, x, y, learning_rate, got, n_steps + 3)
    if taken is not None and taken != n_steps:
        raise CheckFailure(
            check, f"fit(..., {n_steps}) returned the params after {taken} step(s), not {n_steps}", FIT_HINT
        )
    if explain is not None:
        explain(got)
    values.assert_trees_close(got, expected, name="params", check=check)


@correctness
@pytest.mark.parametrize("n_steps", [0, 1, 4])
def test_fit_equals_repeated_gradient_steps(student, reference, regression, n_steps):
    params, x, y = regression
    check = f"fit(params, x, y, 0.1, {n_steps}) equals {n_steps} successive gradient steps from params"
    assert_fit_runs_the_steps(student, reference, params, x, y, 0.1, n_steps, check=check)


@correctness
def test_fit_reaches_the_target_of_the_tutorial(student, reference):
    """The contract: make_regression_data(jax.random.key(0)), params at zeros, learning rate 0.3, 101 steps.
    The reference's 101 steps reach mse 0.0128: a fit with its values meets the target."""
    x, y, true_params = reference.make_regression_data(drawn_key("make_regression_data", 0))
    zeros = jax.tree.map(jnp.zeros_like, true_params)
    check = f"fit brings mse below {TARGET_LOSS} in {TARGET_STEPS} steps at learning rate {TARGET_RATE} on the tutorial's data"

    def explain(fitted):
        if jax.tree.map(np.shape, fitted) == jax.tree.map(np.shape, zeros):
            loss = float(reference.mse(fitted, x, y))
            if not loss <= TARGET_LOSS:
                raise CheckFailure(
                    check,
                    f"after fit the loss is {loss:.4g}, above {TARGET_LOSS}",
                    "take every one of the n_steps steps",
                )

    assert_fit_runs_the_steps(student, reference, zeros, x, y, TARGET_RATE, TARGET_STEPS, check=check, explain=explain)


def pure_step(params, learning_rate, x, y):
    """A pure stand-in for ``sgd_update`` while fit's purity is judged (not a gradient step)."""
    return jax.tree.map(lambda p: p * (1 - learning_rate) + learning_rate * jnp.mean(y), params)


@values_decided
def test_fit_is_pure(student, regression, monkeypatch):
    """With a pure step in place of sgd_update (an impure sgd_update is sgd_update's own finding)."""
    params, x, y = regression
    monkeypatch.setattr(student, "sgd_update", jax.jit(pure_step))
    purity.assert_pure_by_values(student.fit, purity.fresh_copy(params), x, y, 0.1, 2)


@pytest.mark.decided("source", "module_state")
def test_fit_keeps_no_module_state(student, regression, monkeypatch):
    """With a pure step in place of sgd_update, as for test_fit_is_pure."""
    params, x, y = regression
    monkeypatch.setattr(student, "sgd_update", jax.jit(pure_step))
    purity.assert_module_state_unchanged(student, student.fit, purity.fresh_copy(params), x, y, 0.1, 2)


# global_norm ----------------------------------------------------------------

# Pytrees of several kinds, each with fixed leaf shapes (a new shape is a new compilation).
NORM_TREES = {
    "a params dict": {"W": (3, 2), "b": (2,)},
    "a list holding a tuple": [(4,), ((2, 2), (3,))],
    "nested layers": {"layer1": {"w": (2, 3), "b": (3,)}, "layer2": [(3, 1), (1,)]},
    "a single array": (5,),
    "a tuple of one scalar": ((),),
}


def _is_shape(node):
    return type(node) is tuple and all(type(n) is int for n in node)


def trees_of(templates):
    """``(label, tree)``: a template's structure with float32 NumPy leaves of its shapes."""

    def fill(label):
        template = templates[label]
        shapes, treedef = jax.tree_util.tree_flatten(template, is_leaf=_is_shape)
        leaves = [hnp.arrays(np.float32, shape, elements=float32s(-10.0, 10.0)) for shape in shapes]
        return st.tuples(*leaves).map(lambda ls: (label, jax.tree_util.tree_unflatten(treedef, list(ls))))

    return st.sampled_from(sorted(templates)).flatmap(fill)


def call_on_tree(fn, name, tree, label, check):
    """``fn(tree)``; an exception becomes a failure naming the kind of pytree it was raised on."""
    try:
        return fn(tree)
    except Exception as err:  # noqa: BLE001 - reported to the student with the tree it failed on
        raise CheckFailure(
            check,
            f"{name} raised {type(err).__name__}: {err} on {label}: {values.describe(tree)}",
            "the tree may be any nesting of dicts, lists and tuples: walk it with jax.tree.leaves(tree) "
            "instead of reading fixed keys or assuming a container type",
        ) from None


@correctness
@given(case=trees_of(NORM_TREES))
def test_global_norm_matches_reference(student, reference, case):
    label, tree = case
    check = "global_norm(tree) is sqrt of the sum of squares of every leaf, for any pytree"
    got = call_on_tree(student.global_norm, "global_norm", tree, label, check)
    with values.located(f"on {label}"):
        assert_float32_scalar(got, "global_norm", check)
        values.assert_trees_close(got, reference.global_norm(tree), check=check)


@program
@given(case=trees_of(NORM_TREES))
def test_global_norm_works_under_jit(student, reference, case):
    _, tree = case
    programs.assert_compiles_to_the_reference(student.global_norm, tree, expected=reference.global_norm(tree))


@values_decided
@settings(max_examples=3)
@given(case=trees_of(NORM_TREES))
def test_global_norm_is_pure(student, case):
    purity.assert_pure_by_values(student.global_norm, case[1])


@pytest.mark.decided("source", "module_state")
@settings(max_examples=3)
@given(case=trees_of(NORM_TREES))
def test_global_norm_keeps_no_module_state(student, case):
    purity.assert_module_state_unchanged(student, student.global_norm, case[1])


# param_count ----------------------------------------------------------------

COUNT_CHECK = "param_count(tree) is the total number of entries of the leaves, a Python int"


def count_leaves():
    """Leaves of every kind: NumPy and JAX arrays of several shapes, Python numbers."""
    shapes = st.sampled_from([(), (1,), (3,), (2, 3), (4, 1, 2), (0, drawn_constant(3, 2, 9))])
    arrays = drawn_from_seed(shapes.map(lambda s: np.zeros(s, np.float32)), -1.0, 1.0, width=32)  # zeros without a seed
    return st.one_of(arrays, arrays.map(jnp.asarray), integers(-3, 3, leave_range=True), floats(-1, 1))


def count_trees():
    keys = st.sampled_from(["W", "b", "layer1", "scale"])
    return st.recursive(
        count_leaves(),
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3),
            st.lists(children, min_size=1, max_size=3).map(tuple),
            st.dictionaries(keys, children, min_size=1, max_size=3),
        ),
        max_leaves=6,
    )


def assert_python_int(got, check):
    if type(got) is not int:
        kind = f"{type(got).__module__}.{type(got).__qualname__}"
        raise CheckFailure(
            check,
            f"param_count returned a {kind} ({values.describe(got)}), not a Python int",
            "add up Python integers (math.prod of each leaf's shape, or np.size(leaf)): jnp and np reductions "
            "return arrays or NumPy integers, and under jit a jnp result is a tracer that cannot be a shape",
        )


@correctness
@given(tree=count_trees())
def test_param_count_matches_reference(student, reference, tree):
    got = call_on_tree(student.param_count, "param_count", tree, "a pytree", COUNT_CHECK)
    values.assert_trees_close(got, reference.param_count(tree), name="count", check=COUNT_CHECK)


@values_decided
@given(tree=count_trees())
def test_param_count_returns_a_python_int(student, tree):
    check = "param_count returns a Python int (type(result) is int)"
    assert_python_int(call_on_tree(student.param_count, "param_count", tree, "a pytree", check), check)


@values_decided
def test_param_count_counts_a_python_number_as_one_entry(student):
    check = "param_count counts a Python number leaf as one entry"
    tree = {"W": np.zeros((2, 3), np.float32), "scale": 0.5, "steps": [3, np.ones(4, np.float32)]}
    got = call_on_tree(student.param_count, "param_count", tree, "a tree with Python numbers", check)
    if got != 12:
        raise CheckFailure(
            check,
            f"param_count({values.describe(tree)}) is {got!r}, expected 12",
            "a Python number is one entry: np.shape(3) is (), and the product of () is 1",
        )


@program
@pytest.mark.parametrize("label", ["a params dict", "nested layers"])
def test_param_count_works_as_a_shape_under_jit(student, reference, label):
    """The program of jax.jit(lambda t: jnp.zeros(param_count(t))): the count must be known while tracing, and the
    program gives the reference's zeros."""
    check = "param_count(tree) is a Python int under jax.jit, usable as a shape: jnp.zeros(param_count(tree))"
    tree = jax.tree.map(lambda shape: np.ones(shape, np.float32), NORM_TREES[label], is_leaf=_is_shape)
    expected = jnp.zeros(reference.param_count(tree))
    try:
        compiled = programs.program_of(
            student.param_count,
            tree,
            result_like=expected,
            form=lambda param_count: lambda t: jnp.zeros(param_count(t)),
            form_label="zeros-of-count",
            name="param_count",
            check=check,
            explain=False,
        )
    except CheckFailure:
        raise
    except Exception as err:  # noqa: BLE001 - classified below
        explanation = structure.jit_error_explanation(err) or (f"it raised {type(err).__name__}: {err}", "")
        raise CheckFailure(
            check,
            f"param_count cannot be used as a shape under jit: {explanation[0]}",
            "compute it from the static shapes with Python integers (math.prod(leaf.shape)), never from jnp values",
        ) from None
    programs.assert_gives(compiled, tree, expected=expected)


@values_decided
def test_param_count_is_pure(student):
    tree = {"W": np.zeros((2, 3), np.float32), "b": [np.zeros(3, np.float32), 1.0]}
    purity.assert_pure_by_values(student.param_count, tree)


@pytest.mark.decided("source", "module_state")
def test_param_count_keeps_no_module_state(student):
    tree = {"W": np.zeros((2, 3), np.float32), "b": [np.zeros(3, np.float32), 1.0]}
    purity.assert_module_state_unchanged(student, student.param_count, tree)
