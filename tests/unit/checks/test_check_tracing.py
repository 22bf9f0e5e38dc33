"""autograder.checks.tracing: retracing code is caught and explained; code that is merely warm-up-heavy is not."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state

from autograder.checks.loops import assert_chained_steps_do_not_retrace, assert_no_retrace_when_fed_back
from autograder.checks.tracing import TraceCounter, assert_is_jitted, assert_no_retrace
from autograder.core.failures import CheckFailure


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

    with pytest.raises(
        CheckFailure, match=r"apply traced 3 and compiled 3 more time\(s\) in 3 calls(.|\n)*JAX explains the cache miss"
    ):
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


@functools.partial(jax.jit, static_argnums=1)
def _module_helper(x, count):
    return x * count


def reads_its_count_on_the_host(x, step_count):
    """As a student's module writes it: a plain function calling a module-level jitted helper with int(...)."""
    return _module_helper(x, int(step_count))


def test_a_retrace_is_caught_even_when_earlier_checks_compiled_the_same_values():
    """The check starts cold (the module's jitted functions' caches are cleared): calls on values an earlier
    check already compiled still show every retrace."""

    def make(i):
        return (jnp.ones(3), np.int32(i))

    for i in range(6):  # an earlier check ran every value this one will
        reads_its_count_on_the_host(*make(i))
    with pytest.raises(CheckFailure, match=r"reads_its_count_on_the_host traced 3"):
        assert_no_retrace(reads_its_count_on_the_host, make)


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


# assert_no_retrace_when_fed_back: outputs fed back, as in a training loop ------------


@functools.partial(jax.pmap, axis_name="d", in_axes=(0, None))
def _pmapped_scale(x, lr):
    return jax.lax.pmean(x, "d") * lr


def test_a_loop_passes_when_fresh_inputs_and_fed_back_outputs_each_trace_once():
    """A pmap traces once for a fresh NumPy input and once for its own committed output; two warm-up calls
    cover both, and a new traced learning rate on every call traces nothing."""
    n = jax.local_device_count()
    first = (np.ones((n, 3), np.float32), 0.5)
    assert_no_retrace_when_fed_back(_pmapped_scale, first, lambda out, i: (out, 0.5 + i))


def test_a_loop_with_a_static_learning_rate_is_caught_with_the_value():
    scale = jax.pmap(lambda x, lr: x * lr, in_axes=(0, None), static_broadcasted_argnums=1)
    n = jax.local_device_count()
    with pytest.raises(CheckFailure, match=r"traced 3 and compiled 3 more time\(s\) in 3 calls"):
        assert_no_retrace_when_fed_back(scale, (np.ones((n, 3), np.float32), 0.5), lambda out, i: (out, 0.5 + i))


def test_a_loop_feeds_each_result_into_the_next_call():
    seen = []

    def f(x):
        seen.append(float(x))
        return x + 1

    assert_no_retrace_when_fed_back(f, (0.0,), lambda out, i: (out * 10,), warmup=2, calls=2)
    assert seen[:4] == [0.0, 10.0, 110.0, 1110.0]


# assert_chained_steps_do_not_retrace: a (state, batch) step fed the state it returned ---------


def _sgd(state, batch):
    grads = jax.grad(lambda p: jnp.sum((p["w"] * batch) ** 2))(state.params)
    return state.apply_gradients(grads=grads), jnp.sum(batch)


class StaticStepState(train_state.TrainState):
    step: int = train_state.struct.field(pytree_node=False)


def _with_static_step(jitted):
    def step(state, batch):
        new, loss = jitted(state, batch)
        return StaticStepState(
            step=int(new.step), apply_fn=new.apply_fn, params=new.params, tx=new.tx, opt_state=new.opt_state
        ), loss

    return step


@pytest.fixture
def start():
    return train_state.TrainState.create(apply_fn=jnp.tanh, params={"w": jnp.ones(3)}, tx=optax.sgd(0.1))


BATCHES = [jnp.full(3, float(i)) for i in range(4)]


def test_a_chained_canonical_loop_passes(start):
    assert_chained_steps_do_not_retrace(jax.jit(_sgd), start, BATCHES)


def test_a_chained_evaluation_loop_passes(start):
    train = jax.jit(_sgd)
    evaluate = jax.jit(lambda state, batch: jnp.sum(state.params["w"] * batch))
    assert_chained_steps_do_not_retrace(
        evaluate, start, BATCHES, next_state=lambda state, result: train(state, BATCHES[0])[0]
    )


@pytest.mark.parametrize(
    "make_step, pattern",
    [
        # a new apply_fn object in every returned state: each step's input is a new static structure
        (
            lambda: jax.jit(
                lambda s, b: (lambda n, loss: (n.replace(apply_fn=functools.partial(s.apply_fn)), loss))(*_sgd(s, b))
            ),
            r"state.apply_fn is a static field \(part of the compiled signature\) and the returned state holds a new partial object",
        ),
        # a new optimizer object per step
        (
            lambda: jax.jit(lambda s, b: (lambda n, loss: (n.replace(tx=optax.sgd(0.1)), loss))(*_sgd(s, b))),
            r"state.tx is a static field",
        ),
        # the step counter made static (a Python int field): every step number is a new signature
        (
            lambda: _with_static_step(jax.jit(_sgd)),
            r"state is a StaticStepState, it was a TrainState|state.step is a static field",
        ),
    ],
    ids=["new-apply_fn", "new-tx", "static-step"],
)
def test_a_step_whose_returned_state_retraces_the_next_call_is_caught(start, make_step, pattern):
    step = make_step()
    assert_no_retrace(step, lambda i: (start.replace(step=jnp.asarray(i)), BATCHES[i % 4]))  # fresh inputs: no retrace
    with pytest.raises(
        CheckFailure, match=r"traced \d+ and compiled \d+ more time\(s\) in a loop of \d+ chained steps"
    ) as info:
        assert_chained_steps_do_not_retrace(step, start, BATCHES, name="train_step")
    assert __import__("re").search(pattern, str(info.value)), str(info.value)
