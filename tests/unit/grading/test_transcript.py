"""The plain-data format that carries a student's results to the trusted verifier.

The verifier decodes what a student's process wrote: decoding must rebuild states, modules and datasets
(so the checks that take and return them can be replayed) and must never build or call anything else.
"""

import json

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax.training import train_state

from autograder.grading import transcript
from autograder.recording.recorded import RecordedDataset


class Course(nn.Module):  # stands for a class of a course module
    features: int = 2

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)


def course_class(module, qualname):
    if (module, qualname) == ("training", "Course"):
        return Course
    raise ValueError(qualname)


def roundtrip(value, hints=(), statics=None):
    """``value`` through the child's encoding, JSON, and the verifier's decoding (separate recipe tables)."""
    sent = json.loads(json.dumps(transcript.encode(value, transcript.statics(), list(hints))))
    return transcript.decode(sent, statics or transcript.statics(course_class))


def test_plain_pytrees_survive_with_their_kinds():
    value = (jnp.arange(3.0), np.ones((2, 2), np.int32), {"a": np.float32(1.5), 2: [True, None, "s", 1.0]})
    got = roundtrip(value)
    assert isinstance(got[0], jax.Array) and got[0].dtype == jnp.float32
    assert type(got[1]) is np.ndarray and got[1].dtype == np.int32 and got[1].shape == (2, 2)
    assert got[2] == {"a": np.float32(1.5), 2: [True, None, "s", 1.0]} and type(got[2]["a"]) is np.float32


def test_typed_keys_survive():
    keys = jax.random.split(jax.random.key(3), 2)
    got = roundtrip(keys)
    assert got.dtype == keys.dtype
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(keys))


def test_a_train_state_comes_back_with_the_verifiers_own_static_fields():
    """A state a student returns is rebuilt around the optimizer and apply function the verifier's own input
    state has (same recipe, same object), so it compares equal in structure with the reference's result."""
    model = Course()
    params = model.init(jax.random.key(0), jnp.ones((1, 3)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.3))
    verifier = transcript.statics(course_class)
    verifiers_input = train_state.TrainState.create(apply_fn=Course().apply, params=params, tx=optax.sgd(0.3))
    assert transcript.digest("f", (verifiers_input, 0.3), {}, verifier) is not None  # remembers its recipes
    got = roundtrip(state.apply_gradients(grads=params), hints=[0.3], statics=verifier)
    assert got.tx is verifiers_input.tx
    assert jax.tree.structure(got) == jax.tree.structure(verifiers_input)
    assert int(got.step) == 1


def test_a_state_whose_static_fields_are_not_data_comes_back_with_its_numbers():
    """An optimizer with momentum, a functools.partial of apply: the numbers of the state still reach the
    verifier (a correctness check compares params), the static fields come back as inert stand-ins."""
    import functools

    from autograder.recording.plain_data import OpaqueStatic

    model = Course()
    params = model.init(jax.random.key(0), jnp.ones((1, 3)))["params"]
    state = train_state.TrainState.create(
        apply_fn=functools.partial(model.apply), params=params, tx=optax.sgd(0.3, momentum=0.9)
    )
    got = roundtrip(state, hints=[0.3])
    assert isinstance(got.tx, OpaqueStatic) and isinstance(got.apply_fn, OpaqueStatic)
    assert "not plain data" in repr(got.tx)
    np.testing.assert_array_equal(got.params["Dense_0"]["kernel"], params["Dense_0"]["kernel"])
    assert jax.tree.structure(got.opt_state) == jax.tree.structure(state.opt_state)


def test_a_dataset_comes_back_as_its_items():
    from torch.utils.data import Dataset

    class Points(Dataset):
        def __init__(self):
            self.data = np.arange(6, dtype=np.float32).reshape(3, 2)
            self.label = np.array([0, 1, 1])

        def __len__(self):
            return 3

        def __getitem__(self, i):
            return self.data[i], self.label[i]

    got = roundtrip(Points())
    assert isinstance(got, RecordedDataset) and len(got) == 3
    np.testing.assert_array_equal(got[2][0], [4.0, 5.0])
    np.testing.assert_array_equal(got.label, [0, 1, 1])


class AlwaysEqual(np.ndarray):
    def __eq__(self, other):
        return True


def test_an_array_subclass_comes_back_as_its_plain_data():
    got = roundtrip(np.arange(2.0).view(AlwaysEqual))
    assert type(got) is np.ndarray and list(got) == [0.0, 1.0]


@pytest.mark.parametrize("value", [object(), np.array([object()]), [lambda: 1]])
def test_anything_else_is_opaque_and_never_executed(value):
    encoded = transcript.encode(value, transcript.statics())
    assert transcript.is_opaque(encoded)
    assert isinstance(transcript.decode(encoded, transcript.statics(course_class)), transcript.Opaque)


def test_arguments_with_no_value_to_look_them_up_by_have_no_digest():
    assert transcript.digest("f", (object(),), {}, transcript.statics()) is None


def test_digests_tell_inputs_apart():
    s = transcript.statics()

    def d(*args, name="f"):
        return transcript.digest(name, args, {}, s)

    assert d(jnp.zeros(2)) == d(jnp.zeros(2))
    assert d(jnp.zeros(2)) != d(np.zeros(2, np.float32))
    assert d(jnp.zeros(2)) != d(jnp.zeros(3))
    assert d(1.0) != d(1) != d(1, name="g")


def test_a_device_mesh_argument_is_digested_by_its_devices_and_axis_names():
    """``distribute(params, batch, mesh)`` is replayed: the mesh the check makes digests alike in every process;
    as a result it stays opaque (a mesh is never rebuilt from a transcript)."""
    s = transcript.statics()
    devices = np.array(jax.devices())
    auto = (jax.sharding.AxisType.Auto,)
    mesh = jax.sharding.Mesh(devices, ("batch",), axis_types=auto)
    assert transcript.digest("f", (mesh,), {}, s) == transcript.digest(
        "f", (jax.sharding.Mesh(devices, ("batch",), axis_types=auto),), {}, s
    )
    assert transcript.digest("f", (mesh,), {}, s) != transcript.digest(
        "f", (jax.sharding.Mesh(devices, ("data",), axis_types=auto),), {}, s
    )
    if len(devices) > 1:
        assert transcript.digest("f", (mesh,), {}, s) != transcript.digest(
            "f", (jax.sharding.Mesh(devices[::-1], ("batch",), axis_types=auto),), {}, s
        )
    assert transcript.is_opaque(transcript.encode(mesh, s))


def packed(tree, arrays=()):
    return {"tree": tree, "arrays": list(arrays)}


def fields(**values):
    """The encoded keyword arguments a decoded class is called with."""

    def enc(v):
        return ["list", [enc(x) for x in v]] if isinstance(v, list) else ["py", v]

    return ["dict", ["builtins", "dict"], [[["py", k], enc(v)] for k, v in values.items()]]


HOSTILE = {
    "not a dict": [1],
    "an object array": packed(["np", 0], [{"dtype": "|O", "shape": [1], "b": ""}]),
    "a pickle": packed(["pickle", "gASVCAAAAAAAAACMBHRleHSULg=="]),
    "os.system as a module": packed(["flax_module", ["os", "system"], fields(command="touch pwned")]),
    "subprocess.Popen as a module": packed(["flax_module", ["subprocess", "Popen"], fields(args=["touch", "pwned"])]),
    "os.system as a struct of a library": packed(
        ["struct", ["jax.numpy.os", "system"], fields(command="touch pwned"), {}]
    ),
    "a builtin function as a named tuple": packed(["namedtuple", ["builtins", "eval"], [["py", "1+1"]]]),
    "a function of a course module": packed(["namedtuple", ["course", "training", "__init__"], []]),
    "a module path that is not a name": packed(["dict", ["flax;import os", "core"], []]),
    "an optimizer that is not a rate": packed(
        [
            "struct",
            ["flax.training.train_state", "TrainState"],
            ["dict", ["builtins", "dict"], []],
            {"tx": ["optimizer", "chain", 1]},
        ]
    ),
    "a method other than apply": packed(
        [
            "struct",
            ["flax.training.train_state", "TrainState"],
            ["dict", ["builtins", "dict"], []],
            {
                "apply_fn": [
                    "method",
                    ["flax_module", ["course", "training", "Course"], ["dict", ["builtins", "dict"], []]],
                    "init",
                ]
            },
        ]
    ),
    "an array index out of range": packed(["np", 3]),
    "a wrong tag": packed(["int", "1"]),
}


@pytest.mark.parametrize("junk", HOSTILE.values(), ids=HOSTILE.keys())
def test_malformed_or_hostile_transcripts_are_rejected_without_running_anything(junk, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="malformed"):
        transcript.decode(junk, transcript.statics(course_class))
    assert not list(tmp_path.iterdir())


def test_decoding_never_imports_a_module_a_transcript_names(tmp_path, monkeypatch):
    """A class reference to a module of a library that is not loaded yet (here one planted in jax's package
    path whose import leaves a mark) is refused without importing it: an import runs the module's code."""
    planted = tmp_path / "pkg"
    planted.mkdir()
    mark = tmp_path / "imported"
    (planted / "_planted_by_a_student.py").write_text(
        f"open({str(mark)!r}, 'w').close()\nclass Dense(dict):\n    pass\n"
    )
    monkeypatch.setattr(jax, "__path__", [*jax.__path__, str(planted)])
    name = "jax._planted_by_a_student"
    assert name not in __import__("sys").modules
    for junk in (packed(["dict", [name, "Dense"], []]), packed(["namedtuple", [name, "Dense"], []])):
        with pytest.raises(ValueError, match="malformed"):
            transcript.decode(junk, transcript.statics(course_class))
    assert not mark.exists()
    assert name not in __import__("sys").modules


def test_decoding_builds_library_classes_the_grader_loaded_and_only_plain_dict_types():
    from collections import OrderedDict

    s = transcript.statics(course_class)
    assert transcript.decode(
        packed(["dict", ["collections", "OrderedDict"], [[["py", "a"], ["py", 1]]]]), s
    ) == OrderedDict(a=1)
    with pytest.raises(ValueError, match="malformed"):  # a dict type whose constructor runs code of its own
        transcript.decode(packed(["dict", ["collections", "Counter"], [[["py", "a"], ["py", 1]]]]), s)
    state = optax.adam(0.1).init({"w": jnp.ones(2)})  # optax's named tuples, looked up without importing
    assert jax.tree.structure(roundtrip(state)) == jax.tree.structure(state)
