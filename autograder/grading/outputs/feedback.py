"""``OUT/<student>/feedback.html``: what one student reads, ready to hand back (or attach in an LMS).

The same messages and hints a student sees from ``pytest exercises/`` (the grader keeps the
checks' student-facing messages, which end with the function's hint from ``course.toml``), per
function in course order, with the points, the total and, when a due date was given, the
submission time and late penalty. One self-contained page: no script at all (its
Content-Security-Policy forbids any), every piece of student text escaped, no date of writing
(grading twice gives the same bytes). The page is ``templates/feedback.html.j2`` (:mod:`.templates`).
"""

from __future__ import annotations

from typing import Any

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult, points_text
from autograder.core.status import Status
from autograder.grading.desk.late import Lateness, format_late_by, format_time
from autograder.grading.outputs import templates
from autograder.grading.outputs.failures import MISSING, NOT_STARTED, failure_kind


def _state(score: FunctionScore) -> tuple[str, str]:
    kind = failure_kind(score)
    if kind is None:
        return "passed", f"all {score.total} checks pass"
    if kind == MISSING:
        return "missing", "not submitted"
    if kind == NOT_STARTED:
        return "not-started", "not started"
    return "failed", f"{score.passed}/{score.total} checks pass"


def _function_part(fn, score: FunctionScore) -> dict[str, Any]:
    """One function's section: its state, its messages (each once), and its hint when it failed without one."""
    css, state = _state(score)
    messages = list(dict.fromkeys(m.strip() for m in score.messages if m.strip()))
    hint = fn.hint.strip() if css == "failed" and not any("hint:" in m for m in messages) else None
    return {
        "heading": False,
        "css": css,
        "qualname": fn.qualname,
        "name": fn.name,
        "points": points_text(score.points),
        "max_points": points_text(fn.points),
        "state": state,
        "messages": messages,
        "hint": hint,
    }


def feedback_html(
    course: Course,
    modules: tuple[str, ...],
    result: StudentResult,
    late: Lateness | None = None,
    notes: list[str] | tuple[str, ...] = (),
) -> str:
    by_name = {s.qualname: s for s in result.scores}
    total = sum(s.points for s in result.scores if s.module in modules)
    max_total = sum(fn.points for fn in course.functions if fn.module in modules)
    body: list[dict[str, Any]] = []
    for module in course.modules:
        if module.name not in modules:
            continue
        body.append({"heading": True, "module": module.name, "topic": module.topic})
        for fn in module.functions:
            score = by_name.get(fn.qualname) or FunctionScore(
                fn.module, fn.name, 0.0, fn.points, Status.FAILED, 0, 0, ["not graded"]
            )
            body.append(_function_part(fn, score))
    final = late.final(total) if late is not None else total
    score_line = {
        "penalised": late is not None and late.late_by is not None,
        "final": points_text(final),
        "total": points_text(total),
        "max_total": points_text(max_total),
        "percent": points_text(100 * late.penalty) if late is not None else "",
        "rule": (late.rule or "the late policy") if late is not None else "",
    }
    submitted = late is not None and late.submitted_at is not None
    return templates.render(
        "feedback.html.j2",
        title=course.title,
        student=result.student,
        score=score_line,
        submitted=format_time(late.submitted_at) if late is not None and submitted else None,
        late_by=format_late_by(late.late_by) if late is not None and submitted and late.late_by is not None else None,
        notes=list(notes),
        review=list(result.review),
        body=body,
    )
