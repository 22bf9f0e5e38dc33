"""``checks.retraces``: the program half of a retracing check (one program, exported with the varying arguments
traced, gives the reference's values on every call of the loop) fails a function that bakes a varying argument into
its program (a static argument, a value read on the host), and passes honest ones; the observed loop runs on the
student's real function, and where a stand-in answers for it (the trusted side), only its record is read."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import retraces
from autograder.core.failures import CheckFailure


def honest_update(params, learning_rate, x):
    return params - learning_rate * x * params


@functools.partial(jax.jit, static_argnums=1)
def static_rate(params, learning_rate, x):
    return params - learning_rate * x * params


@functools.partial(jax.jit, static_argnums=1)
def _scaled(params, scale, x):
    return params - scale * x * params


def rate_read_on_the_host(params, learning_rate, x):
    return _scaled(params, float(learning_rate), x)


_RATES = {}


def rate_remembered(params, learning_rate, x):
    """Keeps the first learning rate it saw (an earlier call's, a number) in a cache of its own: traced later, it
    bakes that number into the program."""
    rate = _RATES.setdefault("rate", learning_rate)
    return params - rate * x * params


def loop(n=4):
    params = np.linspace(1.0, 2.0, 3, dtype=np.float32)
    calls = [((params, 0.1 * (i + 1), np.float32(i + 1)), {}) for i in range(n)]
    return calls, [honest_update(*args) for args, _ in calls]


@pytest.mark.parametrize("fn", [honest_update, jax.jit(honest_update)], ids=["plain", "jitted"])
def test_one_program_for_every_call_passes(fn):
    program = retraces.assert_one_program(fn, *loop(), name="update")
    assert program.keeps(1)  # the learning rate is an input of the program


@pytest.mark.parametrize(
    "fn, said",
    [
        (static_rate, "cannot be compiled with the arguments that change between calls traced"),
        (rate_read_on_the_host, "cannot be compiled with jax.jit"),
        (rate_remembered, "does not give the reference's values for call 2"),
    ],
    ids=["static-argument", "host-read-passed-on-as-static", "first-value-baked-in"],
)
def test_a_varying_argument_baked_into_the_program_fails(fn, said):
    _RATES.clear()
    (first, _), *_ = loop()[0]
    fn(*first)  # an earlier check's call, without jit
    with pytest.raises(CheckFailure) as failure:
        retraces.assert_one_program(fn, *loop(), name="update")
    assert said in str(failure.value), str(failure.value)
    assert "update compiles to one program" in str(failure.value)


def test_a_static_argument_the_check_names_is_allowed():
    def pad(x, n):
        return jnp.concatenate([x, jnp.zeros((n,), x.dtype)])

    xs = [np.arange(3, dtype=np.float32) + i for i in range(3)]
    calls = [((x, 2), {}) for x in xs]
    retraces.assert_one_program(pad, calls, [pad(x, 2) for x in xs], static_argnums=(1,), name="pad")


class _Replay:
    """A stand-in for the student's function as the trusted side has it: it answers ``answer`` for any transform."""

    def __init__(self, answer):
        self.answer = answer
        self.labels = []

    def __call__(self, *args, **kwargs):
        raise AssertionError("a replay is not called by the observed loop")

    def jit_stand_in(self, static_argnums):
        raise AssertionError("not jitted")

    def transform_stand_in(self, label, transform):
        self.labels.append(label)
        return lambda: self.answer


def test_the_observed_loop_runs_on_the_real_function_and_is_read_back_where_a_stand_in_answers():
    ran = []
    retraces.observed(honest_update, "fresh", ran.append)
    assert ran == [honest_update]  # the student's own run: the loop itself
    replay = _Replay(np.asarray(retraces.RAN))
    retraces.observed(replay, "fresh", ran.append, name="update")
    assert ran == [honest_update] and replay.labels == ["retraces|fresh"]  # not run again: its record read
    for forged in (np.asarray(0, np.int8), np.asarray([1], np.int8), "ran", None):
        with pytest.raises(CheckFailure, match="did not report that the loop of update's calls ran to the end"):
            retraces.observed(_Replay(forged), "fresh", ran.append, name="update")


def test_the_observed_failure_is_the_loops_own():
    def failing(fn):
        raise CheckFailure("update does not trace again", "traced 3 more time(s)", "JAX explains the cache miss")

    with pytest.raises(CheckFailure, match="traced 3 more time"):
        retraces.observed(honest_update, "fresh", failing)
