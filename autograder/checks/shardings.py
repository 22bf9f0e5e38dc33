"""Shardings: where a program runs and where its results live, decided on the trusted side (issue 42).

Module 11's checks of *where* results live (on how many devices, replicated or split) and *how* the devices
combine their work (an all-reduce) are decided from the program the student's function compiles to
(:func:`autograder.checks.programs.program_of`), not from arrays the student's process hands over: the
trusted side places its own inputs on its own devices, runs the rebuilt program on them (the values must be
the reference's), and reads the shardings of what *its* run returned and the collectives of what *its*
compiler made of the program. A process that sends another program earns only what that program earns.

- :func:`placed`                       arrays put on the first devices, split along axis 0 or copied whole
- :func:`assert_runs_on_devices`       the program is one for ``n`` devices
- :func:`assert_results_on_devices`    every result of a run spans exactly ``n`` devices
- :func:`assert_results_replicated`    every result of a run is a full copy on each of ``n`` devices
- :func:`assert_compiles_to_collective` the program, compiled for the check's placed inputs, has a collective

A ``pmap`` function is not a ``jax.jit`` one and ``jax.export`` refuses it; ``jax.jit`` of it exports (the
program records its devices), so a pmap check asks :func:`programs.program_of` without ``as_is``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from autograder.checks.programs import Program
from autograder.core.failures import CheckFailure


def placed(tree: Any, n: int, *, split: bool) -> Any:
    """Every leaf of ``tree`` as a JAX array on the first ``n`` devices: split along axis 0 (``split``) or
    copied whole to each."""
    mesh = jax.make_mesh((n,), ("d",), devices=jax.devices()[:n], axis_types=(jax.sharding.AxisType.Auto,))
    return jax.device_put(jax.tree.map(np.asarray, tree), NamedSharding(mesh, P("d") if split else P()))


def assert_runs_on_devices(program: Program, n: int, *, what: str, check: str, advice: str) -> None:
    """``program`` was made for ``n`` devices (``jax.export`` records how many a program spans): a program of
    one device computes everything on one, whatever the devices its inputs came from."""
    found = int(program.exported.nr_devices)
    if found != n:
        raise CheckFailure(
            check, f"{what} lives on {found} device(s), expected {n}: the compiled program runs on {found}", advice
        )


def _leaves(got: Any, name: str, check: str, advice: str) -> list[tuple[str, jax.Array]]:
    found = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(got):
        where = name + jax.tree_util.keystr(path)
        if not isinstance(leaf, jax.Array):
            raise CheckFailure(check, f"{where} is a {type(leaf).__name__}, not a JAX array on the devices", advice)
        found.append((where, leaf))
    return found


def assert_results_on_devices(got: Any, n: int, *, name: str, check: str, advice: str) -> None:
    """Every leaf of ``got`` (what the check's own run of the program returned) spans exactly ``n`` devices."""
    for where, leaf in _leaves(got, name, check, advice):
        found = len(leaf.sharding.device_set)
        if found != n:
            raise CheckFailure(check, f"{where} lives on {found} device(s), expected {n}", advice)


def assert_results_replicated(got: Any, n: int, *, name: str, check: str, advice: str) -> None:
    """Every leaf of ``got`` (what the check's own run of the program returned) is a full copy on each of the
    ``n`` devices."""
    assert_results_on_devices(got, n, name=name, check=check, advice=advice)
    for where, leaf in _leaves(got, name, check, advice):
        if not leaf.sharding.is_fully_replicated:
            spec = getattr(leaf.sharding, "spec", type(leaf.sharding).__name__)
            raise CheckFailure(
                check, f"{where} is spread over the devices in pieces ({spec}), not copied whole to each", advice
            )


def compiled_text(program: Program, *args: Any) -> str:
    """The HLO the trusted side's own compiler makes of ``program`` for ``args`` (placed by the check): where
    the partitioner has put the collectives the shardings need."""
    try:
        return str(jax.jit(program.exported.call).lower(*args).compile().as_text())
    except Exception as err:  # noqa: BLE001 - hostile data: a program that does not compile here fails
        raise CheckFailure(
            program.check,
            f"the compiled program of {program.name} does not compile for the grader's placed inputs "
            f"({type(err).__name__})",
            "the arguments the contract says are traced must be traced (not static)",
        ) from None


def assert_compiles_to_collective(
    program: Program, *args: Any, collective: str, check: str, problem: str, advice: str
) -> None:
    """``program``, compiled by the trusted side for ``args``, has the ``collective`` (an HLO op name such as
    ``all-reduce``)."""
    if collective not in compiled_text(program, *args):
        raise CheckFailure(check, problem, advice)
