"""Checks decided from the program *and* the source (``decided("program", analysis)``, issue 42: the retracing
checks): the verifier fails a claimed pass whose source the analysis flags without replaying it, replays the others
from their program, and fails one whose module's text it was not given; the analyses are registered and pass the
references."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.core import from_source
from autograder.core.course import Function
from autograder.grading.trusted.verifier import Verifier
from autograder.grading.wire import Replay, VerifierRequest
from autograder.pytest_plugin import decided
from autograder.pytest_plugin.session import FUNCTION_KEY

ROOT = Path(__file__).resolve().parents[3]
RETRACING = "def linear(x, W, b):\n    return jax.jit(lambda x, W, b: x @ W + b)(x, W, b)\n"
HONEST = "def linear(x, W, b):\n    return x @ W + b\n"


class _Item:
    """What the verifier reads of a collected check: its name, node id, markers, fixtures and function."""

    def __init__(self, name: str, *marks: pytest.MarkDecorator):
        self.name = name
        self.nodeid = f"exercises/test_vmap_linear.py::{name}"
        self.marks = {m.mark.name: m.mark for m in marks}
        self.fixturenames = ("student", "reference")
        self.stash = pytest.Stash()
        self.stash[FUNCTION_KEY] = Function("linear", "vmap_linear", 2.0, "a hint")

    def get_closest_marker(self, name: str):
        return self.marks.get(name)


def test_the_mark_is_a_program_check_with_an_analysis():
    item = _Item("test_linear_does_not_retrace", pytest.mark.decided("program", "retraces"))
    assert decided.decided_where(item) == decided.PROGRAM
    assert decided.source_analysis(item) == "retraces"
    assert decided.replayed_on_the_trusted_side(item)
    # an unknown analysis: a program check like any other
    assert decided.source_analysis(_Item("t", pytest.mark.decided("program", "no such"))) is None
    assert decided.source_analysis(_Item("t", pytest.mark.decided("values", "retraces"))) is None


def _collected(source: dict) -> tuple[Verifier, list]:
    item = _Item("test_linear_does_not_retrace", pytest.mark.decided("program", "retraces"))
    check = "vmap_linear::test_linear_does_not_retrace"
    verifier = Verifier(VerifierRequest("verify", checks=[check], sources=source))
    items = [item]
    verifier.pytest_collection_modifyitems(None, None, items)
    return verifier, items


def test_a_flagged_source_fails_without_a_replay():
    verifier, items = _collected({"vmap_linear": "import jax\n" + RETRACING})
    assert items == []  # not replayed
    verdict = verifier.verdicts["vmap_linear::test_linear_does_not_retrace"]
    assert verdict.outcome == Replay.FAILED and "jax.jit of a lambda, made on every call" in verdict.message


@pytest.mark.parametrize("sources", [{}, {"vmap_linear": {"not": "text"}}], ids=["no-text", "not-text"])
def test_no_source_fails_without_a_replay(sources):
    verifier, items = _collected(sources)
    assert items == [] and verifier.verdicts["vmap_linear::test_linear_does_not_retrace"].outcome == Replay.FAILED


def test_a_clean_source_is_replayed_from_its_program():
    verifier, items = _collected({"vmap_linear": "import jax\n" + HONEST})
    assert len(items) == 1 and verifier.verdicts == {}  # the replay decides


def test_the_retrace_analyses_are_registered_and_pass_the_references():
    cases = {
        "retraces": [("vmap_linear", "linear"), ("jit_static", "pad_to_multiple")],
        "retraces_in_a_loop": [("training", "train_step"), ("parallel", "pmap_sgd_step"), ("pytrees", "sgd_update")],
        "jitted_without_retraces": [("jit_static", "pad_to_multiple"), ("jit_static", "standardize_logged")],
    }
    for analysis, functions in cases.items():
        for module, function in functions:
            source = (ROOT / "solutions" / f"{module}.py").read_text(encoding="utf-8")
            assert from_source.decide_from_source(analysis, source, module, function) is None, (analysis, function)
    failure = from_source.decide_from_source("retraces", "import jax\n" + RETRACING, "vmap_linear", "linear")
    assert failure is not None and "line 3: jax.jit of a lambda" in str(failure)
    unjitted = from_source.decide_from_source("jitted_without_retraces", HONEST, "vmap_linear", "linear")
    assert unjitted is not None and "not a jax.jit function made at module level" in str(unjitted)
