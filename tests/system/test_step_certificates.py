"""Issue 42: the checks of a training loop's steps are decided on the trusted side (``checks.train_steps``), from the
program of the student's own ``jax.jit`` function and from recorded values; ``mc_dropout_predict``'s constant
program from its two compiled programs.

The reference of ``dropout_rngs`` is graded for real (grading process and verifier): these checks are confirmed.
Then the verifier is asked again with the grading process's word kept ("passed") and what it recorded forged, as a
student's process would forge it whose step is not jitted, keeps state between calls or loops over the samples in
Python: a program of the right types and wrong values, bytes that are no program, one program for both numbers of
samples (the same size, but not the reference's values for 16), and a step's results recorded alike three times but
made up. None is confirmed; the honest transcripts are confirmed again (the control). The recorded programs and
their decoding are :mod:`certificates`' (tests/certificates.py).
"""

from __future__ import annotations

import base64
import copy

import certificates
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import programs
from autograder.core.status import Status
from autograder.grading import transcript

MODULE = "dropout_rngs"
JITTED = f"{MODULE}::test_train_step_dropout_is_jitted"
NO_LOOP = f"{MODULE}::test_mc_dropout_predict_has_no_python_loop_over_the_samples"
PURE = f"{MODULE}::test_train_step_dropout_is_pure"
KEY_ONCE = f"{MODULE}::test_mc_dropout_predict_uses_each_key_once"
ONE_BASE_KEY = f"{MODULE}::test_train_step_dropout_uses_the_base_key_without_consuming_it"
PROGRAM_CHECKS = (JITTED, NO_LOOP, f"{MODULE}::test_mc_dropout_predict_works_under_jit", KEY_ONCE)
VALUES_CHECKS = (PURE, f"{MODULE}::test_mc_dropout_predict_leaves_the_state_unchanged", ONE_BASE_KEY)


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), (MODULE,), timeout=120) as graded:
        yield graded


def _zeroed(encoded: dict) -> dict:
    """The recorded value with every array zeroed (the same structure, shapes and dtypes)."""
    zeroed = copy.deepcopy(encoded)
    for packed in zeroed.get("arrays", []):
        size = int(np.prod(packed["shape"], dtype=np.int64)) * np.dtype(packed["dtype"]).itemsize
        packed["b"] = base64.b64encode(bytes(size)).decode("ascii")
    return zeroed


def _zeros_program(honest: np.ndarray) -> np.ndarray:
    """A program of the honest one's argument and result types that gives zeros: right types, wrong values."""
    arguments, results = certificates.main_types(honest)
    return programs.pack(
        jax.export.export(jax.jit(lambda *a: tuple(jnp.zeros(r.shape, r.dtype) for r in results)))(*arguments)
    )


def test_the_references_step_checks_are_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    for check in PROGRAM_CHECKS:
        assert check in seen["claims"] and certificates.programs_of(seen["transcripts"][check]), check
    for check in PROGRAM_CHECKS + VALUES_CHECKS:
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]


def _verify(grader, check: str, forged: dict):
    verdicts = grader.trusted.verify([check], {check: forged})
    return verdicts[check]


@pytest.mark.parametrize("kind", ["zeros", "not-a-program"])
def test_a_forged_program_of_the_step_earns_nothing(graded_reference, kind):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][JITTED])
    for key, honest in certificates.programs_of(forged).items():
        payload = (
            _zeros_program(honest)
            if kind == "zeros"
            else np.frombuffer(b"AGPROG1\n" + b"\x00\x00\x00\x02{}" + b"junk" * 10, np.uint8)
        )
        forged[key] = transcript.encode(payload, transcript.statics())
    verdict = _verify(grader, JITTED, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "train_step_dropout" in verdict.message


def test_one_program_for_both_numbers_of_samples_earns_nothing(graded_reference):
    """A process whose function loops over the samples in Python would send one program of fixed size for both."""
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][NO_LOOP])
    recorded = certificates.programs_of(forged)
    assert len(recorded) == 2
    smallest = min(recorded.values(), key=lambda p: p.size)
    for key in recorded:
        forged[key] = transcript.encode(smallest, transcript.statics())
    verdict = _verify(grader, NO_LOOP, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "mc_dropout_predict" in verdict.message


def test_results_recorded_alike_but_made_up_earn_nothing(graded_reference):
    """is_pure from values: every result of the called-twice record the same (all zeros), but not the reference's step."""
    grader, _, seen = graded_reference
    honest = seen["transcripts"][PURE]
    forged = {key: _zeroed(encoded) for key, encoded in honest.items()}
    assert forged != honest
    verdict = _verify(grader, PURE, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "reference's values" in verdict.message, verdict.message


def _key_reusing_program(honest: np.ndarray) -> np.ndarray:
    """A program of the honest one's types that draws twice from the key it is given (a key's data, uint32[2])."""
    arguments, results = certificates.main_types(honest)
    at = next(i for i, a in enumerate(arguments) if a.shape == (2,) and a.dtype == np.uint32)

    def reuse(*args):
        key = jax.random.wrap_key_data(args[at])
        draw = jax.random.uniform(key) + jax.random.uniform(key)
        return tuple(jnp.full(r.shape, draw, r.dtype) for r in results)

    return programs.pack(jax.export.export(jax.jit(reuse))(*arguments))


@pytest.mark.parametrize("kind", ["zeros", "key-used-twice"])
def test_a_forged_program_of_mc_dropout_predict_uses_each_key_once_earns_nothing(graded_reference, kind):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][KEY_ONCE])
    recorded = certificates.programs_of(forged)
    assert recorded
    for key, honest in recorded.items():
        payload = _zeros_program(honest) if kind == "zeros" else _key_reusing_program(honest)
        forged[key] = transcript.encode(payload, transcript.statics())
    verdict = _verify(grader, KEY_ONCE, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    expected = "passes one key to two draws or splits" if kind == "key-used-twice" else "other keys or draws"
    assert expected in verdict.message, verdict.message


def _loss_arrays(encoded: dict) -> list[int] | None:
    """Where the losses of a recorded loop with one base key (``(last state, [loss, ...])``) lie among its encoded
    arrays, or None for another record (the transcript holds the steps the grading process made for the reference
    too, each ``(new_state, loss)``). Read from the encoded tree: this side cannot decode a state of the module's
    model (the verifier rebuilds it from its own recipes)."""
    tree = encoded.get("tree")
    if not (isinstance(tree, list) and tree[0] == "tuple" and len(tree[1]) == 2 and tree[1][1][0] == "list"):
        return None
    return [node[1] for node in tree[1][1][1]]


@pytest.mark.parametrize("forgery", ["made-up", "steps-reordered"])
def test_a_loop_with_one_base_key_forged_earns_nothing(graded_reference, forgery):
    """The loop's values as a step that consumes its key would leave them (other losses, another state): made up
    (every array zeroed), or the honest losses in another order (the masks of other steps)."""
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][ONE_BASE_KEY])
    loops = {key: at for key, encoded in forged.items() if (at := _loss_arrays(encoded))}
    assert loops
    for key, at in loops.items():
        if forgery == "made-up":
            forged[key] = _zeroed(forged[key])
        else:
            arrays = forged[key]["arrays"]
            honest = [arrays[i]["b"] for i in at]
            assert len(set(honest)) > 1, "the steps' losses differ"
            for i, b in zip(at, reversed(honest)):
                arrays[i]["b"] = b
    verdict = _verify(grader, ONE_BASE_KEY, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "does not consume the dropout_key" in verdict.message, verdict.message


@pytest.mark.parametrize("check", [JITTED, NO_LOOP, PURE, KEY_ONCE, ONE_BASE_KEY])
def test_the_honest_transcripts_are_confirmed_again(graded_reference, check):
    grader, _, seen = graded_reference
    verdict = _verify(grader, check, seen["transcripts"][check])
    assert str(verdict.outcome) == str(Status.PASSED), verdict
