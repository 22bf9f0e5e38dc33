"""autograder.checks.keys: key reuse is caught with the line that reused the key; proper splitting passes."""

import jax
import jax.numpy as jnp
import pytest

from autograder.checks import keys
from autograder.core.failures import CheckFailure


def two_draws_split_properly(key):
    key, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def two_draws_one_key(key):
    return jax.random.normal(key), jax.random.normal(key)


def parent_used_after_split(key):
    k1, k2 = jax.random.split(key)
    return jax.random.normal(k1) + jax.random.normal(key)


def hard_coded_key(key):
    return jax.random.normal(jax.random.PRNGKey(0))


def test_proper_splitting_passes_eagerly_and_under_jit():
    keys.assert_no_key_reuse(two_draws_split_properly, jax.random.key(0))
    keys.assert_no_key_reuse(jax.jit(two_draws_split_properly), jax.random.key(0))


@pytest.mark.parametrize("fn", [two_draws_one_key, parent_used_after_split])
def test_reuse_is_caught_with_the_offending_line(fn):
    with pytest.raises(
        CheckFailure,
        match=r"used the key `key` a second time, after it was already used by a draw or a split, at line \d+: .*jax\.random\.normal\(.*key\)(.|\n)*split",
    ):
        keys.assert_no_key_reuse(fn, jax.random.key(0))


def test_reuse_under_jit_is_caught_too():
    with pytest.raises(CheckFailure, match=r"a second time|already consumed"):
        keys.assert_no_key_reuse(jax.jit(two_draws_one_key), jax.random.key(0))


def test_legacy_keys_are_wrapped_as_typed_keys():
    legacy = jax.random.PRNGKey(3)
    typed = keys.as_typed(legacy)
    assert keys.kind_of(typed) == "typed" and keys.kind_of(legacy) == "legacy"
    assert jnp.array_equal(jax.random.key_data(typed), legacy)


def test_a_hard_coded_key_ignores_the_key_argument():
    keys.assert_key_changes_result(two_draws_split_properly, lambda k: (k,))
    with pytest.raises(CheckFailure, match=r"returned the same result for two different keys(.|\n)*hard-coded key"):
        keys.assert_key_changes_result(hard_coded_key, lambda k: (k,), kind="legacy")


def test_same_key_same_result():
    keys.assert_same_key_same_result(two_draws_split_properly, lambda k: (k,), kind="legacy")
    draws = iter(range(100))

    def stateful(key):
        return jax.random.normal(jax.random.fold_in(key, next(draws)))

    with pytest.raises(CheckFailure, match=r"returned different results for the same key"):
        keys.assert_same_key_same_result(stateful, lambda k: (k,))


def test_returned_key_kind_must_match_the_given_kind():
    keys.assert_key_kind_preserved(jax.random.split(jax.random.key(0))[0], jax.random.key(0))
    keys.assert_key_kind_preserved(jax.random.split(jax.random.PRNGKey(0))[0], jax.random.PRNGKey(0))
    with pytest.raises(CheckFailure, match=r"is a legacy key but a typed key was passed in"):
        keys.assert_key_kind_preserved(jax.random.key_data(jax.random.key(0)), jax.random.key(0))


def test_no_advice_line_ends_mid_sentence():
    """Issue 44, finding 9: a message shown by its first line (the report, summary.md) ended in a stray ``),``.
    No line of a check module's advice text ends in a comma: every line is a sentence of its own."""
    import ast
    from pathlib import Path

    import autograder.checks

    stray = []
    for path in sorted(Path(autograder.checks.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                lines = node.value.value.splitlines()
                stray += [f"{path.name}:{node.lineno}: {line}" for line in lines if line.rstrip().endswith(",")]
    assert not stray, stray
