"""Issue 42: the retracing checks are decided on the trusted side, from the program (one program, exported with the
arguments that change between calls traced, gives the reference's values on every call of the check's loop) and from
the source (``core.retrace_sources``: no jax.jit of a function made per call, no cache cleared, no new static parts in
a returned state); the count of traces is observed first, in the student's process, and its failure still fails.

The references of ``vmap_linear`` and ``pytrees`` are graded for real (grading process and verifier): full marks, each
retracing check claimed, given the source and confirmed. Then the verifier is asked again with the grading process's
word kept ("passed") as a retracing answer's process would forge it: a wrapper that makes a new ``jax.jit`` per call
compiles the very program the reference compiles and its loop can be reported as run, so its transcript is the
honest one byte for byte, and only its source tells; a learning rate made static bakes it into the program (a
program recorded for the first rate); a record of the loop missing. None is confirmed; the honest transcripts and
sources are confirmed again (the control). A retracing answer graded for real fails the check in its own process.
"""

from __future__ import annotations

import copy

import certificates
import jax
import numpy as np
import pytest
from support import ROOT

from autograder.checks import programs
from autograder.core.course import load_course
from autograder.core.status import Status
from autograder.grading import transcript
from autograder.grading.grader import Grader, Options

MODULES = ("vmap_linear", "pytrees")
RETRACE_CHECKS = (
    "vmap_linear::test_linear_does_not_retrace",
    "vmap_linear::test_batched_linear_does_not_retrace",
    "vmap_linear::test_per_example_grads_does_not_retrace",
    "pytrees::test_sgd_update_does_not_retrace_in_a_training_loop",
)
LINEAR = RETRACE_CHECKS[0]
SGD = RETRACE_CHECKS[3]
# What a retracing answer writes instead of the reference's function (its program is the reference's).
RETRACING = {
    LINEAR: (
        "vmap_linear",
        "def linear(x, W, b):\n    return x @ W + b",
        "def linear(x, W, b):\n    return jax.jit(lambda x, W, b: x @ W + b)(x, W, b)",
    ),
    SGD: (
        "pytrees",
        "@jax.jit\ndef sgd_update(params, learning_rate, x, y):",
        "def sgd_update(params, learning_rate, x, y):\n    jax.clear_caches()\n    return _sgd_update(params, "
        "learning_rate, x, y)\n\n\n@jax.jit\ndef _sgd_update(params, learning_rate, x, y):",
    ),
}


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), MODULES, timeout=120) as graded:
        yield graded


def retracing_source(check: str) -> tuple[str, str]:
    module, honest, retracing = RETRACING[check]
    source = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
    assert honest in source
    return module, source.replace(honest, retracing)


def _verify(grader, check: str, transcript_of_check: dict, sources: dict | None):
    return grader.trusted.verify([check], {check: transcript_of_check}, sources)[check]


def test_the_references_retrace_checks_are_confirmed_from_their_program_and_source(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    for check in RETRACE_CHECKS:
        assert check in seen["claims"], check
        assert certificates.programs_of(seen["transcripts"][check]), check  # the one program of the loop
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]
    assert set(seen["sources"]) == set(MODULES)


@pytest.mark.parametrize("check", [LINEAR, SGD])
def test_a_retracing_source_with_the_honest_transcript_earns_nothing(graded_reference, check):
    """A new jax.jit of a lambda per call (linear), the caches cleared per call (sgd_update): the program and the
    loop's record are what the reference's process sends."""
    grader, _, seen = graded_reference
    module, source = retracing_source(check)
    verdict = _verify(grader, check, seen["transcripts"][check], {module: source})
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "would trace and compile again" in verdict.message and "line " in verdict.message, verdict.message


def test_no_source_earns_nothing(graded_reference):
    grader, _, seen = graded_reference
    verdict = _verify(grader, LINEAR, seen["transcripts"][LINEAR], None)
    assert str(verdict.outcome) == str(Status.FAILED), verdict


def _baked_program(honest: np.ndarray) -> np.ndarray:
    arguments, _ = certificates.main_types(honest)
    params = {"W": np.zeros(arguments[0].shape, np.float32), "b": np.zeros(arguments[1].shape, np.float32)}
    x, y = (np.zeros(a.shape, a.dtype) for a in arguments[3:5])

    def step(params, learning_rate, x, y):  # the reference's step, with the rate of the first call baked in
        grads = jax.grad(lambda p: jax.numpy.mean(jax.numpy.sum((x @ p["W"] + p["b"] - y) ** 2, axis=1) / 2))(params)
        return jax.tree.map(lambda p, g: p - 0.2 * g, params, grads)

    return programs.pack(jax.export.export(jax.jit(step))(params, np.float32(0.2), x, y))


def test_a_learning_rate_baked_into_the_program_earns_nothing(graded_reference):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][SGD])
    recorded = certificates.programs_of(forged)
    assert len(recorded) == 1
    for key, honest in recorded.items():
        forged[key] = transcript.encode(_baked_program(honest), transcript.statics())
    verdict = _verify(grader, SGD, forged, {"pytrees": seen["sources"]["pytrees"]})
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "does not give the reference's values for call 2" in verdict.message, verdict.message


def test_a_loop_not_reported_as_run_earns_nothing(graded_reference):
    """Only the program recorded: the record that the observed loop ran to the end is missing."""
    grader, _, seen = graded_reference
    honest = seen["transcripts"][LINEAR]
    forged = {key: value for key, value in honest.items() if key in certificates.programs_of(honest)}
    assert forged and forged != honest
    verdict = _verify(grader, LINEAR, forged, {"vmap_linear": seen["sources"]["vmap_linear"]})
    assert str(verdict.outcome) == str(Status.FAILED), verdict


@pytest.mark.parametrize("check", RETRACE_CHECKS)
def test_the_honest_transcripts_and_sources_are_confirmed_again(graded_reference, check):
    grader, _, seen = graded_reference
    module = check.split("::")[0]
    verdict = _verify(grader, check, seen["transcripts"][check], {module: seen["sources"][module]})
    assert str(verdict.outcome) == str(Status.PASSED), verdict


def test_a_retracing_answer_graded_for_real_fails_in_its_own_process(tmp_path):
    """Not forged: the loop runs in its grading process and counts the retraces, in JAX's own words; the function
    keeps its other checks."""
    module, source = retracing_source(LINEAR)
    folder = tmp_path / "retracing"
    folder.mkdir()
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    grader = Grader(load_course(ROOT), Options((module,), 120, 4000, 1), workers=1)
    try:
        result = grader.grade_submission(folder.name, folder)
    finally:
        grader.close()
    outcomes = {o.check: o for o in result.outcomes if o.function == "linear"}
    failed = {check for check, o in outcomes.items() if str(o.status) != str(Status.PASSED)}
    assert failed == {"test_linear_does_not_retrace"}, outcomes
    assert "JAX explains the cache miss" in outcomes["test_linear_does_not_retrace"].message
