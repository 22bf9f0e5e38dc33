"""``OUT/<student>/feedback.html``: what one student reads, ready to hand back (or attach in an LMS).

The same messages and hints a student sees from ``pytest exercises/`` (the grader keeps the
checks' student-facing messages, which end with the function's hint from ``course.toml``), per
function in course order, with the points, the total and, when a due date was given, the
submission time and late penalty. One self-contained page: no script at all (its
Content-Security-Policy forbids any), every piece of student text escaped, no date of writing
(grading twice gives the same bytes).
"""

from __future__ import annotations

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult, points_text
from autograder.core.status import Status
from autograder.grading.desk.late import Lateness, format_late_by, format_time
from autograder.grading.outputs.failures import MISSING, NOT_STARTED, failure_kind
from autograder.grading.outputs.inert import html_text as _e

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 52rem; padding: 0 1rem; color: #222; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 1.6rem; }
.fn { border: 1px solid #ddd; border-left: .4rem solid #bbb; border-radius: 4px; padding: .4rem .8rem; margin: .6rem 0; }
.fn.passed { border-left-color: #228833; } .fn.failed { border-left-color: #cc3311; } .fn.not-started, .fn.missing { border-left-color: #999; }
.fn h3 { font-size: 1rem; margin: .2rem 0; display: flex; justify-content: space-between; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: .5rem; border-radius: 3px; font-size: .85rem; }
.hint { background: #fff7d6; padding: .4rem .6rem; border-radius: 3px; }
.late { color: #a33; }
"""


def _state(score: FunctionScore) -> tuple[str, str]:
    kind = failure_kind(score)
    if kind is None:
        return "passed", f"all {score.total} checks pass"
    if kind == MISSING:
        return "missing", "not submitted"
    if kind == NOT_STARTED:
        return "not-started", "not started"
    return "failed", f"{score.passed}/{score.total} checks pass"


def _review_lines(result: StudentResult) -> str:
    """What the grader withheld for review, said to the student (empty when nothing was)."""
    return "".join(f'<p class="review">needs review: {_e(line)}</p>\n' for line in result.review)


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
    body = []
    for module in course.modules:
        if module.name not in modules:
            continue
        body.append(f"<h2>{_e(module.name)} — {_e(module.topic)}</h2>")
        for fn in module.functions:
            score = by_name.get(fn.qualname) or FunctionScore(
                fn.module, fn.name, 0.0, fn.points, Status.FAILED, 0, 0, ["not graded"]
            )
            css, state = _state(score)
            parts = [
                f"<h3><span>{_e(fn.name)}</span><span>{points_text(score.points)}/{points_text(fn.points)}</span></h3><p>{_e(state)}</p>"
            ]
            messages = list(dict.fromkeys(m.strip() for m in score.messages if m.strip()))
            parts += [f"<pre>{_e(m)}</pre>" for m in messages]
            if css == "failed" and not any("hint:" in m for m in messages):
                parts.append(f'<p class="hint">hint: {_e(fn.hint.strip())}</p>')
            body.append(f'<section class="fn {css}" id="{_e(fn.qualname)}">{"".join(parts)}</section>')
    late_line = ""
    final = late.final(total) if late is not None else total
    headline = f"Score: <strong>{points_text(final)}/{points_text(max_total)}</strong>"
    if late is not None and late.late_by is not None:
        headline = (
            f"Final score: <strong>{points_text(final)}/{points_text(max_total)}</strong> "
            f"(your checks earned {points_text(total)}/{points_text(max_total)}; "
            f"{points_text(100 * late.penalty)}% off by {_e(late.rule or 'the late policy')})"
        )
    if late is not None and late.submitted_at is not None:
        late_line = f"<p>Submitted {_e(format_time(late.submitted_at))}"
        if late.late_by is not None:
            late_line += f' <span class="late">({_e(format_late_by(late.late_by))} late)</span>'
        late_line += "</p>"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{_e(course.title)}: feedback for {_e(result.student)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{_e(course.title)}: feedback for {_e(result.student)}</h1>
<p id="total">{headline}</p>{late_line}{"".join(f'<p class="note">{_e(n)}</p>' for n in notes)}
{_review_lines(result)}<p>Each function below shows the messages your checks gave, with the hint; run <code>pytest exercises/</code> to see them again on your own machine.</p>
{chr(10).join(body)}
</body>
</html>
"""
