"""Issue 42: a check decided from the program (``@pytest.mark.decided("program")``) stands on the program the
grading process recorded, run and inspected on the trusted side (:mod:`autograder.checks.programs`).

The reference is graded for real (grading process and verifier): its program checks are confirmed. Then the
verifier is asked again with the grading process's word kept ("passed") and its recorded programs forged, as a
student's process that cannot jit ``replace_negatives`` would forge them: a constant program, a program of another
function, the right values computed by a host callback, the right values with a custom call (LAPACK) the course
does not use, bytes that are no program, and a program over the size cap. None is confirmed.
"""

from __future__ import annotations

import copy

import certificates
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import programs
from autograder.core.status import Status
from autograder.grading import transcript

MODULE = "at_updates"
CHECK = f"{MODULE}::test_replace_negatives_works_under_jit"


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), (MODULE,)) as graded:
        yield graded


def _replace_negatives_on_the_host(x, value):
    return np.where(np.asarray(x) < 0, np.asarray(value), np.asarray(x)).astype(np.float32)


FORGERIES = {
    "constant": lambda x, value: jnp.zeros_like(x),
    "another-function": lambda x, value: jnp.maximum(x, value),
    "host-callback": lambda x, value: jax.pure_callback(
        _replace_negatives_on_the_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, value
    ),
    "custom-call": lambda x, value: jnp.where(x < 0, value, x) + 0 * jnp.linalg.det(jnp.eye(4, dtype=x.dtype) * value),
}


def _forged_program(kind: str, honest: np.ndarray) -> np.ndarray:
    if kind == "not-a-program":
        return np.frombuffer(b"AGPROG1\n" + b"\x00\x00\x00\x02{}" + b"junk" * 10, np.uint8)
    if kind == "over-the-cap":
        return np.zeros(programs.MAX_PROGRAM_BYTES + 1, np.uint8)
    arguments = certificates.arguments(honest)
    if kind == "host-callback":  # jax.export refuses to serialize it: a forger writes the module's text itself
        raw = honest.tobytes()
        size = int.from_bytes(raw[8:12], "big")
        text = jax.jit(FORGERIES[kind]).lower(*arguments).as_text().encode()
        return np.frombuffer(raw[: 12 + size] + text, np.uint8)
    return programs.pack(jax.export.export(jax.jit(FORGERIES[kind]))(*arguments))


def test_the_references_programs_are_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert CHECK in seen["claims"] and certificates.programs_of(seen["transcripts"][CHECK])
    assert {str(v.outcome) for v in seen["verdicts"].values()} == {str(Status.PASSED)}, seen["verdicts"]


@pytest.mark.parametrize("kind", [*FORGERIES, "not-a-program", "over-the-cap"])
def test_a_forged_program_earns_nothing(graded_reference, kind):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][CHECK])
    recorded = certificates.programs_of(forged)
    for key, honest in recorded.items():
        forged[key] = transcript.encode(_forged_program(kind, honest), transcript.statics())
    verdicts = grader.trusted.verify([CHECK], {CHECK: forged})
    assert str(verdicts[CHECK].outcome) == str(Status.FAILED), verdicts
    assert "replace_negatives" in verdicts[CHECK].message


def test_the_honest_transcript_is_confirmed_again(graded_reference):
    """The control: the same verifier, asked the same way with the recorded programs as they were."""
    grader, _, seen = graded_reference
    verdicts = grader.trusted.verify([CHECK], {CHECK: seen["transcripts"][CHECK]})
    assert str(verdicts[CHECK].outcome) == str(Status.PASSED), verdicts


# Right without jit, one more under it: its program is not what the function computes.
NOT_ITS_PROGRAM = """

import jax


def replace_negatives(x, value):
    return jnp.where(x < 0, value, x) + (1.0 if isinstance(x, jax.core.Tracer) else 0.0)
"""


def test_a_program_that_is_not_the_function_fails_on_the_trusted_side(tmp_path):
    """The grading process of a module judged on the trusted side records the program and the call without jit,
    and claims the check: running and comparing them there would decide nothing. The trusted side runs the
    program, and its failure, message included, is the student's."""
    source = (certificates.ROOT / "solutions" / f"{MODULE}.py").read_text() + NOT_ITS_PROGRAM
    with certificates.graded_for_real(tmp_path, (MODULE,), sources={MODULE: source}) as (_, result, seen):
        assert CHECK in seen["claims"] and certificates.programs_of(seen["transcripts"][CHECK])
        assert str(seen["verdicts"][CHECK].outcome) == str(Status.FAILED)
        outcomes = {o.check: o for o in result.outcomes if o.function == "replace_negatives"}
    jitted = outcomes[CHECK.split("::")[1]]
    assert jitted.status == Status.FAILED
    assert "jax.jit(replace_negatives) gives what replace_negatives gives without jit" in jitted.message, jitted
    assert all(o.status == Status.PASSED for name, o in outcomes.items() if name != CHECK.split("::")[1]), outcomes
