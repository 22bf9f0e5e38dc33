"""Issue 42: checkpointing's dtype and manager checks, training's ``train_model_is_pure`` and what
``standardize_logged`` prints, decided on the trusted side from recorded values (``@pytest.mark.decided("values")``).

The references of both modules are graded for real (grading process and verifier): the moved checks are claimed and
confirmed. Then the verifier is asked again with the grading process's word kept ("passed") and what it recorded
forged as the process of a wrong function would record it: a restore that ignores the target's dtypes (float32
params, the saved values unrounded), one whose params are not the saved ones, a manager of another class, a
``train_model`` that writes into the state it is given, and one whose results agree with each other but are made up,
a ``standardize_logged`` that prints with Python's print while tracing, or prints the sample std.
None is confirmed; the honest transcripts are, asked the same way.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import certificates
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.core.status import Status
from autograder.grading import transcript

pytestmark = pytest.mark.timeout(1800)

MODULES = ("checkpointing", "training", "jit_static")
RESTORE = "checkpointing::test_restore_checkpoint_follows_the_targets_dtypes"
LATEST = "checkpointing::test_restore_latest_follows_the_targets_dtypes"
MANAGER = "checkpointing::test_make_manager_returns_a_checkpoint_manager"
TRAIN_MODEL = "training::test_train_model_is_pure"
ONE_LINE = "jit_static::test_standardize_logged_prints_one_line_per_call"
MEAN_STD = "jit_static::test_standardize_logged_prints_the_mean_and_std"
CHECKS = (RESTORE, LATEST, MANAGER, TRAIN_MODEL, ONE_LINE, MEAN_STD)


@pytest.fixture(scope="module")
def graded_references(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("references"), MODULES, timeout=300) as graded:
        yield graded


@functools.cache
def _statics():
    return certificates.course_statics(MODULES)


def _forged(seen: dict, check: str, forge: Callable, picks: Callable) -> dict:
    """The check's transcript with each recorded value that ``picks`` chooses replaced by ``forge`` of it."""
    statics = _statics()
    forged = copy.deepcopy(seen["transcripts"][check])
    changed = 0
    for key, encoded in forged.items():
        try:
            value = transcript.decode(encoded, statics)
        except ValueError:
            continue
        if picks(value):
            forged[key] = transcript.encode(forge(value), statics)
            changed += 1
    assert changed, f"nothing of {check}'s transcript was forged"
    return forged


def _verdict(grader, check: str, transcripts: dict):
    return grader.trusted.verify([check], {check: transcripts})[check]


def test_the_references_moved_checks_are_confirmed(graded_references):
    grader, result, seen = graded_references
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    decided = {c.id.split("[")[0]: c.decided for c in grader.plan}
    for check in CHECKS:
        assert decided[check] == "values", check
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]


def _is_restored(value) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list)


def _params_as_float32(value):
    """What a restore that gives float32 params whatever the target records: the kinds of its params."""
    kinds, state = value
    return [
        (path, was.replace("bfloat16", "float32") if path.startswith(".params") else was) for path, was in kinds
    ], state


def _params_shifted(value):
    kinds, state = value
    return kinds, state.replace(params=jax.tree.map(lambda p: p + jnp.float32(2**-6), state.params))


@pytest.mark.parametrize("check", [RESTORE, LATEST])
@pytest.mark.parametrize(
    "forgery, forge, message",
    [
        ("float32-params", _params_as_float32, r"is float32\[\d+.*\], but the target has bfloat16\["),
        ("other-values", _params_shifted, r"differs|expected"),
    ],
)
def test_a_restore_that_ignores_the_targets_dtypes_earns_nothing(graded_references, check, forgery, forge, message):
    import re

    grader, _, seen = graded_references
    verdict = _verdict(grader, check, _forged(seen, check, forge, _is_restored))
    assert str(verdict.outcome) == str(Status.FAILED), (forgery, verdict)
    assert re.search(message, verdict.message), verdict.message


def test_a_manager_of_another_class_earns_nothing(graded_references):
    grader, _, seen = graded_references
    forged = _forged(seen, MANAGER, lambda v: ["builtins.dict", "builtins.object"], lambda v: isinstance(v, list))
    verdict = _verdict(grader, MANAGER, forged)
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "returned a builtins.dict" in verdict.message, verdict.message


def _is_called_twice(value) -> bool:
    return isinstance(value, tuple) and len(value) == 4 and isinstance(value[3], dict)


def _state_written_into(value):
    """The given state as a ``train_model`` that writes the new params into it leaves it (the third part)."""
    first, second, left, reseeded = value
    state, *rest = left
    return first, second, (state.replace(params=first["params"]), *rest), reseeded


def _made_up(value):
    """Every result the same, all zeros: results recorded alike, but not a correct function's."""
    zero = jax.tree.map(lambda a: np.zeros_like(np.asarray(a)), value[0])
    return zero, zero, value[2], dict.fromkeys(value[3], zero)


@pytest.mark.parametrize(
    "forgery, forge, message",
    [
        ("writes-into-the-state", _state_written_into, r"train_model modified its argument"),
        ("made-up-results", _made_up, r"reference's"),
    ],
)
def test_a_train_model_forged_pure_earns_nothing(graded_references, forgery, forge, message):
    import re

    grader, _, seen = graded_references
    verdict = _verdict(grader, TRAIN_MODEL, _forged(seen, TRAIN_MODEL, forge, _is_called_twice))
    assert str(verdict.outcome) == str(Status.FAILED), (forgery, verdict)
    assert re.search(message, verdict.message), verdict.message


def _is_printed(value) -> bool:
    return isinstance(value, list) and all(isinstance(lines, list) for lines in value)


def _printed_while_tracing_too(value):
    """A Python print beside jax.debug.print: the first (tracing) call prints a line of tracers too."""
    return [
        [*lines, "Traced<ShapedArray(float32[])>with<DynamicJaxprTrace>"] if i == 0 else lines
        for i, lines in enumerate(value)
    ]


def _sample_std(value):
    """The lines a function printing jnp.std(x, ddof=1) would print (the honest std scaled up)."""
    import re

    def scaled(line):
        found = re.match(r"mean=(\S+) std=(\S+)", line)
        return f"mean={found.group(1)} std={float(found.group(2)) * 1.1:.7g}" if found else line

    return [[scaled(line) for line in lines] for lines in value]


@pytest.mark.parametrize(
    "check, forge, message",
    [
        (ONE_LINE, _printed_while_tracing_too, r"the first call \(the one that traces\) printed 2 lines"),
        (MEAN_STD, _sample_std, r"the printed std is"),
    ],
    ids=["python-print-while-tracing", "sample-std"],
)
def test_lines_forged_for_standardize_logged_earn_nothing(graded_references, check, forge, message):
    import re

    grader, _, seen = graded_references
    verdict = _verdict(grader, check, _forged(seen, check, forge, _is_printed))
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert re.search(message, verdict.message), verdict.message


@pytest.mark.parametrize("check", CHECKS)
def test_the_honest_transcripts_are_confirmed_again(graded_references, check):
    grader, _, seen = graded_references
    verdict = _verdict(grader, check, seen["transcripts"][check])
    assert str(verdict.outcome) == str(Status.PASSED), verdict
