"""What ``grade`` writes: ``grades.csv``, ``<student>/results.json`` (Gradescope) and ``summary.md``.

Everything is written by the grader from its own verdicts, in a fixed order
and format (no timings, no paths, no addresses), so grading the same folder
twice gives byte-identical files.

After an interruption the class files cover the students finished so far
and say so: ``incomplete`` is a note written as the last line of
``grades.csv`` (a ``#`` line) and the first line of ``summary.md``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from typing import Any

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult, points_text
from autograder.core.status import Status
from autograder.grading.desk.late import Lateness, format_late_by, format_time
from autograder.grading.outputs.failures import (  # noqa: F401 - submitted_nothing is also read as class_report.*
    MISSING,
    MISTAKE,
    NOT_STARTED,
    failure_kind,
    failure_lines,
    submitted_nothing,
)
from autograder.grading.outputs.inert import csv_text, md_text


def function_columns(course: Course, modules: tuple[str, ...]) -> list[str]:
    return [fn.qualname for fn in course.functions if fn.module in modules]


def points_by_student(results: list[StudentResult]) -> dict[str, dict[str, float]]:
    """``{student: {"<module>.<function>": points}}``, e.g. for an nbgrader gradebook."""
    return {r.student: r.points_by_function() for r in results}


# what an instructor must look at (autograder.core.screen): "what, file:line", separated by "; "
REVIEW_COLUMN = "needs_review"
LATE_COLUMNS = ["submitted_at", "late_by", "late_penalty_percent", "final_score"]


def grades_csv(
    course: Course,
    modules: tuple[str, ...],
    results: list[StudentResult],
    incomplete: str | None = None,
    late: dict[str, Lateness] | None = None,
) -> str:
    """One row per student. With ``late`` (a due date or a submission time source was given): when each
    student submitted, how late (``2d 03:04:05``), the penalty and the penalised ``final_score``.
    Student text (the folder name) is an inert CSV cell (:func:`csv_text`)."""
    columns = function_columns(course, modules)
    max_score = sum(fn.points for fn in course.functions if fn.module in modules)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["student", "score", "max_score", *(LATE_COLUMNS if late is not None else []), *columns]
    writer.writerow([*header, REVIEW_COLUMN])
    for result in sorted(results, key=lambda r: r.student):
        earned = result.points_by_function()
        total = student_total(result, columns)
        extra = []
        if late is not None:
            info = late.get(result.student, Lateness(None, None, 0.0))
            extra = [
                format_time(info.submitted_at),
                format_late_by(info.late_by),
                points_text(100 * info.penalty),
                points_text(info.final(total)),
            ]
        writer.writerow(
            [
                csv_text(result.student),
                points_text(total),
                points_text(max_score),
                *extra,
                *(points_text(earned.get(c, 0.0)) for c in columns),
                csv_text("; ".join(result.review)),
            ]
        )
    # ``incomplete`` is said beside it (OUT/INCOMPLETE.txt, summary.md, report.html): a row here would be data to a
    # spreadsheet
    return buffer.getvalue()


def function_output(score: FunctionScore) -> str:
    if score.status == Status.PASSED:
        return f"all {score.total} checks pass"
    unique = list(dict.fromkeys(m.strip() for m in score.messages if m.strip()))
    head = f"{score.passed}/{score.total} checks pass" if score.status != Status.NOT_STARTED else "not started"
    return "\n\n".join([head, *unique[:3]])


def results_json(course: Course, modules: tuple[str, ...], result: StudentResult) -> str:
    """Gradescope's schema: one test per function; ``output`` is what the student reads."""
    by_name = {s.qualname: s for s in result.scores}
    tests: list[dict[str, Any]] = []
    for fn in course.functions:
        if fn.module not in modules:
            continue
        score = by_name.get(fn.qualname)
        if score is None:
            score = FunctionScore(fn.module, fn.name, 0.0, fn.points, Status.FAILED, 0, 0, ["not graded"])
        tests.append(
            {
                "name": fn.qualname,
                "score": round(score.points, 2),
                "max_score": fn.points,
                "status": str(
                    Status.PASSED if score.status == Status.PASSED else Status.FAILED
                ),  # Gradescope knows these two
                "output": function_output(score),
                "visibility": "visible",
            }
        )
    total = round(sum(t["score"] for t in tests), 2)
    max_total = sum(t["max_score"] for t in tests)
    review = "".join(f"\nneeds review: {line}" for line in result.review)
    payload = {
        "score": total,
        "output": f"{course.title}: {points_text(total)}/{points_text(max_total)}{review}",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def most_common_failures(scores: list[FunctionScore], count: int) -> list[tuple[str, int]]:
    """The ``count`` most frequent first lines of the real mistakes of one function (a missing file or a
    function not started is not one), with how many students hit each."""
    failures = Counter(line for s in scores if failure_kind(s) == MISTAKE for line in failure_lines(s))
    return sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:count]


def function_scores(results: list[StudentResult], module: str, function: str) -> list[FunctionScore]:
    return [s for r in results for s in r.scores if s.module == module and s.function == function]


def student_total(result: StudentResult, columns: list[str]) -> float:
    earned = result.points_by_function()
    return sum(earned.get(c, 0.0) for c in columns)


def summary_md(
    course: Course, modules: tuple[str, ...], results: list[StudentResult], incomplete: str | None = None
) -> str:
    n = len(results)
    note = [f"> **INCOMPLETE:** {incomplete}", ""] if incomplete else []
    lines = [*note, f"# {course.title}: class summary", "", f"{n} students graded.", ""]
    for module in course.modules:
        if module.name not in modules:
            continue
        lines += [
            f"## {module.name} — {module.topic}",
            "",
            "| function | passed | mean points | not submitted | not started | most common mistakes |",
            "|---|---|---|---|---|---|",
        ]
        for fn in module.functions:
            scores = function_scores(results, fn.module, fn.name)
            passed = sum(s.status == Status.PASSED for s in scores)
            kinds = Counter(failure_kind(s) for s in scores)
            mean = sum(s.points for s in scores) / n if n else 0.0
            common = most_common_failures(scores, 3)
            text = "<br>".join(f"{count}× {md_text(msg)}" for msg, count in common) or "—"
            lines.append(
                f"| {fn.name} | {passed}/{n} | {mean:.2f}/{points_text(fn.points)} | {kinds[MISSING]} | {kinds[NOT_STARTED]} | {text} |"
            )
        lines.append("")
    return "\n".join(lines)
