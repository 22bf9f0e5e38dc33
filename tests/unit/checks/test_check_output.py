"""autograder.checks.output: stdout is captured with JAX's debug prints, which arrive from a host callback."""

import jax
import jax.numpy as jnp
import pytest

from autograder.checks import output
from autograder.core.failures import CheckFailure


@jax.jit
def logged(x):
    jax.debug.print("sum={s}", s=jnp.sum(x))
    return x * 2


@jax.jit
def printed_while_tracing(x):
    print("tracing")
    return x * 2


def test_debug_print_is_captured_on_every_call():
    for i in range(3):
        with output.captured_stdout() as out:
            jax.block_until_ready(logged(jnp.full(3, float(i))))
        assert out.lines == [f"sum={3.0 * i}"]


def test_a_python_print_under_jit_shows_only_while_tracing():
    with output.captured_stdout() as first:
        printed_while_tracing(jnp.ones(4))
    with output.captured_stdout() as warm:
        jax.block_until_ready(printed_while_tracing(jnp.zeros(4)))
    assert first.lines == ["tracing"] and warm.lines == []


def test_effects_pending_from_before_the_block_are_not_captured():
    logged(jnp.ones(5))  # not waited for
    with output.captured_stdout() as out:
        pass
    assert out.lines == []


def test_a_function_that_prints_without_bound_fails_with_what_it_kept_bounded():
    line = "x" * 1000 + "\n"
    with pytest.raises(CheckFailure, match=r"printed more than 1 MB within one check \(\d+ characters past it\)"):
        with output.captured_stdout() as out:
            for _ in range(3000):  # 3 MB
                print(line, end="")
    assert len(out.text) == output.LIMIT_CHARS


def test_printing_up_to_the_limit_is_kept_whole():
    with output.captured_stdout() as out:
        print("y" * (output.LIMIT_CHARS - 1))
    assert len(out.text) == output.LIMIT_CHARS
