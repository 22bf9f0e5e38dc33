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
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import ROOT

from autograder.checks import programs
from autograder.core.course import load_course
from autograder.core.status import Status
from autograder.grading import transcript
from autograder.grading.grader import Grader, Options

MODULE = "at_updates"
CHECK = f"{MODULE}::test_replace_negatives_works_under_jit"


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    student = tmp_path_factory.mktemp("reference")
    (student / f"{MODULE}.py").write_bytes((ROOT / "solutions" / f"{MODULE}.py").read_bytes())
    grader = Grader(load_course(ROOT), Options((MODULE,), 60, 4000, 1), workers=1)
    seen = {}
    verify = grader.trusted.verify

    def spy(claims, transcripts):
        seen["claims"], seen["transcripts"] = claims, transcripts
        seen["verdicts"] = verify(claims, transcripts)
        return seen["verdicts"]

    grader.trusted.verify = spy
    try:
        result = grader.grade_submission("reference", Path(student))
        grader.trusted.verify = verify
        yield grader, result, seen
    finally:
        grader.close()


def _statics():
    return transcript.statics()


def _programs_of(calls: dict) -> dict[str, np.ndarray]:
    """The recorded programs of a check's transcript, by key."""
    found = {}
    for key, encoded in calls.items():
        value = transcript.decode(encoded, _statics())
        if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.tobytes().startswith(b"AGPROG1"):
            found[key] = value
    return found


def _arguments(payload: np.ndarray) -> list[jax.ShapeDtypeStruct]:
    """The argument types of a recorded program's ``main`` (what a forger matches)."""
    raw = payload.tobytes()
    size = int.from_bytes(raw[8:12], "big")
    exported = jax.export.Exported(
        **{
            **{f: None for f in ("in_tree", "out_tree", "in_shardings_hlo", "out_shardings_hlo", "_get_vjp")},
            "fun_name": "main",
            "in_avals": (),
            "out_avals": (),
            "_has_named_shardings": False,
            "_in_named_shardings": (),
            "_out_named_shardings": (),
            "nr_devices": 1,
            "platforms": ("cpu",),
            "ordered_effects": (),
            "unordered_effects": (),
            "disabled_safety_checks": (),
            "mlir_module_serialized": raw[12 + size :],
            "calling_convention_version": 10,
            "module_kept_var_idx": (),
            "uses_global_constants": False,
        }
    )
    signature = re.search(r"func\.func public @main\((.*?)\)\s*->", exported.mlir_module()).group(1)
    found = []
    for dims, dtype in re.findall(r"tensor<((?:\d+x)*)([a-z]\w*)>", signature):
        shape = tuple(int(d) for d in dims.split("x") if d)
        found.append(jax.ShapeDtypeStruct(shape, {"f32": np.float32, "i32": np.int32}[dtype]))
    return found


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
    arguments = _arguments(honest)
    if kind == "host-callback":  # jax.export refuses to serialize it: a forger writes the module's text itself
        raw = honest.tobytes()
        size = int.from_bytes(raw[8:12], "big")
        text = jax.jit(FORGERIES[kind]).lower(*arguments).as_text().encode()
        return np.frombuffer(raw[: 12 + size] + text, np.uint8)
    return programs._pack(jax.export.export(jax.jit(FORGERIES[kind]))(*arguments))


def test_the_references_programs_are_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert CHECK in seen["claims"] and _programs_of(seen["transcripts"][CHECK])
    assert {str(v.outcome) for v in seen["verdicts"].values()} == {str(Status.PASSED)}, seen["verdicts"]


@pytest.mark.parametrize("kind", [*FORGERIES, "not-a-program", "over-the-cap"])
def test_a_forged_program_earns_nothing(graded_reference, kind):
    grader, _, seen = graded_reference
    forged = copy.deepcopy(seen["transcripts"][CHECK])
    recorded = _programs_of(forged)
    for key, honest in recorded.items():
        forged[key] = transcript.encode(_forged_program(kind, honest), _statics())
    verdicts = grader.trusted.verify([CHECK], {CHECK: forged})
    assert str(verdicts[CHECK].outcome) == str(Status.FAILED), verdicts
    assert "replace_negatives" in verdicts[CHECK].message


def test_the_honest_transcript_is_confirmed_again(graded_reference):
    """The control: the same verifier, asked the same way with the recorded programs as they were."""
    grader, _, seen = graded_reference
    verdicts = grader.trusted.verify([CHECK], {CHECK: seen["transcripts"][CHECK]})
    assert str(verdicts[CHECK].outcome) == str(Status.PASSED), verdicts
