"""The long-lived verifier remembers the reference's answers to the class's inputs
(:mod:`autograder.grading.reference_memory`): a repeated call is answered from memory, only answers
nobody can change are kept, and the module is itself again after the check."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.grading import transcript
from autograder.grading.reference_memory import ReferenceMemory


@pytest.fixture
def reference():
    module = types.ModuleType("solutions_demo")
    module.calls = []

    def double(x):
        module.calls.append(x)
        return {"y": 2 * x, "pair": (x, x + 1)}

    def as_numpy(x):
        module.calls.append(x)
        return np.asarray(x) * 2

    def fails(x):
        module.calls.append(x)
        raise ValueError("no")

    module.double, module.as_numpy, module.fails = double, as_numpy, fails
    return module


def test_a_repeated_call_is_answered_from_memory_with_its_own_containers(reference):
    memory, statics = ReferenceMemory(), transcript.statics()
    x = jnp.arange(3.0)
    with memory.answering(reference, ["double"], statics):
        first = reference.double(x)
        again = reference.double(jnp.arange(3.0))  # equal arguments, another object
        other = reference.double(x + 1)
    assert len(reference.calls) == 2 and memory.hits == 1
    assert again is not first and again["pair"] is not first["pair"]
    np.testing.assert_array_equal(again["y"], first["y"])
    np.testing.assert_array_equal(other["y"], 2 * (x + 1))


def test_the_memory_outlives_a_check_and_the_module_is_restored(reference):
    memory, statics = ReferenceMemory(), transcript.statics()
    original = reference.double
    for _student in range(3):
        with memory.answering(reference, ["double"], statics):
            reference.double(jnp.ones(2))
        assert reference.double is original
    assert len(reference.calls) == 1 and memory.hits == 2


def test_what_could_be_changed_or_is_not_data_is_computed_again(reference):
    memory, statics = ReferenceMemory(), transcript.statics()
    with memory.answering(reference, ["as_numpy", "fails", "double"], statics):
        for _ in range(2):
            out = reference.as_numpy(jnp.ones(2))  # a NumPy array can be written into: not kept
            out[0] = 99.0
            with pytest.raises(ValueError):
                reference.fails(jnp.ones(2))
            jax.jit(lambda v: reference.double(v))(jnp.ones(2))  # traced each time: no digest of a tracer
    assert len(reference.calls) == 6 and memory.hits == 0
    np.testing.assert_array_equal(reference.as_numpy(jnp.ones(2)), [2.0, 2.0])
