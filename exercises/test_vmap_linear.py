"""Checks for module 4, ``vmap_linear``: run ``pytest exercises/test_vmap_linear.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. Shapes come from a few (batch, d_in, d_out) buckets, and
arrays arrive as NumPy or JAX arrays.

- ``batched_linear`` must be *built from your* ``linear`` by one ``jax.vmap``:
  the check compiles it with ``linear``'s arguments marked on every call and
  reads in the program how ``linear`` was traced (once, over the whole batch,
  ``W`` and ``b`` shared).
- ``per_example_grads`` must give one gradient per example as ``vmap`` of
  ``grad`` does: in work proportional to the batch (no Jacobian of the batch
  of losses, whose work is quadratic) and in a traced program that does not
  grow with the batch (no Python loop).
- Called again with same-shaped inputs, nothing may trace or compile again.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder.checks import programs, purity, retraces, values, vmap_program
from autograder.checks.strategies import LINEAR_SHAPES, linear_problems
from autograder.core.failures import CheckFailure

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")  # the grader runs and inspects the program the function compiles to
# Decided on the trusted side from recorded values (issue 42); what values cannot show (module state, a leaked
# tracer) is a check of its own, observed in the student's process.
values_decided = pytest.mark.decided("values")
# Decided from the program (no varying argument baked into it) and the source (no jax.jit of a function made per call,
# no cache cleared: autograder.core.retrace_sources); the count of traces is observed first, in the student's process.
one_program = pytest.mark.decided("program", "retraces")


def as_arrays(arrays, use_jax):
    return tuple(jnp.asarray(a) if use_jax else a for a in arrays)


def problem(shape, seed=0):
    """(xs, W, b, ys) as JAX arrays for one (batch, d_in, d_out) shape."""
    batch, d_in, d_out = shape
    rng = np.random.default_rng(seed)
    return tuple(
        jnp.asarray(rng.normal(size=s).astype(np.float32))
        for s in ((batch, d_in), (d_in, d_out), (d_out,), (batch, d_out))
    )


def params_of(W, b):
    return {"W": W, "b": b}


# linear ---------------------------------------------------------------------


@correctness
@given(arrays=linear_problems(), use_jax=st.booleans())
def test_linear_matches_reference(student, reference, arrays, use_jax):
    xs, W, b, _ = as_arrays(arrays, use_jax)
    values.assert_matches_reference(student.linear, reference.linear, xs[0], W, b)


@program
@given(arrays=linear_problems())
def test_linear_works_under_jit(student, reference, arrays):
    xs, W, b, _ = as_arrays(arrays, True)
    programs.assert_compiles_to_the_reference(student.linear, xs[0], W, b, expected=reference.linear(xs[0], W, b))


@values_decided
def test_linear_is_pure(student):
    xs, W, b, _ = problem(LINEAR_SHAPES[1])
    purity.assert_pure_by_values(student.linear, np.asarray(xs[0]), np.asarray(W), np.asarray(b))


@pytest.mark.decided("source", "module_state")
def test_linear_keeps_no_module_state_and_leaks_no_tracer(student):
    xs, W, b, _ = problem(LINEAR_SHAPES[1])
    purity.assert_module_state_unchanged(student, student.linear, np.asarray(xs[0]), np.asarray(W), np.asarray(b))
    purity.assert_no_leaked_tracers(student.linear, xs[0], W, b, module=student)


@one_program
def test_linear_does_not_retrace(student, reference):
    def make_args(i):
        xs, W, b, _ = problem(LINEAR_SHAPES[2], i)
        return xs[0], W, b

    retraces.assert_no_retrace(student.linear, make_args, reference=reference.linear, name="linear")


# batched_linear -------------------------------------------------------------


@correctness
@given(arrays=linear_problems(), use_jax=st.booleans())
def test_batched_linear_matches_reference(student, reference, arrays, use_jax):
    xs, W, b, _ = as_arrays(arrays, use_jax)
    values.assert_matches_reference(student.batched_linear, reference.batched_linear, xs, W, b)


@program
@pytest.mark.parametrize("shape", LINEAR_SHAPES, ids=lambda s: f"B={s[0]}")
def test_batched_linear_is_one_vmap_of_linear(student, reference, shape):
    """Decided from the program, lowered with linear's arguments marked on every call: one marked trace of linear
    over the whole batch, W and b shared, and the reference's values on the marked inputs."""
    xs, W, b, _ = problem(shape)
    vmap_program.assert_program_is_one_vmap(
        student.batched_linear,
        student.linear,
        xs,
        W,
        b,
        expected=reference.batched_linear(*vmap_program.marked_inputs(xs, W, b)),
        caller="batched_linear",
        names=("x", "W", "b"),
    )


@program
@given(arrays=linear_problems())
def test_batched_linear_works_under_jit(student, reference, arrays):
    xs, W, b, _ = as_arrays(arrays, True)
    programs.assert_compiles_to_the_reference(
        student.batched_linear, xs, W, b, expected=reference.batched_linear(xs, W, b)
    )


@values_decided
def test_batched_linear_is_pure(student):
    xs, W, b, _ = problem(LINEAR_SHAPES[1])
    purity.assert_pure_by_values(student.batched_linear, np.asarray(xs), np.asarray(W), np.asarray(b))


@pytest.mark.decided("source", "module_state")
def test_batched_linear_keeps_no_module_state_and_leaks_no_tracer(student):
    xs, W, b, _ = problem(LINEAR_SHAPES[1])
    purity.assert_module_state_unchanged(student, student.batched_linear, np.asarray(xs), np.asarray(W), np.asarray(b))
    purity.assert_no_leaked_tracers(student.batched_linear, xs, W, b, module=student)


@one_program
def test_batched_linear_does_not_retrace(student, reference):
    retraces.assert_no_retrace(
        student.batched_linear,
        lambda i: problem(LINEAR_SHAPES[2], i)[:3],
        reference=reference.batched_linear,
        name="batched_linear",
    )


# per_example_grads ----------------------------------------------------------


@correctness
@given(arrays=linear_problems(), use_jax=st.booleans())
def test_per_example_grads_matches_reference(student, reference, arrays, use_jax):
    xs, W, b, ys = as_arrays(arrays, use_jax)
    values.assert_matches_reference(
        student.per_example_grads, reference.per_example_grads, params_of(W, b), xs, ys, rtol=1e-5, atol=1e-5
    )


@values_decided
@pytest.mark.parametrize("shape", LINEAR_SHAPES[1:], ids=lambda s: f"B={s[0]}")
def test_per_example_grads_has_one_gradient_per_example(student, shape):
    xs, W, b, ys = problem(shape)
    got = student.per_example_grads(params_of(W, b), xs, ys)
    batch = shape[0]
    expected = {"W": (batch, *W.shape), "b": (batch, *b.shape)}
    if not isinstance(got, dict) or set(got) != set(expected):
        raise CheckFailure(
            "per_example_grads returns a dict with the keys of params",
            f"per_example_grads returned {values.describe(got)}",
            "jax.grad of a function of params returns a pytree shaped like params: {'W': ..., 'b': ...}",
        )
    for name, want in expected.items():
        shape_got = tuple(np.shape(got[name]))
        if shape_got == want:
            continue
        summed = shape_got == want[1:]
        raise CheckFailure(
            "per_example_grads has a leading batch axis B on every leaf",
            f"gradient[{name!r}] has shape {shape_got}, expected {want} for a batch of {batch}",
            (
                "that is the shape of ONE gradient: the gradient of the mean or sum of the losses over the batch, "
                "where every example's contribution is mixed into one number per parameter.\n"
                if summed
                else ""
            )
            + "Take the gradient of the loss of one example and map it over the batch: "
            "jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys) gives one gradient per example.",
        )


VMAP_OF_GRAD = (
    "the contract is jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, xs, ys): the gradient of ONE "
    "example's loss, mapped over the batch, which costs B gradients, not B x B"
)


@program
def test_per_example_grads_scales_linearly_with_the_batch(student, reference):
    """One gradient per example, as vmap of grad computes it: the work grows like B and the program not at all
    (decided from the compiled programs, each run against the reference)."""
    compiled = {}
    for batch in (4, 8, 32):  # (a batch of 1 compiles to a few broadcasts fewer)
        xs, W, b, ys = problem((batch, 3, 2))
        args = (params_of(W, b), xs, ys)
        expected = reference.per_example_grads(*args)
        compiled[batch] = programs.program_of(
            student.per_example_grads,
            *args,
            result_like=expected,
            check="per_example_grads does work proportional to the batch (one gradient per example)",
        )
        programs.assert_gives(compiled[batch], *args, expected=expected, atol=1e-5)
    programs.assert_work_linear_in_batch(
        (8, compiled[8]), (32, compiled[32]), name="per_example_grads", contract=VMAP_OF_GRAD
    )
    programs.assert_program_size_constant(
        compiled,
        "the batch",
        name="per_example_grads",
        advice="a Python loop over the elements is unrolled into one copy of the body per element; "
        "use jax.vmap (or a jax.lax loop) so the program stays the same size",
    )


@program
@given(arrays=linear_problems())
def test_per_example_grads_works_under_jit(student, reference, arrays):
    xs, W, b, ys = as_arrays(arrays, True)
    programs.assert_compiles_to_the_reference(
        student.per_example_grads,
        params_of(W, b),
        xs,
        ys,
        expected=reference.per_example_grads(params_of(W, b), xs, ys),
        atol=1e-5,
    )


@values_decided
def test_per_example_grads_is_pure(student):
    xs, W, b, ys = (np.asarray(a) for a in problem(LINEAR_SHAPES[1]))
    purity.assert_pure_by_values(student.per_example_grads, params_of(W, b), xs, ys)


@pytest.mark.decided("source", "module_state")
def test_per_example_grads_keeps_no_module_state_and_leaks_no_tracer(student):
    xs, W, b, ys = (np.asarray(a) for a in problem(LINEAR_SHAPES[1]))
    purity.assert_module_state_unchanged(student, student.per_example_grads, params_of(W, b), xs, ys)
    purity.assert_no_leaked_tracers(student.per_example_grads, params_of(W, b), xs, ys, module=student)


@one_program
def test_per_example_grads_does_not_retrace(student, reference):
    def make_args(i):
        xs, W, b, ys = problem(LINEAR_SHAPES[2], i)
        return params_of(W, b), xs, ys

    retraces.assert_no_retrace(
        student.per_example_grads, make_args, reference=reference.per_example_grads, name="per_example_grads"
    )
