"""Gradescope's ``results.json`` for one submission (:func:`results`), or for a grading that failed
(:func:`failed_results`), and the runner's last check of what it wrote (:func:`check_results`): the shape
:mod:`autograder.platforms.gradescope`'s module docstring describes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import CheckOutcome, FunctionScore, points_text, score_checks
from autograder.core.status import Status

FAILED_OUTPUT = (
    "The autograder could not grade this submission: the failure is on the grader's side, not a verdict on your code. "
    "Your instructor sees the log and can regrade it."
)

GATED = (
    "no points: a check of this function's values failed (its other test says which), "
    "and a function earns nothing while its values are wrong"
)


def _part(fn, outcomes: list[CheckOutcome], total: int, gate_failed: bool) -> FunctionScore:
    """A part of ``fn``'s checks, scored by the one rule (:func:`~autograder.core.outcomes.score_checks`)."""
    part = score_checks(fn, outcomes, of=total, gate_failed=gate_failed)
    if gate_failed and part.status == Status.PASSED:  # these checks pass, but they earn nothing: not "passed"
        part.status = Status.FAILED
        part.messages.insert(0, GATED)
    return part


def _test(name: str, part: FunctionScore, visibility: str) -> dict:
    from autograder.grading.outputs.class_report import function_output

    return {
        "name": name,
        "score": part.points,
        "max_score": part.max_points,
        "status": "passed" if part.status == Status.PASSED else "failed",
        "output": function_output(part),
        "visibility": visibility,
    }


def results(course: Course, modules: tuple[str, ...], result, seconds: float) -> dict:
    """Gradescope's ``results.json`` for one graded submission (a :class:`StudentResult`)."""
    tests = []
    for fn in course.functions:
        if fn.module not in modules:
            continue
        checks = [o for o in result.outcomes if (o.module, o.function) == (fn.module, fn.name)]
        if not checks:
            continue
        gate_failed = any(o.correctness and o.status != Status.PASSED for o in checks)
        hidden = [o for o in checks if o.check.split("[", 1)[0] in fn.hidden]
        shown = [o for o in checks if o not in hidden]
        visible = _test(fn.qualname, _part(fn, shown, len(checks), gate_failed), "visible")
        visible["max_score"] = fn.points  # the function's points as the course counts them, never a fraction
        tests.append(visible)
        if hidden:
            # their points are part of the function's (points x passed checks / all its checks): this test adds
            # what they earned to the total and adds no maximum of its own
            later = _test(
                f"{fn.qualname} (checks shown after the due date)",
                _part(fn, hidden, len(checks), gate_failed),
                "after_due_date",
            )
            later["max_score"] = 0.0
            later["output"] = (
                f"These {len(hidden)} of {fn.qualname}'s {len(checks)} checks count toward its "
                f"{points_text(fn.points, None)} points (its points are shared out over all its checks).\n\n"
                + later["output"]
            )
            tests.append(later)
    score = round(sum(s.points for s in result.scores if s.module in modules), 2)
    maximum = sum(fn.points for fn in course.functions if fn.module in modules)
    # a submission flagged for review says so where the student reads it, whatever it kept (issue 42)
    review = "".join(f"\nneeds review: {line}" for line in getattr(result, "review", None) or ())
    return {
        "score": score,
        "execution_time": int(round(seconds)),
        "output": f"{course.title}: {points_text(score, None)}/{points_text(maximum, None)} points{review}",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def failed_results(course: Course, modules: tuple[str, ...], seconds: float, detail: str) -> dict:
    """Valid results when grading itself failed: every function 0, and why."""
    tests = [
        {
            "name": fn.qualname,
            "score": 0.0,
            "max_score": fn.points,
            "status": "failed",
            "output": FAILED_OUTPUT,
            "visibility": "visible",
        }
        for fn in course.functions
        if fn.module in modules
    ]
    print(f"grading failed: {detail}", file=sys.stderr)
    return {
        "score": 0.0,
        "execution_time": int(round(seconds)),
        "output": FAILED_OUTPUT,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def check_results(path: Path) -> bool:
    """The written ``results.json`` is there and has Gradescope's required shape (a score, tests)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and type(data.get("score")) in (int, float)
        and isinstance(data.get("tests", []), list)
        and all(isinstance(t, dict) and type(t.get("score")) in (int, float) for t in data.get("tests", []))
    )
