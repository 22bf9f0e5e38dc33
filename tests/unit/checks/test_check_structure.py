"""autograder.checks.structure: jit compatibility with reasons, call spies that see vmap, and jaxpr sizes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import slopes, structure, vmapped
from autograder.core.failures import CheckFailure


@pytest.mark.parametrize(
    "fn, pattern",
    [
        (lambda x: x.at[x < 0].set(0.0), r"boolean indexing"),
        (lambda x: x if x.sum() > 0 else -x, r"Python control flow"),
        (lambda x: jnp.asarray(np.maximum(np.asarray(x), 0)), r"converts a traced array to NumPy"),
        (lambda x: jnp.zeros(int(x[0])), r"needs a concrete value|converts a traced array to a Python int"),
    ],
)
def test_untraceable_code_is_explained(fn, pattern):
    with pytest.raises(CheckFailure, match=rf"cannot be compiled with jax.jit: .*{pattern}"):
        structure.assert_works_under_jit(fn, jnp.array([-1.0, 2.0]))


def test_jitted_code_is_compared_with_itself_without_jit_never_with_a_reference():
    """A wrong but jittable function passes (its values are the correctness checks' business); one whose
    jitted values differ from its own values without jit (state read once at trace time) fails."""
    got = structure.assert_works_under_jit(lambda x: jnp.abs(x), jnp.array([-1.0, 2.0]))
    np.testing.assert_allclose(got, [1.0, 2.0])

    calls = []

    def counts_its_calls(x):
        calls.append(1)
        return x * len(calls)

    with pytest.raises(
        CheckFailure, match=r"jax.jit\(counts_its_calls\) gives what counts_its_calls gives without jit"
    ) as err:
        structure.assert_works_under_jit(counts_its_calls, jnp.array([-1.0, 2.0]))
    assert "differs from counts_its_calls without jit" in str(err.value) and "reference" not in str(err.value)


def test_a_hidden_global_draw_fails_whatever_ran_before():
    """A draw from NumPy's global RNG is frozen into the jitted program. Traced at the first draw after a
    seeding, it once matched a call without jit made at the first draw after the same seeding (hypothesis
    seeds the global generators for every example): the verdict depended on which check traced it first."""

    def noisy(x):
        return x + np.random.normal(scale=1e-3)

    x = jnp.ones(2)
    jitted = jax.jit(noisy)
    np.random.seed(0)
    jitted(x)
    np.random.seed(0)
    with pytest.raises(CheckFailure, match=r"jax.jit\(noisy\) gives what noisy gives without jit"):
        structure.assert_works_under_jit(noisy, x, jitted=jitted)
    assert np.random.get_state()[2] == np.random.RandomState(0).get_state()[2]  # the generator is left as it was


def test_a_gradient_is_compared_with_the_functions_own_slope():
    """A function whose values are right but whose gradient is not (a stop_gradient) fails; a smooth one passes.
    The message names central differences, not a reference."""

    def norm_clip(x):
        norm = jnp.linalg.norm(x)
        return jnp.sum(x * jnp.minimum(1.0, 1.0 / norm))

    def stopped(x):
        norm = jax.lax.stop_gradient(jnp.linalg.norm(x))
        return jnp.sum(x * jnp.minimum(1.0, 1.0 / norm))

    x = jnp.array([2.0, -1.0, 0.5])
    slopes.assert_gradient_is_the_slope(norm_clip, x)
    slopes.assert_gradient_is_the_slope(jnp.sum, jnp.array([0.1, 0.2]))
    with pytest.raises(CheckFailure, match=r"gradient differs from the central differences") as err:
        slopes.assert_gradient_is_the_slope(stopped, x)
    assert "the gradient of stopped equals the slope of the function itself" in str(err.value)


def test_a_partial_is_named_after_its_function():
    import functools

    def hvp(f, x):
        return f(x)

    with pytest.raises(CheckFailure, match=r"hvp cannot be compiled with jax.jit"):
        structure.assert_works_under_jit(functools.partial(hvp, lambda x: x if x.sum() > 0 else -x), jnp.array([1.0]))


def linear(x, W, b):
    return x @ W + b


LINEAR_AT_IMPORT = jax.vmap(linear, in_axes=(0, None, None))


def test_record_calls_sees_one_batched_call_through_vmap_even_via_an_early_reference():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = vmapped.record_calls(linear, lambda: LINEAR_AT_IMPORT(xs, W, b))
    assert len(calls) == 1 and calls[0].batched
    assert calls[0].arg_shapes[0] == (3,)


def test_record_calls_sees_a_python_loop_as_one_unbatched_call_per_example():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = vmapped.record_calls(linear, lambda: jnp.stack([linear(x, W, b) for x in xs]))
    assert len(calls) == 4 and not any(c.batched for c in calls)


def test_record_calls_sees_lax_map_as_one_traced_unbatched_call():
    xs, W, b = jnp.ones((4, 3)), jnp.ones((3, 2)), jnp.zeros(2)
    _, calls = vmapped.record_calls(linear, lambda: jax.lax.map(lambda x: linear(x, W, b), xs))
    assert len(calls) == 1 and calls[0].traced and not calls[0].batched


def test_jaxpr_size_constant_for_vmap_and_growing_for_a_loop():
    W, b = jnp.ones((3, 2)), jnp.zeros(2)
    by_size = {n: (jnp.ones((n, 3)), W, b) for n in (2, 5)}
    structure.assert_jaxpr_size_constant(LINEAR_AT_IMPORT, by_size)

    def looped(xs, W, b):
        return jnp.stack([linear(x, W, b) for x in xs])

    with pytest.raises(CheckFailure, match=r"grows with the size of the batch \(2: \d+ equations, 5: \d+ equations\)"):
        structure.assert_jaxpr_size_constant(looped, by_size)


def test_jit_once_reuses_one_wrapper_per_function():
    def f(x):
        return x + 1

    assert structure.jit_once(f) is structure.jit_once(f)
    assert structure.jit_once(f) is not structure.jit_once(f, static_argnums=(0,))


def _per_example_args(batch):
    return ({"W": jnp.ones((3, 2)), "b": jnp.zeros(2)}, jnp.ones((batch, 3)), jnp.ones((batch, 2)))


def _loss(p, x, y):
    return 0.5 * jnp.sum((x @ p["W"] + p["b"] - y) ** 2)


def test_work_linear_in_batch_accepts_vmap_of_grad_and_rejects_the_jacobian_of_the_batch():
    vmapped = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))
    jacobian = lambda p, xs, ys: jax.jacrev(lambda q: jax.vmap(_loss, in_axes=(None, 0, 0))(q, xs, ys))(p)  # noqa: E731
    small, large = (8, _per_example_args(8)), (32, _per_example_args(32))
    structure.assert_work_linear_in_batch(vmapped, small, large, contract="vmap of grad")
    with pytest.raises(CheckFailure, match=r"grows quadratically with the batch(.*\n)*.*largest one is \(32, 32"):
        structure.assert_work_linear_in_batch(jacobian, small, large, contract="vmap of grad")


def test_runs_the_states_model_reports_flax_shape_errors():
    import flax.linen as nn

    params = nn.Dense(5).init(jax.random.PRNGKey(0), jnp.ones((1, 2)))
    with pytest.raises(CheckFailure, match=r"given a state of Dense\(5\), step ran another model: Flax said"):
        with structure.runs_the_states_model("step", "Dense(5)"):
            nn.Dense(8).apply(params, jnp.ones((1, 2)))
