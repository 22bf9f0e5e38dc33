"""Issue 44, finding 7: Gradescope's results are in the course's own points: a function with hidden checks is one
test worth the function's points, its hidden checks a second test that adds what they earned and no maximum (no
0/1.33 and 0/0.67)."""

from __future__ import annotations

import pytest
from support import ROOT

from autograder.core.course import load_course
from autograder.core.outcomes import CheckOutcome, StudentResult, score_functions
from autograder.core.status import Status
from autograder.platforms import gradescope_results


def test_a_function_with_hidden_checks_keeps_its_points_whole():
    course = load_course(ROOT)
    fn = next(f for f in course.functions if f.hidden and f.module == "at_updates")
    outcomes = [
        CheckOutcome(fn.module, fn.name, "test_values", Status.PASSED, correctness=True),
        CheckOutcome(fn.module, fn.name, "test_jit", Status.FAILED, message="not jittable"),
        CheckOutcome(fn.module, fn.name, fn.hidden[0], Status.PASSED),
    ]
    result = StudentResult("s", score_functions(course, outcomes), outcomes)
    out = gradescope_results.results(course, ("at_updates",), result, 1.0)
    tests = {t["name"]: t for t in out["tests"]}
    visible, later = tests[fn.qualname], tests[f"{fn.qualname} (checks shown after the due date)"]
    assert visible["max_score"] == fn.points and later["max_score"] == 0
    expected = next(s for s in result.scores if s.function == fn.name).points
    assert expected == pytest.approx(fn.points * 2 / 3, abs=0.01)
    assert visible["score"] + later["score"] == pytest.approx(expected, abs=0.011)
    assert f"count toward its {fn.points:g} points" in later["output"]
    assert sum(t["max_score"] for t in out["tests"]) == fn.points, "no fractional maxima"


def test_the_release_readme_states_the_partial_credit_rule_the_score_table_applies():
    """Issue 44, finding 9: not "when all its checks pass" while partial credit is given."""
    from autograder.core.outcomes import score_checks
    from autograder.release.student_readme import student_readme

    course = load_course(ROOT)
    text = " ".join(student_readme(course).split())
    assert "when all its checks pass" not in text and "points × passed checks / checks" in text
    fn = course.module("at_updates").functions[0]
    outcomes = [
        CheckOutcome(fn.module, fn.name, "a", Status.PASSED, correctness=True),
        CheckOutcome(fn.module, fn.name, "b", Status.FAILED),
    ]
    assert score_checks(fn, outcomes).points == pytest.approx(fn.points / 2), "partial credit, as the README says"
