"""Issue 42: module 11's checks of where results live and how the devices combine their work are decided from the
program on the trusted side (:mod:`autograder.checks.shardings`), as ``test_program_certificates`` proves for
module 1 (the shared machinery of `tests/certificates.py`).

The reference is graded for real (grading process and verifier): these program checks are confirmed. Then the
verifier is asked again with the grading process's word kept ("passed") and its recorded programs forged as a
student's process would forge them for code that computes the right values but not in parallel: a sharded step
whose devices all gather the whole batch (no all-reduce, the right values, on 8 devices), an
``all_device_mean`` computed on one device and broadcast, and (module 8) a ``newton_sqrt`` whose program takes
``n_steps`` as an argument (not static), with the right values. None is confirmed; the honest transcripts are.
Module 6's ``sgd_update_is_pure`` is decided from values: a second call recorded with another result is not
confirmed either.
"""

from __future__ import annotations

import copy

import certificates
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from autograder.checks import programs
from autograder.core.status import Status
from autograder.grading import transcript

MODULE = "parallel"
ALL_REDUCE = f"{MODULE}::test_sharded_sgd_step_compiles_to_an_all_reduce"
ON_N_DEVICES = f"{MODULE}::test_all_device_mean_result_lives_on_n_devices"
STATIC_N_STEPS = "jit_static::test_newton_sqrt_is_jitted_with_static_n_steps"
PURE = "pytrees::test_sgd_update_is_pure"
CHECKS = (ALL_REDUCE, ON_N_DEVICES, STATIC_N_STEPS, PURE)
MODULES = (MODULE, "jit_static", "pytrees")
FAILS_WITH = {
    ALL_REDUCE: "has no all-reduce",
    ON_N_DEVICES: "lives on 1 device",
    STATIC_N_STEPS: "n_steps is traced",
    PURE: "different the second time",
}
AUTO = jax.sharding.AxisType.Auto


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), MODULES, timeout=120) as graded:
        yield graded


def _mse(W, b, x, y):
    return jnp.mean((x @ W + b - y) ** 2)


def _gathered_step(W, b, x, y, learning_rate):
    """The right step, with the whole batch gathered onto every device first: no all-reduce is needed."""
    every = NamedSharding(jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AUTO,)), P())
    x, y = jax.lax.with_sharding_constraint((x, y), every)
    loss, (gW, gb) = jax.value_and_grad(_mse, argnums=(0, 1))(W, b, x, y)
    return W - learning_rate * gW, b - learning_rate * gb, loss


def _newton_five_steps(a, n_steps):
    """The right values for n_steps = 5, with n_steps an argument of the program (traced, not static)."""
    x, history = a, []
    for _ in range(5):
        x = (x + a / x) / 2
        history.append(x)
    return x + 0 * n_steps, jnp.stack(history)


def _forged(check: str, honest) -> object:
    arguments = certificates.arguments(honest)
    if check == STATIC_N_STEPS:
        (a,) = arguments
        n_steps = jax.ShapeDtypeStruct((), jnp.int32)
        return programs.pack(jax.export.export(jax.jit(_newton_five_steps))(a, n_steps))
    if check == ON_N_DEVICES:  # the mean on one device, broadcast back: a program of one device
        (xs,) = arguments
        return programs.pack(jax.export.export(jax.jit(lambda a: jnp.broadcast_to(a.mean(0), a.shape)))(xs))
    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(AUTO,))
    specs = (P(), P(), P("batch"), P("batch"))  # the learning rate is a constant of the program (0.1)
    placed = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, s)) for a, s in zip(arguments, specs)]
    assert len(placed) == len(arguments) == 4
    return programs.pack(jax.export.export(jax.jit(lambda *args: _gathered_step(*args, 0.1)))(*placed))


def test_the_references_verdicts_are_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    for check in CHECKS:
        assert check in seen["claims"] and (check == PURE or certificates.programs_of(seen["transcripts"][check]))
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]


def _second_call_differs(value):
    """A recorded ``called_twice`` (first, second, arguments left, reseeded results) whose second result differs."""
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[3], dict):
        return (value[0], jax.tree.map(lambda a: a + 1, value[1]), value[2], value[3])
    return None


@pytest.mark.parametrize("check", CHECKS, ids=["no-all-reduce", "one-device", "n-steps-traced", "impure"])
def test_forged_data_earns_nothing(graded_reference, check):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][check])
    for key, honest in certificates.programs_of(forged).items():
        forged[key] = transcript.encode(_forged(check, honest), transcript.statics())
    if check == PURE:
        changed = {k: _second_call_differs(transcript.decode(v, transcript.statics())) for k, v in forged.items()}
        changed = {k: v for k, v in changed.items() if v is not None}
        assert changed
        forged.update({k: transcript.encode(v, transcript.statics()) for k, v in changed.items()})
    verdicts = grader.trusted.verify([check], {check: forged})
    assert str(verdicts[check].outcome) == str(Status.FAILED), verdicts
    assert FAILS_WITH[check] in verdicts[check].message, verdicts[check].message


def test_the_honest_transcripts_are_confirmed_again(graded_reference):
    grader, _, seen = graded_reference
    verdicts = grader.trusted.verify(list(CHECKS), {c: seen["transcripts"][c] for c in CHECKS})
    assert {str(v.outcome) for v in verdicts.values()} == {str(Status.PASSED)}, verdicts
