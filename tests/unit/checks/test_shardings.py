"""checks.shardings: where a rebuilt program runs and where the results of the check's own run of it live (on how
many devices, copied whole or in pieces), and which collectives the check's own compiler puts into it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from autograder.checks import programs, shardings
from autograder.core.failures import CheckFailure

N = 4
XS = np.arange(N * 3, dtype=np.float32).reshape(N, 3)


@functools.partial(jax.pmap, axis_name="d")
def pmapped_mean(xs):
    return jax.lax.pmean(xs, "d")


def one_device_mean(xs):
    return jnp.broadcast_to(xs.mean(0), xs.shape)


def test_a_pmap_function_exports_under_jit_for_its_devices_and_its_results_are_spread():
    expected = one_device_mean(XS)
    compiled = programs.program_of(pmapped_mean, XS, result_like=expected)
    shardings.assert_runs_on_devices(compiled, N, what="result", check="c", advice="a")
    got = programs.gives(compiled, shardings.placed(XS, N, split=True), expected=expected)
    shardings.assert_results_on_devices(got, N, name="result", check="c", advice="a")
    with pytest.raises(CheckFailure, match=r"result\[0\] lives on 4 device\(s\), expected 8"):
        shardings.assert_results_on_devices([got], 8, name="result", check="c", advice="a")


def test_a_program_of_one_device_is_one_whatever_its_inputs():
    compiled = programs.program_of(one_device_mean, XS, result_like=one_device_mean(XS))
    with pytest.raises(
        CheckFailure, match=r"result lives on 1 device\(s\), expected 4: the compiled program runs on 1"
    ):
        shardings.assert_runs_on_devices(compiled, N, what="result", check="c", advice="a")


def test_replicated_results_and_results_in_pieces():
    whole = shardings.placed(XS, N, split=False)
    shardings.assert_results_replicated({"x": whole}, N, name="out", check="c", advice="a")
    with pytest.raises(CheckFailure, match=r"out\['x'\] is spread over the devices in pieces"):
        shardings.assert_results_replicated(
            {"x": shardings.placed(XS, N, split=True)}, N, name="out", check="c", advice="a"
        )
    with pytest.raises(CheckFailure, match=r"out\[0\] is a ndarray, not a JAX array"):
        shardings.assert_results_on_devices([XS], N, name="out", check="c", advice="a")


def _sum_of_squares(x):
    return jnp.sum(x**2)


def _gathered_sum_of_squares(x):
    mesh = jax.make_mesh((N,), ("d",), devices=jax.devices()[:N], axis_types=(jax.sharding.AxisType.Auto,))
    return jnp.sum(jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P())) ** 2)


def test_the_collectives_are_the_checks_own_compilers():
    rows = shardings.placed(XS, N, split=True)
    honest = programs.program_of(_sum_of_squares, rows, result_like=_sum_of_squares(XS))
    shardings.assert_compiles_to_collective(honest, rows, collective="all-reduce", check="c", problem="p", advice="a")
    gathered = programs.program_of(_gathered_sum_of_squares, rows, result_like=_sum_of_squares(XS))
    programs.assert_gives(gathered, rows, expected=_sum_of_squares(XS))
    with pytest.raises(CheckFailure, match="no all-reduce here"):
        shardings.assert_compiles_to_collective(
            gathered, rows, collective="all-reduce", check="c", problem="no all-reduce here", advice="a"
        )
