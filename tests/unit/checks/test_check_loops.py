"""loops.assert_no_retrace_in_loop: a chained loop of a jitted step, failing on any trace once warm."""

import functools

import jax
import jax.numpy as jnp
import pytest
from flax import struct

from autograder.checks import loops, tracing
from autograder.core.failures import CheckFailure


@struct.dataclass
class Counter:
    value: jax.Array
    tag: int = struct.field(pytree_node=False, default=0)


@jax.jit
def clean_step(state, x):
    return Counter(state.value + x, state.tag)


def step_with_new_tag():
    """A fresh step (its own jit cache) whose every output carries a new static field."""

    @jax.jit
    def step(state, x):
        return Counter(state.value + x, state.tag + 1)

    return step


def step_reading_the_counter_on_the_host():
    """A fresh step that passes int(state.value) as a static argument, as int(state.step) would be."""

    @functools.partial(jax.jit, static_argnums=2)
    def step_at(state, x, at):
        return Counter(state.value + x + 0 * at, state.tag)

    return lambda state, x: step_at(state, x, int(state.value))


def run(step):
    loops.assert_no_retrace_in_loop(
        step,
        Counter(jnp.zeros((), jnp.int32)),
        lambda i, state: (state, jnp.int32(i + 1)),
        lambda i, state, new: new,
        name="step",
    )


def test_a_clean_step_passes():
    run(clean_step)


@pytest.mark.parametrize(
    "make_step",
    [step_with_new_tag, step_reading_the_counter_on_the_host],
    ids=["new-static-field-in-the-output", "int-of-traced-state-as-static-argument"],
)
def test_a_step_that_retraces_in_the_loop_fails_and_says_when(make_step):
    with pytest.raises(
        CheckFailure, match=r"step traced again at call\(s\) 4, 5, 6, 7 of 7(.*\n)*.*JAX explains the cache miss"
    ):
        run(make_step())


def test_fresh_arguments_do_not_show_what_the_loop_shows():
    """The reason for the chained loop: on fresh same-shaped inputs a step whose output has a new static
    structure never retraces, so tracing.assert_no_retrace passes it."""
    step = step_with_new_tag()
    tracing.assert_no_retrace(step, lambda i: (Counter(jnp.zeros((), jnp.int32)), jnp.int32(i)), name="step")
    with pytest.raises(CheckFailure):
        run(step)


@functools.partial(jax.jit, static_argnums=2)
def _module_step_at(state, x, at):
    return Counter(state.value + x + 0 * at, state.tag)


def step_through_a_jitted_helper_of_its_module(state, x):
    """As a student's module writes it: a plain step calling a module-level jitted helper with int(state.value)."""
    return _module_step_at(state, x, int(state.value))


def test_a_retracing_step_fails_even_when_earlier_checks_already_ran_its_step_numbers():
    """The loop starts cold: the module's jitted functions' caches are cleared, so a loop over step numbers an
    earlier check already compiled (the same start state, the same batches) still shows every retrace."""
    for _ in range(2):  # the second loop runs exactly the step numbers the first one compiled
        with pytest.raises(CheckFailure, match=r"step traced again at call\(s\) 4, 5, 6, 7 of 7"):
            run(step_through_a_jitted_helper_of_its_module)
