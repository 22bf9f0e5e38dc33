"""Lifting values onto the device without compiling (:mod:`autograder.runtime.staging`): the very array JAX's own
``stage`` program gives, for every kind of value a check or a student lifts, and no program compiled for it; JAX's
own implementation wherever the two could differ (inside a mesh, under a transfer guard, a value out of range)."""

import itertools

import jax
import ml_dtypes
import numpy as np
import pytest
from jax._src import core
from support import compiles_during

from autograder.runtime import staging

VALUES = [
    *(np.arange(6).reshape(2, 3).astype(dtype) for dtype in (np.float64, np.float32, np.float16, ml_dtypes.bfloat16)),
    *(np.arange(6).astype(dtype) for dtype in (np.int64, np.int32, np.int8, np.uint8, np.uint32, np.uint64)),
    np.array([True, False]),
    np.ones(2, np.complex128),
    np.zeros((0, 3), np.float32),
    np.array(3.5),
    np.array(2, np.int64),
    *(np.float64(2.5), np.float32(1.5), np.int64(3), np.int32(-3), np.uint32(7), np.bool_(True), np.complex64(1 + 1j)),
    *(1, -7, 2.5, -0.0, float("nan"), float("inf"), True, 1 + 2j, 2**31 - 1),
]


@pytest.fixture(scope="module")
def stage():
    staging.stage_without_compiling()
    impl = core.stage_p.impl
    assert impl.puts_without_compiling
    return impl


def assert_same_array(got, want):
    assert (got.dtype, got.shape, got.weak_type, got.sharding, got.committed) == (
        want.dtype,
        want.shape,
        want.weak_type,
        want.sharding,
        want.committed,
    )
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("x64", [False, True])
def test_every_kind_of_value_is_the_array_the_program_gives(stage, x64):
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        for value in VALUES:
            assert_same_array(stage(value), stage.jax_impl(value))
    finally:
        jax.config.update("jax_enable_x64", before)


def test_lifting_compiles_nothing_and_jax_would(stage):
    shapes = [(5, 7), (7, 5), (3, 11)]
    dtypes = [np.float32, np.int32, np.uint8]
    _, ours = compiles_during(lambda: [stage(np.ones(s, d)) for s, d in itertools.product(shapes, dtypes)])
    assert ours == 0
    _, theirs = compiles_during(lambda: [stage.jax_impl(np.ones((13, 17), d)) for d in dtypes])
    assert theirs == 3  # the control: JAX's own stage compiles a program per new shape and dtype


def test_jnp_asarray_and_eager_operations_on_numpy_compile_no_lift(stage):
    result, count = compiles_during(lambda: jax.numpy.asarray(np.arange(12.0, dtype=np.float32).reshape(3, 4) + 19))
    assert count == 0 and result.dtype == np.float32 and float(result[2, 3]) == 30.0


def test_a_value_out_of_range_gets_jaxs_own_error(stage):
    with pytest.raises(OverflowError) as ours:
        stage(2**40)
    with pytest.raises(OverflowError) as theirs:
        stage.jax_impl(2**40)
    assert str(ours.value) == str(theirs.value)


def test_under_a_transfer_guard_jax_decides(stage):
    with jax.transfer_guard("disallow"):
        with pytest.raises(Exception) as ours:
            stage(np.ones(3, np.float32))
        with pytest.raises(Exception) as theirs:
            stage.jax_impl(np.ones(3, np.float32))
    assert type(ours.value) is type(theirs.value)


def test_inside_a_mesh_jax_decides(stage):
    mesh = jax.make_mesh((1,), ("d",), axis_types=(jax.sharding.AxisType.Explicit,))
    with jax.set_mesh(mesh):
        for value in (np.ones((2, 3), np.float32), 2.5):
            assert_same_array(stage(value), stage.jax_impl(value))


def test_installing_twice_changes_nothing(stage):
    assert staging.stage_without_compiling() is True
    assert core.stage_p.impl is stage
