"""The recorded oracle's plain data: what it stores comes back equal, and inputs are looked up by value."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state

from autograder.checks import purity
from autograder.core import plain_data, recorded
from autograder.core.recorded import Recording

from support import SOLUTIONS


def statics() -> plain_data.Statics:
    from autograder.core.submission import load_module

    training = load_module(SOLUTIONS / "training.py", "_course_reference_.training")
    return plain_data.Statics(lambda module, qualname: getattr(training, qualname))


def round_trip(value, hints=(), tmp_path=None, s=None):
    s = s or statics()
    rec = Recording("m")
    tree = plain_data.encode(value, rec.arrays, s, list(hints))
    if tmp_path is not None:
        rec.calls["x"] = ["f", tree]
        rec.save(tmp_path)
        rec = Recording.load(tmp_path, "m")
        tree = rec.calls["x"][1]
    return plain_data.decode(tree, rec.arrays, s)


VALUES = [
    (1, 2.5, "s", None, True, float("nan")),
    np.float32(3.5),
    np.zeros((), np.float32),
    np.arange(6, dtype=np.int32).reshape(2, 3),
    jnp.ones((2, 1)),
    {"b": [np.ones(2)], "a": (jnp.zeros(3), 1)},
    jax.random.key(3),
    jax.random.PRNGKey(4),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_values_come_back_equal_and_of_the_same_kind(value, tmp_path):
    back = round_trip(value, tmp_path=tmp_path)
    assert jax.tree.structure(back) == jax.tree.structure(value)
    for got, want in zip(jax.tree.leaves(back), jax.tree.leaves(value)):
        assert type(got) is type(want) or (isinstance(got, jax.Array) and isinstance(want, jax.Array))
        if plain_data.is_typed_key(want):
            assert plain_data.is_typed_key(got)
            got, want = jax.random.key_data(got), jax.random.key_data(want)
        assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def a_train_state(s):
    model = s.course_class("training", "SimpleClassifier")(3, 1)
    params = model.init(jax.random.PRNGKey(0), np.zeros((1, 2), np.float32))
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.3))


def test_a_train_state_comes_back_with_a_working_model_and_optimizer():
    s = statics()
    state = a_train_state(s)
    back = round_trip(state, hints=[0.3], s=s)
    assert type(back) is type(state)
    x = np.ones((4, 2), np.float32)
    np.testing.assert_array_equal(back.apply_fn(back.params, x), state.apply_fn(state.params, x))
    grads = jax.tree.map(jnp.ones_like, state.params)
    for got, want in zip(
        jax.tree.leaves(back.apply_gradients(grads=grads).params), jax.tree.leaves(state.apply_gradients(grads=grads).params)
    ):
        np.testing.assert_array_equal(got, want)
    assert round_trip(state, hints=[0.3], s=s).tx is back.tx  # one optimizer object per recipe: jit compiles once


def test_an_optimizer_that_is_not_described_cannot_be_recorded():
    s = statics()
    state = a_train_state(s).replace(tx=optax.sgd(0.3, momentum=0.9))
    with pytest.raises(plain_data.Unencodable, match="static field tx"):
        plain_data.encode(state, [], s, [0.3])


def test_digests_compare_by_value_and_kind():
    s = statics()
    x = np.arange(3, dtype=np.float32)
    assert plain_data.digest("f", (x, 1.0), {}, s) == plain_data.digest("f", (x.copy(), 1.0), {}, s)
    assert plain_data.digest("f", (x, 1.0), {}, s) != plain_data.digest("f", (jnp.asarray(x), 1.0), {}, s)
    assert plain_data.digest("f", (x, 1.0), {}, s) != plain_data.digest("f", (x, 1), {}, s)
    assert plain_data.digest("f", (x,), {}, s) != plain_data.digest("f", (x.reshape(3, 1),), {}, s)
    state = a_train_state(s)
    plain_data.encode(state, [], s, [0.3])  # recorded once: its tx has a recipe
    assert plain_data.digest("f", (state,), {}, s) == plain_data.digest("f", (purity.fresh_copy(state),), {}, s)


def test_an_unrecorded_input_is_skipped_not_judged():
    with pytest.raises(pytest.skip.Exception, match="not judged"):
        recorded.not_recorded("reference.f on this input")


def test_nothing_is_pickled(tmp_path):
    round_trip({"a": np.ones(3), "k": jax.random.key(1)}, tmp_path=tmp_path)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        assert all(npz[name].dtype != object for name in npz.files)
