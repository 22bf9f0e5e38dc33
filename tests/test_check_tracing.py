"""autograder.checks.tracing: retracing code is caught and explained; code that is merely warm-up-heavy is not."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state

from autograder.core.failures import CheckFailure
from autograder.checks.tracing import TraceCounter, assert_is_jitted, assert_no_retrace, assert_no_retrace_in_loop


def vectors(i):
    return (jnp.full((3,), float(i)),)


def test_trace_counter_counts_each_trace_wherever_the_jit_is():
    @jax.jit
    def f(x):
        return x * 2

    two, five = jnp.ones(2), jnp.ones(5)
    with TraceCounter() as counter:
        f(two)
        f(two)
        f(five)
        jax.jit(lambda x: x + 1)(two)
    assert counter.traces == 3
    assert counter.compiles == 3


def test_a_jitted_function_that_is_warm_passes():
    assert_no_retrace(jax.jit(lambda x: jnp.sin(x) * 2), vectors)


def test_the_canonical_train_state_loop_passes_although_it_has_two_cache_entries():
    state = train_state.TrainState.create(apply_fn=None, params={"w": jnp.ones(3)}, tx=optax.sgd(0.1))

    @jax.jit
    def step(state, x):
        grads = jax.grad(lambda p: jnp.sum((p["w"] * x) ** 2))(state.params)
        return state.apply_gradients(grads=grads)

    states = [state]

    def next_args(i):
        return (states[-1], jnp.full((3,), float(i)))

    def run(state, x):
        new = step(state, x)
        states.append(new)
        return new

    run.__name__ = "step"
    assert_no_retrace(run, next_args)
    assert step._cache_size() == 2  # step starts as a Python int: a second entry, not a retrace


def test_a_jit_created_on_every_call_is_caught_with_an_explanation():
    def apply(x):
        return jax.jit(lambda y: y * 2)(x)

    with pytest.raises(CheckFailure, match=r"apply traced 3 and compiled 3 more time\(s\) in 3 calls(.|\n)*JAX explains the cache miss"):
        assert_no_retrace(apply, vectors)


def test_a_python_number_as_static_argument_is_caught_and_explained():
    @functools.partial(jax.jit, static_argnums=1)
    def scale(x, lr):
        return x * lr

    def make(i):
        return (jnp.ones(3), 0.1 * (i + 1))

    with pytest.raises(CheckFailure, match=r"(?s)scale traced 3 .*Static\(val=0\.[0-9]+\)"):
        assert_no_retrace(scale, make)


def test_a_value_computed_on_the_host_from_traced_state_is_caught():
    @jax.jit
    def inner(x, lr):
        return x * lr

    def step(x, step_count):
        lr = 0.1 / (1 + int(step_count))  # host-side computation: a new Python float each step
        return jax.jit(inner.__wrapped__, static_argnums=1)(x, lr)

    def make(i):
        return (jnp.ones(3), np.int32(i))

    with pytest.raises(CheckFailure, match=r"step traced [1-9]"):
        assert_no_retrace(step, make)


def test_is_jitted_accepts_decorated_and_partial_jit_and_rejects_plain_functions():
    @jax.jit
    def a(x):
        return x

    b = functools.partial(jax.jit, static_argnums=1)(lambda x, n: x * n)
    assert_is_jitted(a)
    assert_is_jitted(b, "b")

    def train_step(state, batch):
        return state

    with pytest.raises(CheckFailure, match=r"train_step is not a jax.jit function(.|\n)*@jax.jit"):
        assert_is_jitted(train_step)


# assert_no_retrace_in_loop: outputs fed back, as in a training loop ------------

@functools.partial(jax.pmap, axis_name="d", in_axes=(0, None))
def _pmapped_scale(x, lr):
    return jax.lax.pmean(x, "d") * lr


def test_a_loop_passes_when_fresh_inputs_and_fed_back_outputs_each_trace_once():
    """A pmap traces once for a fresh NumPy input and once for its own committed output; two warm-up calls
    cover both, and a new traced learning rate on every call traces nothing."""
    n = jax.local_device_count()
    first = (np.ones((n, 3), np.float32), 0.5)
    assert_no_retrace_in_loop(_pmapped_scale, first, lambda out, i: (out, 0.5 + i))


def test_a_loop_with_a_static_learning_rate_is_caught_with_the_value():
    scale = jax.pmap(lambda x, lr: x * lr, in_axes=(0, None), static_broadcasted_argnums=1)
    n = jax.local_device_count()
    with pytest.raises(CheckFailure, match=r"traced 3 and compiled 3 more time\(s\) in 3 calls"):
        assert_no_retrace_in_loop(scale, (np.ones((n, 3), np.float32), 0.5), lambda out, i: (out, 0.5 + i))


def test_a_loop_feeds_each_result_into_the_next_call():
    seen = []

    def f(x):
        seen.append(float(x))
        return x + 1

    assert_no_retrace_in_loop(f, (0.0,), lambda out, i: (out * 10,), warmup=2, calls=2)
    assert seen[:4] == [0.0, 10.0, 110.0, 1110.0]
