"""A grading process of a module judged on the trusted side only records the student's answers: a check of a program
(``programs.assert_compiles_to_the_reference``, ``retraces.assert_one_program``) records the program (and the call
without jit) there, and leaves running and comparing them to the trusted side, which decides it (its verdict, failure
message included, is the check's). Anywhere else (the student's own loop, a process that holds the reference) the check runs and compares
the program itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import keyuse, marked, programs, retraces, train_steps, vmap_program
from autograder.core.failures import CheckFailure
from autograder.core.oracle import decided_elsewhere
from autograder.grading import transcript
from autograder.grading.untrusted.recorder import recording

X = np.array([-1.0, 2.0, -3.0], np.float32)


class Reporter:
    """What the recorder reads and writes of a grading process's reporter."""

    statics = None
    size = 0


def differs_under_jit(x):
    """Gives x + 1 when traced and x without jit: its program is not what the function computes."""
    return x + (1.0 if isinstance(x, jax.core.Tracer) else 0.0)


def replace_negatives(x):
    return jnp.where(x < 0, 0.0, x)


def test_a_recording_for_the_trusted_side_says_so_and_only_then():
    assert decided_elsewhere(recording(Reporter(), {}, "f", replace_negatives, answers={}))
    assert not decided_elsewhere(recording(Reporter(), {}, "f", replace_negatives))
    assert not decided_elsewhere(replace_negatives)


def test_the_program_and_the_call_without_jit_are_recorded_and_not_judged_here():
    reporter, calls = Reporter(), {}
    recorded = recording(reporter, calls, "differs_under_jit", differs_under_jit, answers={})
    program = programs.assert_compiles_to_the_reference(recorded, jnp.asarray(X), expected=X)
    # the trusted side finds both: the program's bytes under the transform's label, the call without jit under the
    # function's own (the same digest its replay asks for)
    labels = {transcript.digest("differs_under_jit", (jnp.asarray(X),), {}, reporter.statics)}
    assert labels <= set(calls)
    assert any(key not in labels for key in calls), "the program was not recorded"
    np.testing.assert_array_equal(program(jnp.asarray(X)), X + 1.0)  # what the trusted side runs, and fails


def test_where_nothing_is_recorded_for_the_trusted_side_the_check_judges_the_program_itself():
    recorded = recording(Reporter(), {}, "differs_under_jit", differs_under_jit)
    for fn in (differs_under_jit, recorded):
        with pytest.raises(CheckFailure, match="gives what differs_under_jit gives without jit"):
            programs.assert_compiles_to_the_reference(fn, jnp.asarray(X), expected=X)


def scaled(x, scale):
    return x * scale


def test_one_program_of_a_loop_is_recorded_and_not_run_where_the_trusted_side_decides():
    """``scale`` made static: the first call's program bakes it in, and gives the wrong values for the second."""
    calls = [((jnp.asarray(X), 2.0), {}), ((jnp.asarray(X), 3.0), {})]
    expected = [X * 2.0, X * 3.0]
    recorded = recording(Reporter(), {}, "scaled", scaled, answers={})
    program = retraces.assert_one_program(recorded, calls, expected, static_argnums=(1,))
    np.testing.assert_array_equal(program(jnp.asarray(X)), X * 2.0)  # what the trusted side runs on call 2, and fails
    with pytest.raises(CheckFailure, match="does not give the reference's values for call 2"):
        retraces.assert_one_program(scaled, calls, expected, static_argnums=(1,))


# The other checks that run a program the student's process recorded, each given a function whose program has the
# property the check reads from its text but other values than ``expected``: it fails where the process judges the
# program itself, and is recorded and returned where the trusted side decides it.


def two_normals(key):
    key, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def doubled_normals(key):
    key, k1, k2 = jax.random.split(key, 3)
    return key, 2 * jax.random.normal(k1), jax.random.normal(k2)


def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def doubled_hvp(f, x, v):
    return 2 * hvp(f, x, v)


def tanh_of_running_sum(x):
    return jnp.sum(jnp.tanh(jnp.cumsum(x)) ** 2)


def linear(x, W, b):
    return x @ W + b


def doubled_batched_linear(xs, W, b):
    return 2 * jax.vmap(linear, in_axes=(0, None, None))(xs, W, b)


@jax.jit
def doubled_step(state, batch):
    return state + 2 * jnp.sum(batch)


XS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
W = np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(3, 2)
B = np.array([0.25, -1.0], np.float32)
V = np.linspace(-1.0, 1.0, 5, dtype=np.float32)


def keys_once(fn):
    return keyuse.assert_program_uses_each_key_once(fn, two_normals, jax.random.key(3))


def calls_once(fn):
    return marked.assert_program_calls_once(fn, hvp, tanh_of_running_sum, V, V, caller="hvp", advice="")


def one_vmap(fn):
    expected = jax.vmap(linear, in_axes=(0, None, None))(*vmap_program.marked_inputs(XS, W, B))
    return vmap_program.assert_program_is_one_vmap(fn, linear, XS, W, B, expected=expected, caller="b", names="xWb")


def jitted_step(fn):
    state, batch = jnp.float32(1.0), jnp.arange(3.0)
    return train_steps.assert_jitted_gives_the_reference(fn, state, batch, expected=state + jnp.sum(batch), name="s")


@pytest.mark.parametrize(
    "check, fn",
    [
        (keys_once, doubled_normals),
        (calls_once, doubled_hvp),
        (one_vmap, doubled_batched_linear),
        (jitted_step, doubled_step),
    ],
    ids=["keyuse", "marked", "vmap_program", "train_steps"],
)
def test_a_program_with_other_values_is_failed_here_or_recorded_for_the_trusted_side(check, fn):
    with pytest.raises(CheckFailure, match="fix the values first"):
        check(fn)
    assert isinstance(check(recording(Reporter(), {}, fn.__name__, fn, answers={})), programs.Program)


@jax.jit
def doubled_under_jit(x):
    return 2 * x


def test_a_program_of_the_students_own_jit_is_run_here_only_where_the_process_judges():
    """``programs.assert_gives`` (the "is jitted" and "does not grow" checks): the trusted side runs the recorded
    program on its own inputs; ``programs.gives``, whose results a check inspects further, always runs it."""
    x = jnp.asarray(X)
    recorded = recording(Reporter(), {}, "doubled_under_jit", doubled_under_jit, answers={})
    for fn in (doubled_under_jit, recording(Reporter(), {}, "doubled_under_jit", doubled_under_jit)):
        program = programs.program_of(fn, x, as_is=True, result_like=X)
        assert not program.decided_elsewhere
        with pytest.raises(CheckFailure, match="gives the reference's values"):
            programs.assert_gives(program, x, expected=X)
    program = programs.program_of(recorded, x, as_is=True, result_like=X)
    assert program.decided_elsewhere
    assert programs.assert_gives(program, x, expected=X) is None  # not run: the trusted side's verdict
    with pytest.raises(CheckFailure, match="gives the reference's values"):
        programs.gives(program, x, expected=X)
    np.testing.assert_array_equal(programs.gives(program, x, expected=2 * X), 2 * X)
