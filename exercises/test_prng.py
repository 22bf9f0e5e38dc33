"""Checks for module 2, ``prng``: run ``pytest exercises/test_prng.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``.

- Keys come in both kinds: typed (``jax.random.key``) and legacy
  (``jax.random.PRNGKey``). Values are compared with the reference under
  ``jax.jit`` (static arguments static), so a new key costs no compilation:
  the split pattern is part of each function's contract, so keys must match
  bit for bit and floats up to float32 rounding.
- Key reuse is decided from the program the function compiles to
  (``keyuse.assert_program_uses_each_key_once``): on the check's keys it must
  give the reference's keys and draws, which a key used twice does not. When
  it does not, the function runs under ``jax.debug_key_reuse(True)`` without
  jit for the message, which names the line (``random_walk`` op by op,
  ``structure.eagerly``, so a key reused inside a loop body is reported at
  that line too).
- Hidden randomness: a different key must change the result, and re-seeding
  NumPy's, Python's or torch's global generator must not.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings

from autograder.checks import keys, keyuse, programs, purity, structure, values
from autograder.checks.strategies import (
    DROPOUT_SHAPES,
    MLP_SIZES,
    WALK_LENGTHS,
    dropout_rates,
    float32_arrays,
    mlp_sizes,
    walk_lengths,
)
from autograder.checks.strategies import keys as any_keys

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")  # the grader runs and inspects the program the function compiles to
# Decided on the trusted side from recorded values (issue 42): the student's process records what the function
# (jitted, or a form of it) returned, and the trusted side reads the recorded values alike. Key reuse is decided
# from the program (keyuse); module state is neither a value nor in the program: those checks stay observed.
values_decided = pytest.mark.decided("values")

# No zeros, so a dropped entry is visible; a shape of DROPOUT_SHAPES, so it compiles nothing new.
DROPOUT_INPUT = jnp.linspace(1.0, 2.0, 6, dtype=jnp.float32).reshape(2, 3)
LEGACY_KEY_0 = keys.make_key(0, "legacy")


def jitted(fn, *static_argnums):
    return structure.jit_once(fn, static_argnums)


def assert_randomness_comes_from_the_key(fn, make_args, static_argnums, eagerly=False):
    """Different keys give different results (both kinds); the same key gives the same result again with the global
    generators seeded differently, and the arguments are left as they were: decided from recorded values.

    The purity check calls ``fn`` twice without jit (with ``eagerly``, op by op: ``structure.eagerly``), since under
    jit hidden state is read only once.
    """
    for kind in keys.KINDS:
        keys.assert_key_changes_result(jitted(fn, *static_argnums), make_args, kind)
    first = ("eagerly", structure.eagerly) if eagerly else None
    purity.assert_pure_by_values(fn, *make_args(keys.make_key(3, "typed")), first=first)


def assert_keeps_no_module_state(fn, make_args, module, eager=None):
    """Calling ``fn`` (``eager``, by default ``fn`` itself) changes no module-level variable: observed."""
    purity.assert_module_state_unchanged(module, eager or fn, *make_args(keys.make_key(3, "typed")))


# The key-use checks lower the function once per example and run its program on the example's key.
key_use_examples = settings(max_examples=3)


# two_normals ----------------------------------------------------------------


@correctness
@given(key=any_keys())
@example(key=LEGACY_KEY_0)
def test_two_normals_matches_reference(student, reference, key):
    values.assert_matches_reference(jitted(student.two_normals), jitted(reference.two_normals), key)


@values_decided
@given(key=any_keys())
def test_two_normals_returns_a_key_of_the_kind_passed_in(student, key):
    new_key, _, _ = student.two_normals(key)
    keys.assert_key_kind_preserved(new_key, key)


@program
@key_use_examples
@given(key=any_keys())
def test_two_normals_uses_each_key_once(student, reference, key):
    keyuse.assert_program_uses_each_key_once(student.two_normals, reference.two_normals, key)


@program
@given(key=any_keys())
def test_two_normals_works_under_jit(student, reference, key):
    programs.assert_compiles_to_the_reference(student.two_normals, key, expected=reference.two_normals(key))


@values_decided
def test_two_normals_randomness_comes_from_the_key(student):
    assert_randomness_comes_from_the_key(student.two_normals, lambda key: (key,), ())


@pytest.mark.decided("source", "module_state")
def test_two_normals_keeps_no_module_state(student):
    assert_keeps_no_module_state(student.two_normals, lambda key: (key,), student)


# init_mlp -------------------------------------------------------------------


@correctness
@given(key=any_keys(), sizes=mlp_sizes())
def test_init_mlp_matches_reference(student, reference, key, sizes):
    values.assert_matches_reference(jitted(student.init_mlp, 1), jitted(reference.init_mlp, 1), key, sizes)


@program
@pytest.mark.parametrize("sizes", MLP_SIZES)
@key_use_examples
@given(key=any_keys())
def test_init_mlp_uses_each_key_once(student, reference, sizes, key):
    keyuse.assert_program_uses_each_key_once(student.init_mlp, reference.init_mlp, key, sizes, static_argnums=(1,))


@program
@given(key=any_keys(), sizes=mlp_sizes())
def test_init_mlp_works_under_jit_with_static_sizes(student, reference, key, sizes):
    programs.assert_compiles_to_the_reference(
        student.init_mlp, key, sizes, static_argnums=(1,), expected=jitted(reference.init_mlp, 1)(key, sizes)
    )


@values_decided
def test_init_mlp_randomness_comes_from_the_key(student):
    assert_randomness_comes_from_the_key(student.init_mlp, lambda key: (key, (3, 4, 2)), (1,))


@pytest.mark.decided("source", "module_state")
def test_init_mlp_keeps_no_module_state(student):
    assert_keeps_no_module_state(student.init_mlp, lambda key: (key, (3, 4, 2)), student)


# dropout --------------------------------------------------------------------


@correctness
@given(key=any_keys(), x=float32_arrays(DROPOUT_SHAPES), rate=dropout_rates())
def test_dropout_matches_reference(student, reference, key, x, rate):
    values.assert_matches_reference(jitted(student.dropout, 2), jitted(reference.dropout, 2), key, jnp.asarray(x), rate)


@values_decided
@given(key=any_keys(), rate=dropout_rates((0.3,)))
def test_dropout_rescales_kept_entries(student, key, rate):
    """Inverted dropout: every entry is either dropped (0) or kept and divided by 1 - rate."""
    values.assert_entries_among(
        jitted(student.dropout, 2)(key, DROPOUT_INPUT, rate),
        {"0": 0.0, "x / (1 - rate)": np.asarray(DROPOUT_INPUT) / np.float32(1 - rate)},
        check=f"dropout(key, x, rate={rate}) keeps an entry as x / (1 - rate) or sets it to 0",
        advice="kept entries are scaled up by 1 / (1 - rate) so that the expected value of every entry stays x "
        "(inverted dropout); then nothing needs rescaling when dropout is switched off at evaluation time",
    )


@values_decided
@given(key=any_keys(), x=float32_arrays(DROPOUT_SHAPES))
def test_dropout_with_rate_zero_keeps_everything(student, key, x):
    got = student.dropout(key, jnp.asarray(x), 0.0)
    values.assert_trees_close(got, x, rtol=0, atol=0, check="dropout(key, x, 0.0) returns x unchanged")


@program
@pytest.mark.parametrize("rate", [0.0, 0.5])
@key_use_examples
@given(key=any_keys())
def test_dropout_uses_each_key_once(student, reference, rate, key):
    keyuse.assert_program_uses_each_key_once(
        student.dropout, reference.dropout, key, DROPOUT_INPUT, rate, static_argnums=(2,)
    )


@program
@given(key=any_keys(), x=float32_arrays(DROPOUT_SHAPES), rate=dropout_rates())
def test_dropout_works_under_jit_with_static_rate(student, reference, key, x, rate):
    args = (key, jnp.asarray(x), rate)
    programs.assert_compiles_to_the_reference(
        student.dropout, *args, static_argnums=(2,), expected=jitted(reference.dropout, 2)(*args)
    )


@values_decided
def test_dropout_randomness_comes_from_the_key(student):
    assert_randomness_comes_from_the_key(student.dropout, lambda key: (key, DROPOUT_INPUT, 0.5), (2,))


@pytest.mark.decided("source", "module_state")
def test_dropout_keeps_no_module_state(student):
    assert_keeps_no_module_state(student.dropout, lambda key: (key, DROPOUT_INPUT, 0.5), student)


# random_walk ----------------------------------------------------------------


@correctness
@given(key=any_keys(), n_steps=walk_lengths())
def test_random_walk_matches_reference(student, reference, key, n_steps):
    values.assert_matches_reference(jitted(student.random_walk, 1), jitted(reference.random_walk, 1), key, n_steps)


@program
@pytest.mark.parametrize("n_steps", WALK_LENGTHS)
@key_use_examples
@given(key=any_keys())
def test_random_walk_uses_each_key_once(student, reference, n_steps, key):
    keyuse.assert_program_uses_each_key_once(
        student.random_walk,
        reference.random_walk,
        key,
        n_steps,
        static_argnums=(1,),
        eager=structure.eagerly(student.random_walk),
    )


@program
@given(key=any_keys(), n_steps=walk_lengths())
def test_random_walk_works_under_jit_with_static_n_steps(student, reference, key, n_steps):
    programs.assert_compiles_to_the_reference(
        student.random_walk,
        key,
        n_steps,
        static_argnums=(1,),
        expected=jitted(reference.random_walk, 1)(key, n_steps),
        eager=structure.eagerly(student.random_walk),
    )


@values_decided
def test_random_walk_randomness_comes_from_the_key(student):
    # A lax.scan body made anew on every eager call compiles every time: run its loops as Python loops.
    assert_randomness_comes_from_the_key(student.random_walk, lambda key: (key, 5), (1,), eagerly=True)


@pytest.mark.decided("source", "module_state")
def test_random_walk_keeps_no_module_state(student):
    assert_keeps_no_module_state(
        student.random_walk, lambda key: (key, 5), student, eager=structure.eagerly(student.random_walk)
    )
