"""The plain-data format that carries a student's results to the trusted verifier."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.grading import transcript


def roundtrip(value):
    return transcript.decode(json.loads(json.dumps(transcript.encode(value))))


def test_plain_pytrees_survive_with_their_kinds():
    value = (jnp.arange(3.0), np.ones((2, 2), np.int32), {"a": np.float32(1.5), 2: [True, None, "s", 1.0]})
    got = roundtrip(value)
    assert type(got[0]) is type(value[0]) and got[0].dtype == jnp.float32
    assert type(got[1]) is np.ndarray and got[1].dtype == np.int32 and got[1].shape == (2, 2)
    assert got[2] == {"a": np.float32(1.5), 2: [True, None, "s", 1.0]} and type(got[2]["a"]) is np.float32


def test_typed_keys_survive():
    keys = jax.random.split(jax.random.key(3), 2)
    got = roundtrip(keys)
    assert got.dtype == keys.dtype
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(keys))


class AlwaysEqual(np.ndarray):
    def __eq__(self, other):
        return True


@pytest.mark.parametrize("value", [AlwaysEqual((2,)), object(), np.array([object()]), [lambda: 1]])
def test_anything_else_is_opaque_and_never_executed(value):
    encoded = transcript.encode(value)
    assert transcript.has_opaque(encoded)
    assert transcript.digest("f", (value,), {}) is None


def test_digests_tell_inputs_apart():
    d = transcript.digest
    assert d("f", (jnp.zeros(2),), {}) == d("f", (jnp.zeros(2),), {})
    assert d("f", (jnp.zeros(2),), {}) != d("f", (np.zeros(2, np.float32),), {})
    assert d("f", (jnp.zeros(2),), {}) != d("f", (jnp.zeros(3),), {})
    assert d("f", (1.0,), {}) != d("f", (1,), {}) != d("g", (1,), {})


@pytest.mark.parametrize("junk", [{"t": "pickle", "v": "x"}, {"t": "np", "dtype": "O", "shape": [1], "b": ""}, [1], {"t": "int", "v": "1"}])
def test_malformed_transcripts_are_rejected(junk):
    with pytest.raises((ValueError, KeyError, TypeError)):
        transcript.decode(junk)
