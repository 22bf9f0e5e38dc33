"""The recorded oracle's plain data: what it stores comes back equal, and inputs are looked up by value."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state
from support import SOLUTIONS

from autograder.checks import purity
from autograder.recording import plain_data, recorded
from autograder.recording.recorded import Recording


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
        jax.tree.leaves(back.apply_gradients(grads=grads).params),
        jax.tree.leaves(state.apply_gradients(grads=grads).params),
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


def test_a_state_whose_optimizer_is_not_described_cannot_be_looked_up():
    s = statics()
    state = a_train_state(s).replace(tx=optax.sgd(0.1, momentum=0.9))  # no recipe makes these steps
    assert "GradientTransformation" in plain_data.unknown_parts("f", (state,), {}, s)


@pytest.mark.parametrize("name, rate", [("sgd", 0.3), ("adam", 0.01), ("adamw", 3e-4)])
def test_a_state_made_elsewhere_names_its_optimizer_by_the_rate_its_steps_imply(name, rate):
    """``train_step(state, batch)`` has no float argument to suggest the rate: the first step implies it,
    and every step must agree bit for bit."""
    s = statics()
    state = a_train_state(s).replace(tx=getattr(optax, name)(rate))
    assert plain_data.unknown_parts("f", (state,), {}, s) is None
    assert s.recipe(state.tx) == ["optimizer", name, rate]


def test_nothing_is_pickled(tmp_path):
    round_trip({"a": np.ones(3), "k": jax.random.key(1)}, tmp_path=tmp_path)
    with np.load(tmp_path / "m.npz", allow_pickle=False) as npz:
        assert all(npz[name].dtype != object for name in npz.files)


def sin_sum(x):
    return jnp.sum(jnp.sin(x))


def cos_sum(x):
    return jnp.sum(jnp.cos(x))


def test_a_function_argument_is_looked_up_by_what_it_is():
    """A check passes its own ``f`` (autodiff): the same function, even wrapped in a call counter, finds
    the same answer; another function, or a lambda with other text or other closed-over values, does not."""
    from autograder.checks.calls import CountedFunction

    s = statics()
    x = np.arange(3, dtype=np.float32)
    same = plain_data.digest("g", (sin_sum, x), {}, s)
    assert same == plain_data.digest("g", (CountedFunction(sin_sum), x), {}, s)
    assert same != plain_data.digest("g", (cos_sum, x), {}, s)
    assert plain_data.digest("g", (lambda v: v * 2, x), {}, s) != plain_data.digest("g", (lambda v: v * 3, x), {}, s)

    def scaled(k):
        return lambda v: v * k

    assert plain_data.digest("g", (scaled(2.0), x), {}, s) == plain_data.digest("g", (scaled(2.0), x), {}, s)
    assert plain_data.digest("g", (scaled(2.0), x), {}, s) != plain_data.digest("g", (scaled(3.0), x), {}, s)
    assert plain_data.unknown_parts("g", (sin_sum, x), {}, s) is None


class Opaque:
    """Something with no value to record (a device mesh, a checkpoint manager)."""


class LiveModule:
    module_name = "m"

    @staticmethod
    def make_opaque(n):
        return Opaque()

    @staticmethod
    def use_opaque(thing, n):
        return n + 1

    @staticmethod
    def double(n):
        return 2 * n


def test_what_cannot_be_recorded_is_listed_and_skipped_with_its_reason(tmp_path):
    recorded.RecordingOracle.reset()
    recording = recorded.RecordingOracle(LiveModule(), tmp_path, {"make_opaque", "use_opaque", "double"})
    assert isinstance(recording.make_opaque(1), Opaque)  # the live answer still comes back while recording
    assert recording.use_opaque(Opaque(), 1) == 2
    assert recording.double(2) == 4
    recorded.RecordingOracle.save_all()
    recorded.RecordingOracle.reset()
    (tmp_path / "given").mkdir()
    (tmp_path / "given" / "m.py").write_text(
        "def make_opaque(n):\n    raise NotImplementedError\n\n"
        "def use_opaque(thing, n):\n    raise NotImplementedError\n\n"
        "def double(n):\n    raise NotImplementedError\n"
    )
    from autograder.release.builder import unrecordable

    listed = unrecordable(tmp_path)
    assert set(listed) == {"m.make_opaque", "m.use_opaque"}, listed
    assert listed["m.make_opaque"].startswith("some calls: it returns") and "Opaque" in listed["m.make_opaque"]
    assert "Opaque" in listed["m.use_opaque"]
    oracle = recorded.RecordedOracle(tmp_path, "m")
    assert oracle.double(2) == 4
    with pytest.raises(pytest.skip.Exception, match=r"cannot record reference.make_opaque\(1\): it returns .*Opaque"):
        oracle.make_opaque(1)
    with pytest.raises(pytest.skip.Exception, match="cannot record reference.use_opaque: its arguments hold a Opaque"):
        oracle.use_opaque(Opaque(), 1)


def test_a_recording_reference_function_in_a_module_is_not_its_state(tmp_path):
    """The release records while a student module holds a reference function (``numpy_collate`` swapped in):
    the recording grows, the module's state does not change."""
    import types

    recorded.RecordingOracle.reset()
    module = types.ModuleType("student_like")
    module.double = recorded.RecordingOracle(LiveModule(), tmp_path, {"double"}).double
    module.counts = []
    purity.assert_module_state_unchanged(module, lambda: module.double(3))
    with pytest.raises(Exception, match="changed the contents of the module-level variable 'counts'"):
        purity.assert_module_state_unchanged(module, lambda: module.counts.append(1))
    recorded.RecordingOracle.reset()
