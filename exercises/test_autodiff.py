"""Checks for module 7, ``autodiff``: run ``pytest exercises/test_autodiff.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``.

- Every function receives ``f``, one of the pure JAX functions below. Values
  are compared with the reference at rtol 1e-5 (``hvp``: 1e-4, since the
  different orders of differentiation round differently), after the type and
  shape of the result.
- "calls f once" is decided from the program (``marked.assert_program_calls_once``):
  ``f`` is handed over with a marker operation added (``marked.marked``); a
  transformation traces it once, so the markers in the compiled program count
  the forward passes the code asks for, and the program must give the
  reference's values.
- The program checks (``decided("program")``) lower ``jax.jit(lambda x, v: fn(f, x, v))`` with ``f`` closed
  over, as the course's conventions say (:mod:`autograder.checks.programs`); the grader runs that program on
  the check's inputs against the reference and inspects it. The size checks lower it at n = m = 1024 and
  look at every array the program names: an (m, n) Jacobian or an (n, n) Hessian has a million elements.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks import marked, programs, purity, values
from autograder.checks.strategies import float32_arrays, integers
from autograder.core.failures import CheckFailure

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")
# Decided on the trusted side from recorded values (issue 42); "calls f once" from the program (marked); what
# neither can show (module state) is a check of its own, observed in the student's process.
values_decided = pytest.mark.decided("values")

# The "calls f once" checks lower the function once per example and count the forward passes in its program.
once_examples = settings(max_examples=2)

HVP_RTOL = 1e-4
# tanh_of_running_sum's second derivative in float32: jit and eager (and hessian-then-product) differ by up to
# 1e-5 on entries near zero (measured over 300 draws: 9.3e-6 at most, on JAX 0.10.2 and 0.11.2, where the XLA
# flags differ); a wrong hvp is off by 0.1 or more
HVP_ATOL = 5e-5
LARGE = 1024  # n = m for the size checks: a Jacobian or Hessian there has LARGE ** 2 elements


# The functions to differentiate ----------------------------------------------
# No formula can be worked out for them by hand, and none builds a large array itself.


def half_squared_norm(x):
    """The tutorial's f(x) = x . x / 2, whose gradient is x."""
    return jnp.vdot(x, x) / 2.0


def sin_times_square(x):
    return jnp.sum(jnp.sin(x) * x**2)


def log_sum_exp(x):
    return jnp.log(jnp.sum(jnp.exp(x)))


def tanh_of_running_sum(x):
    return jnp.sum(jnp.tanh(jnp.cumsum(jnp.ravel(x))) ** 2)


SCALAR_FUNCTIONS = (half_squared_norm, sin_times_square, log_sum_exp, tanh_of_running_sum)


def sin_times_running_sum(x):
    """R^n -> R^n with a dense (lower-triangular) Jacobian."""
    return jnp.sin(x) * jnp.cumsum(x)


def neighbour_products(x):
    """R^n -> R^(n-1): m != n, so a transposed Jacobian has the wrong shape."""
    return jnp.tanh(x[1:] * x[:-1]) + x[1:]


def squares_and_total(x):
    """R^n -> R^(n+1)."""
    return jnp.concatenate([x**2 / 2, jnp.sum(jnp.sin(x), keepdims=True)])


VECTOR_FUNCTIONS = (sin_times_running_sum, neighbour_products, squares_and_total)


def outer_with_cosine(x):
    """R^n -> R^(n x n): f(x) may have any shape."""
    return jnp.outer(x, jnp.cos(x))


def rows_times_columns(x):
    """R^(2 x 3) -> R^(2 x 2)."""
    return jnp.tanh(x @ x.T)


# (f, the shape of x it takes): vector and matrix inputs; scalar, vector and matrix outputs.
ANY_SHAPE_CASES = (
    (outer_with_cosine, (5,)),
    (rows_times_columns, (2, 3)),
    (sin_times_square, (2, 3)),
    (sin_times_running_sum, (5,)),
)


def functions(options):
    return st.sampled_from(options)


VECTOR_SHAPES = ((5,),)
VECTOR_OR_MATRIX_SHAPES = ((5,), (2, 3))


def vectors(shapes=VECTOR_SHAPES):
    return float32_arrays(shapes, min_value=-2.0, max_value=2.0)


def any_shape_cases():
    """``(f, x)`` for one of ANY_SHAPE_CASES."""
    return st.sampled_from(ANY_SHAPE_CASES).flatmap(lambda case: st.tuples(st.just(case[0]), vectors((case[1],))))


def large(seed=0):
    rng = np.random.RandomState(seed)
    return rng.normal(size=LARGE).astype(np.float32)


def assert_program_builds_nothing_of_size(fn, reference_fn, f, x, second, *, check, problem, advice, rtol=1e-3):
    """The program of ``fn(f, x, second)`` (jitted, ``f`` closed over) gives the reference's values and holds no
    array of LARGE * LARGE elements."""
    expected = reference_fn(f, x, second)
    compiled = programs.program_of(fn, x, second, fixed=(f,), result_like=expected, check=check, advice=advice)
    programs.assert_no_value_of_size(compiled, LARGE * LARGE, check=check, problem=problem, advice=advice)
    # at n = 1024 another order of summation rounds differently: the tolerance only tells a program of another function
    programs.assert_gives(compiled, x, second, expected=expected, rtol=rtol, atol=1e-3)


def assert_result_is_an_array(got, expected, function, check):
    """The contract's result is one array, not a tuple (np.allclose((a,), a) would say True)."""
    if isinstance(got, (tuple, list)):
        raise CheckFailure(
            check,
            f"{function} returned a {type(got).__name__} of {len(got)} values, not one array of shape {np.shape(expected)}",
            "jax.jvp and jax.vjp return pairs: (f(x), tangent) and (f(x), pullback), and a pullback returns a "
            "tuple with one entry per argument; return only the array the docstring asks for",
        )


# value_and_gradient ---------------------------------------------------------

VALUE_AND_GRAD_ONCE = (
    "jax.value_and_grad(f)(x) gives (f(x), gradient) from one forward and one backward pass. Calling f(x) "
    "and then jax.grad(f)(x) runs the forward pass twice; finite differences call f once per entry of x, plus one."
)


@correctness
@settings(max_examples=8)
@given(f=functions(SCALAR_FUNCTIONS), x=vectors(VECTOR_OR_MATRIX_SHAPES))
def test_value_and_gradient_matches_reference(student, reference, f, x):
    check = "value_and_gradient(f, x) returns (f(x), the gradient of f at x), the gradient with x's shape and dtype"
    got = values.assert_returns_tuple(
        student.value_and_gradient(f, x), ("value", "gradient"), function="value_and_gradient", check=check
    )
    expected = reference.value_and_gradient(f, x)
    values.assert_trees_close(got, expected, name="(value, gradient)", check=check)


@program
@pytest.mark.parametrize("shape", VECTOR_OR_MATRIX_SHAPES, ids=["1-D", "2-D"])
@once_examples
@given(data=st.data())
def test_value_and_gradient_calls_f_once(student, reference, shape, data):
    x = data.draw(vectors((shape,)))
    marked.assert_program_calls_once(
        student.value_and_gradient,
        reference.value_and_gradient,
        sin_times_square,
        x,
        caller="value_and_gradient",
        advice=VALUE_AND_GRAD_ONCE,
    )


@program
@settings(max_examples=3)
@given(f=functions((log_sum_exp,)), x=vectors(((2, 3),)))
def test_value_and_gradient_works_under_jit(student, reference, f, x):
    programs.assert_compiles_to_the_reference(
        student.value_and_gradient, x, fixed=(f,), expected=reference.value_and_gradient(f, x)
    )


@values_decided
def test_value_and_gradient_is_pure(student):
    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    purity.assert_pure_by_values(student.value_and_gradient, log_sum_exp, x)


@pytest.mark.decided("source", "module_state")
def test_value_and_gradient_keeps_no_module_state(student):
    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    purity.assert_module_state_unchanged(student, student.value_and_gradient, log_sum_exp, x)


# directional_derivative -----------------------------------------------------

JVP_ADVICE = (
    "jax.jvp(f, (x,), (v,)) pushes the one direction v through f alongside the forward pass and returns "
    "(f(x), J v): the size of one evaluation of f, never the (m, n) Jacobian that jax.jacfwd or jax.jacobian build."
)


@correctness
@settings(max_examples=8)
@given(case=any_shape_cases(), seed=integers(0, 2**16))
def test_directional_derivative_matches_reference(student, reference, case, seed):
    f, x = case
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    check = "directional_derivative(f, x, v) returns J_f(x) v, with the shape of f(x)"
    expected = reference.directional_derivative(f, x, v)
    got = student.directional_derivative(f, x, v)
    assert_result_is_an_array(got, expected, "directional_derivative", check)
    values.assert_trees_close(got, expected, name="tangent", check=check)


@values_decided
def test_directional_derivative_returns_only_the_tangent(student):
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    check = "directional_derivative returns only the tangent J v, not the pair (f(x), J v)"
    got = student.directional_derivative(sin_times_running_sum, x, np.ones_like(x))
    assert_result_is_an_array(got, sin_times_running_sum(x), "directional_derivative", check)


@program
@once_examples
@given(x=vectors(), seed=integers(0, 2**16))
def test_directional_derivative_calls_f_once(student, reference, x, seed):
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    marked.assert_program_calls_once(
        student.directional_derivative,
        reference.directional_derivative,
        sin_times_running_sum,
        x,
        v,
        caller="directional_derivative",
        advice=JVP_ADVICE,
    )


@program
def test_directional_derivative_builds_no_jacobian(student, reference):
    assert_program_builds_nothing_of_size(
        student.directional_derivative,
        reference.directional_derivative,
        sin_times_running_sum,
        large(1),
        large(2),
        check=f"directional_derivative builds no array of n * m elements (n = m = {LARGE})",
        problem=f"directional_derivative builds the whole Jacobian (or something as large) for n = m = {LARGE}",
        advice=JVP_ADVICE,
    )


@program
@settings(max_examples=3)
@given(f=functions((squares_and_total,)), x=vectors(), seed=integers(0, 2**16))
def test_directional_derivative_works_under_jit(student, reference, f, x, seed):
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    programs.assert_compiles_to_the_reference(
        student.directional_derivative, x, v, fixed=(f,), expected=reference.directional_derivative(f, x, v)
    )


# vjp_rows -------------------------------------------------------------------

VJP_ADVICE = (
    "one jax.vjp(f, x) runs the forward pass once and returns the pullback c -> c^T J as a function; "
    "jax.vmap of the pullback (take element 0 of what it returns) applies it to every row of cotangents "
    "in one program: no Python loop, no Jacobian"
)


def cotangents_for(f, x, k, seed):
    m = jax.eval_shape(f, x).shape[0]
    return np.random.RandomState(seed).normal(size=(k, m)).astype(np.float32)


@correctness
@settings(max_examples=8)
@given(f=functions(VECTOR_FUNCTIONS), x=vectors(), k=st.sampled_from([1, 3]), seed=integers(0, 2**16))
def test_vjp_rows_matches_reference(student, reference, f, x, k, seed):
    cotangents = cotangents_for(f, x, k, seed)
    check = "vjp_rows(f, x, cotangents) returns (k, n): row i is cotangents[i] @ J_f(x)"
    expected = reference.vjp_rows(f, x, cotangents)
    got = student.vjp_rows(f, x, cotangents)
    assert_result_is_an_array(got, expected, "vjp_rows", check)
    values.assert_trees_close(got, expected, name="rows", check=check)


@program
@pytest.mark.parametrize("k", [2, 5])
@once_examples
@given(x=vectors(), seed=integers(0, 2**16))
def test_vjp_rows_calls_f_once_whatever_k(student, reference, k, x, seed):
    marked.assert_program_calls_once(
        student.vjp_rows,
        reference.vjp_rows,
        neighbour_products,
        x,
        cotangents_for(neighbour_products, x, k, seed),
        caller=f"vjp_rows (with k = {k} rows)",
        advice="a Python loop of jax.vjp calls f once per row; " + VJP_ADVICE,
    )


@program
def test_vjp_rows_program_does_not_grow_with_k(student, reference):
    x = large(1)[:6]
    compiled = {}
    for k in (2, 5):
        cotangents = cotangents_for(neighbour_products, x, k, k)
        expected = reference.vjp_rows(neighbour_products, x, cotangents)
        compiled[k] = programs.program_of(
            student.vjp_rows, x, cotangents, fixed=(neighbour_products,), result_like=expected
        )
        programs.assert_gives(compiled[k], x, cotangents, expected=expected)
    programs.assert_program_size_constant(
        compiled,
        "cotangents (k rows)",
        name="vjp_rows",
        advice="a Python loop over the rows is unrolled into one copy of the body per row; " + VJP_ADVICE,
    )


@program
def test_vjp_rows_builds_no_jacobian(student, reference):
    cotangents = np.random.RandomState(0).normal(size=(2, LARGE)).astype(np.float32)
    assert_program_builds_nothing_of_size(
        student.vjp_rows,
        reference.vjp_rows,
        sin_times_running_sum,
        large(1),
        cotangents,
        check=f"vjp_rows builds no (m, n) array for k = 2 rows (n = m = {LARGE})",
        problem=f"vjp_rows builds the whole Jacobian (or something as large) for k = 2 rows and n = m = {LARGE}",
        advice="cotangents @ jax.jacrev(f)(x) computes all m rows of the Jacobian to use k of them; " + VJP_ADVICE,
    )


@program
@settings(max_examples=3)
@given(f=functions((neighbour_products,)), x=vectors(), seed=integers(0, 2**16))
def test_vjp_rows_works_under_jit(student, reference, f, x, seed):
    cotangents = cotangents_for(f, x, 3, seed)
    programs.assert_compiles_to_the_reference(
        student.vjp_rows, x, cotangents, fixed=(f,), expected=reference.vjp_rows(f, x, cotangents)
    )


# hvp ------------------------------------------------------------------------

HVP_ADVICE = (
    "jax.jvp(jax.grad(f), (x,), (v,))[1] differentiates the gradient along v (forward-over-reverse) and "
    "never forms the Hessian; jax.hessian(f) and jax.jacfwd(jax.jacrev(f)) build all n * n entries"
)
HVP_FUNCTIONS = (sin_times_square, log_sum_exp, tanh_of_running_sum)


@correctness
@settings(max_examples=8)
@given(f=functions(HVP_FUNCTIONS), x=vectors(), seed=integers(0, 2**16))
def test_hvp_matches_reference(student, reference, f, x, seed):
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    check = "hvp(f, x, v) returns the Hessian-vector product H_f(x) @ v"
    expected = reference.hvp(f, x, v)
    got = student.hvp(f, x, v)
    assert_result_is_an_array(got, expected, "hvp", check)
    values.assert_trees_close(got, expected, rtol=HVP_RTOL, atol=HVP_ATOL, name="H @ v", check=check)


@program
def test_hvp_builds_no_hessian(student, reference):
    assert_program_builds_nothing_of_size(
        student.hvp,
        reference.hvp,
        tanh_of_running_sum,
        large(1),
        large(2),
        check=f"hvp builds no array of n * n elements (n = {LARGE})",
        problem=f"hvp builds the whole Hessian (or something as large) for n = {LARGE}",
        advice=HVP_ADVICE,
    )


@program
@once_examples
@given(x=vectors(), seed=integers(0, 2**16))
def test_hvp_calls_f_once(student, reference, x, seed):
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    marked.assert_program_calls_once(
        student.hvp,
        reference.hvp,
        tanh_of_running_sum,
        x,
        v,
        caller="hvp",
        advice=HVP_ADVICE,
        rtol=HVP_RTOL,
        atol=HVP_ATOL,
    )


@program
@settings(max_examples=3)
@given(f=functions((tanh_of_running_sum,)), x=vectors(), seed=integers(0, 2**16))
def test_hvp_works_under_jit(student, reference, f, x, seed):
    v = np.random.RandomState(seed).normal(size=x.shape).astype(np.float32)
    programs.assert_compiles_to_the_reference(
        student.hvp, x, v, fixed=(f,), expected=reference.hvp(f, x, v), rtol=HVP_RTOL, atol=HVP_ATOL
    )


@program
@settings(max_examples=3)
@given(f=functions((sin_times_square,)), x=vectors(), seed=integers(0, 2**16))
def test_hvp_works_under_vmap_over_v(student, reference, f, x, seed):
    """The program of ``jax.vmap`` over the directions, compared with the reference and with the student's own
    hvp one direction at a time."""
    directions = np.random.RandomState(seed).normal(size=(3,) + x.shape).astype(np.float32)
    check = "jax.vmap(lambda v: hvp(f, x, v))(V) has row i equal to hvp(f, x, V[i])"
    expected = jnp.stack([reference.hvp(f, x, v) for v in directions])
    compiled = programs.program_of(
        student.hvp,
        x,
        directions,
        result_like=expected,
        form=lambda hvp: lambda x, V: jax.vmap(lambda v: hvp(f, x, v))(V),
        form_label=f"vmap-over-v|{f.__name__}",
        check=check,
    )
    got = compiled(x, directions)
    assert_result_is_an_array(got, directions, "jax.vmap of hvp", check)
    rows = jnp.stack([student.hvp(f, x, v) for v in directions])  # row by row: the rows vmap must give
    values.assert_trees_close(
        got, rows, rtol=HVP_RTOL, atol=HVP_ATOL, name="rows", check=check, source="hvp called per direction"
    )
    values.assert_trees_close(got, expected, rtol=HVP_RTOL, atol=HVP_ATOL, name="rows", check=check)
