"""Checks for module 1, ``at_updates``: run ``pytest exercises/test_at_updates.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autograder.checks import programs, purity, values
from autograder.checks.strategies import float32_arrays, float32s, ordered_pairs, square_matrices, vectors_with_indices

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")  # the grader runs and inspects the program the function compiles to
# Decided on the trusted side from recorded values (issue 42); what values cannot show (module state, a leaked
# tracer) is a check of its own, observed in the student's process.
values_decided = pytest.mark.decided("values")


@st.composite
def scatter_inputs(draw):
    """``(x, indices, updates)``; indices repeat often."""
    x, indices = draw(vectors_with_indices())
    return x, indices, draw(float32_arrays([indices.shape]))


@st.composite
def clamp_inputs(draw):
    """``(x, indices, lo, hi)``; many entries of x lie outside ``[lo, hi]``."""
    x, indices = draw(vectors_with_indices())
    return (x, indices, *draw(ordered_pairs(-3.0, 3.0)))


# set_diagonal ---------------------------------------------------------------


@correctness
@given(x=square_matrices(), value=float32s())
def test_set_diagonal_matches_reference(student, reference, x, value):
    values.assert_matches_reference(student.set_diagonal, reference.set_diagonal, jnp.asarray(x), value)


@program
@given(x=square_matrices(), value=float32s())
def test_set_diagonal_works_under_jit(student, reference, x, value):
    args = (jnp.asarray(x), value)
    programs.assert_compiles_to_the_reference(student.set_diagonal, *args, expected=reference.set_diagonal(*args))


@values_decided
@given(x=square_matrices(), value=float32s())
def test_set_diagonal_is_pure(student, x, value):
    purity.assert_pure_by_values(student.set_diagonal, jnp.asarray(x), value)


@pytest.mark.decided("source", "module_state")
@given(x=square_matrices(), value=float32s())
def test_set_diagonal_keeps_no_module_state_and_leaks_no_tracer(student, x, value):
    purity.assert_module_state_unchanged(student, student.set_diagonal, jnp.asarray(x), value)
    purity.assert_no_leaked_tracers(student.set_diagonal, jnp.asarray(x), value, module=student)


# scatter_add ----------------------------------------------------------------


@correctness
@given(inputs=scatter_inputs())
@example(inputs=(np.zeros(4, np.float32), np.array([1, 1, 3], np.int32), np.array([2, 5, 1], np.float32)))
def test_scatter_add_matches_reference(student, reference, inputs):
    x, indices, updates = map(jnp.asarray, inputs)
    values.assert_matches_reference(student.scatter_add, reference.scatter_add, x, indices, updates)


@program
@given(inputs=scatter_inputs())
def test_scatter_add_works_under_jit(student, reference, inputs):
    args = tuple(map(jnp.asarray, inputs))
    programs.assert_compiles_to_the_reference(student.scatter_add, *args, expected=reference.scatter_add(*args))


@values_decided
@given(inputs=scatter_inputs())
def test_scatter_add_is_pure(student, inputs):
    purity.assert_pure_by_values(student.scatter_add, *map(jnp.asarray, inputs))


@pytest.mark.decided("source", "module_state")
@given(inputs=scatter_inputs())
def test_scatter_add_keeps_no_module_state_and_leaks_no_tracer(student, inputs):
    args = tuple(map(jnp.asarray, inputs))
    purity.assert_module_state_unchanged(student, student.scatter_add, *args)
    purity.assert_no_leaked_tracers(student.scatter_add, *args, module=student)


# clamp_at -------------------------------------------------------------------


@correctness
@given(inputs=clamp_inputs())
@example(inputs=(np.array([-5, 0, 5, 9], np.float32), np.array([0, 2, 2], np.int32), -1.0, 1.0))
def test_clamp_at_matches_reference(student, reference, inputs):
    x, indices, lo, hi = inputs
    values.assert_matches_reference(student.clamp_at, reference.clamp_at, jnp.asarray(x), jnp.asarray(indices), lo, hi)


@program
@given(inputs=clamp_inputs())
def test_clamp_at_works_under_jit(student, reference, inputs):
    x, indices, lo, hi = inputs
    args = (jnp.asarray(x), jnp.asarray(indices), lo, hi)
    programs.assert_compiles_to_the_reference(student.clamp_at, *args, expected=reference.clamp_at(*args))


@values_decided
@given(inputs=clamp_inputs())
def test_clamp_at_is_pure(student, inputs):
    x, indices, lo, hi = inputs
    purity.assert_pure_by_values(student.clamp_at, jnp.asarray(x), jnp.asarray(indices), lo, hi)


@pytest.mark.decided("source", "module_state")
@given(inputs=clamp_inputs())
def test_clamp_at_keeps_no_module_state_and_leaks_no_tracer(student, inputs):
    x, indices, lo, hi = inputs
    args = (jnp.asarray(x), jnp.asarray(indices), lo, hi)
    purity.assert_module_state_unchanged(student, student.clamp_at, *args)
    purity.assert_no_leaked_tracers(student.clamp_at, *args, module=student)


# replace_negatives ----------------------------------------------------------


@correctness
@given(x=float32_arrays(), value=float32s())
@example(x=np.array([-1.0, 0.0, 2.0], np.float32), value=7.0)
def test_replace_negatives_matches_reference(student, reference, x, value):
    values.assert_matches_reference(student.replace_negatives, reference.replace_negatives, jnp.asarray(x), value)


@program
@given(x=float32_arrays(), value=float32s())
def test_replace_negatives_works_under_jit(student, reference, x, value):
    """Boolean indexing (``x[x < 0]``) fails here: its shape depends on the values."""
    args = (jnp.asarray(x), value)
    programs.assert_compiles_to_the_reference(
        student.replace_negatives, *args, expected=reference.replace_negatives(*args)
    )


@values_decided
@given(x=float32_arrays(), value=float32s())
def test_replace_negatives_is_pure(student, x, value):
    purity.assert_pure_by_values(student.replace_negatives, jnp.asarray(x), value)


@pytest.mark.decided("source", "module_state")
@given(x=float32_arrays(), value=float32s())
def test_replace_negatives_keeps_no_module_state_and_leaks_no_tracer(student, x, value):
    purity.assert_module_state_unchanged(student, student.replace_negatives, jnp.asarray(x), value)
    purity.assert_no_leaked_tracers(student.replace_negatives, jnp.asarray(x), value, module=student)
