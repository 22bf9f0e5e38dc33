"""The at_updates checks judge right: wrong answers fail with the right message, other correct answers pass."""

import pytest
from support import assert_accepted, assert_rejected, gallery, grade, with_function

MODULE = "at_updates"


CORRECT_VARIANTS = {
    "set_diagonal": """
        def set_diagonal(x, value):
            eye = jnp.eye(x.shape[0], dtype=bool)
            return jnp.where(eye, jnp.asarray(value, x.dtype), x)
    """,
    "scatter_add": """
        def scatter_add(x, indices, updates):
            one_hot = jax.nn.one_hot(indices, x.shape[0], dtype=x.dtype)
            return x + updates @ one_hot
    """,
    "clamp_at": """
        def clamp_at(x, indices, lo, hi):
            selected = jnp.zeros(x.shape, bool).at[indices].set(True)
            return jnp.where(selected, jnp.clip(x, lo, hi), x)
    """,
    "replace_negatives": """
        def replace_negatives(x, value):
            return jax.lax.select(x < 0, jnp.full_like(x, value), x)
    """,
}


@pytest.mark.parametrize("function", sorted(CORRECT_VARIANTS))
def test_correct_variant_written_differently_passes(pytester, function):
    source = "import jax\n" + with_function(MODULE, CORRECT_VARIANTS[function])
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


WRONG = [
    # (function, replacement, regex the message must match)
    (
        "sets-only-the-first-entry",
        "set_diagonal",
        """
        def set_diagonal(x, value):
            return x.at[0, 0].set(value)
     """,
        r"set_diagonal: result differs from the reference at \d+ of \d+ entries",
    ),
    (
        "casts-to-int32",
        "set_diagonal",
        """
        def set_diagonal(x, value):
            return x.at[jnp.arange(x.shape[0]), jnp.arange(x.shape[0])].set(value).astype(jnp.float64 if False else jnp.int32)
     """,
        r"result has dtype int32, expected float32",
    ),
    (
        "set-instead-of-add-drops-repeats",
        "scatter_add",
        """
        def scatter_add(x, indices, updates):
            return x.at[indices].set(x[indices] + updates)
     """,
        r"scatter_add: result differs from the reference.*\n(.*\n)*  smallest failing input:",
    ),
    (
        "clamps-every-entry",
        "clamp_at",
        """
        def clamp_at(x, indices, lo, hi):
            return jnp.clip(x, lo, hi)
     """,
        r"clamp_at: result differs from the reference",
    ),
    (
        "boolean-indexing",
        "replace_negatives",
        """
        def replace_negatives(x, value):
            return x.at[x < 0].set(value)
     """,
        r"cannot be compiled with jax.jit: it uses boolean indexing",
    ),
    (
        "converts-to-numpy",
        "replace_negatives",
        """
        import numpy as onp
        def replace_negatives(x, value):
            out = onp.array(x)
            out[out < 0] = value
            return out
     """,
        r"cannot be compiled with jax.jit: it converts a traced array to NumPy",
    ),
    (
        "appends-to-a-module-list",
        "replace_negatives",
        """
        CALLS = []
        def replace_negatives(x, value):
            CALLS.append(1)
            return jnp.where(x < 0, value, x)
     """,
        r"change[sd] the contents of the module-level variable 'CALLS'",
    ),
    (
        "keeps-inputs-in-a-module-list",
        "set_diagonal",
        """
        _seen = []
        def set_diagonal(x, value):
            n = x.shape[0]
            _seen.append(x)
            return x.at[jnp.arange(n), jnp.arange(n)].set(value)
     """,
        r"module-level (variable )?'_seen'",
    ),
    (
        "gives-other-values-under-jit",
        "clamp_at",
        """
        def clamp_at(x, indices, lo, hi):
            clamped = x.at[indices].set(jnp.clip(x[indices], lo, hi))
            return clamped + 1.0 if type(x).__name__.endswith("Tracer") else clamped
     """,
        r"jax\.jit\(clamp_at\) gives what clamp_at gives without jit",
    ),
    (
        "adds-numpy-global-noise",
        "scatter_add",
        """
        import numpy as onp
        def scatter_add(x, indices, updates):
            return x.at[indices].add(updates) + onp.random.uniform(0, 1e-3)
     """,
        r"scatter_add",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern", gallery(WRONG))
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern):
    results = grade(pytester, MODULE, with_function(MODULE, replacement), only=function)
    assert_rejected(results[function], pattern)
