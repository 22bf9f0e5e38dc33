"""``OUT/report.html``: the class at a glance, in one self-contained page.

The page has the score distribution, the pass rate of every function in
course order and, per function, its distinct failures with how many students
hit each (a module file not submitted and a function not started are counted
apart from real mistakes); a click on a function lists who failed it and why.
The table of students sorts by any column, colours each score from red (none)
to green (full marks), marks students who submitted nothing and, when a due
date was given, shows when each submitted, how late, and the penalised score;
a click on a student opens their messages for every function (what their
``results.json`` says). The plots are inline SVG (:mod:`.charts`); there is no network access, no external file, and the only
script is the small one below (sorting, opening a student), which the page's
Content-Security-Policy allows by its hash: whatever a student names a folder
or puts in an error message is escaped text, and could not run even if it
were not. Like the other outputs it is deterministic (no dates, fixed SVG ids).

The page is ``templates/report.html.j2`` (:mod:`.templates`: every value escaped); this module computes what it
shows.
"""

from __future__ import annotations

import base64
import hashlib
import statistics
from typing import Any

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult, points_text
from autograder.grading.desk.late import Lateness, format_late_by, format_time
from autograder.grading.outputs import charts, templates
from autograder.grading.outputs.class_report import function_columns, function_output, student_total
from autograder.grading.outputs.failures import (
    MISSING,
    NOT_STARTED,
    failure_kind,
    failure_lines,
    submission_warnings,
    submitted_nothing,
)

SCRIPT = """
for (const table of document.querySelectorAll("table.sortable")) {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((th, column) => th.addEventListener("click", () => {
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    headers.forEach(h => h.removeAttribute("aria-sort"));
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const key = row => row.cells[column].dataset.value ?? row.cells[column].textContent;
    const numeric = th.dataset.type === "number";
    const rows = [...table.tBodies[0].rows].sort((a, b) => {
      const x = key(a), y = key(b);
      const order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return ascending ? order : -order;
    });
    table.tBodies[0].append(...rows);
  }));
}
for (const button of document.querySelectorAll("button.student")) {
  button.addEventListener("click", () => {
    const details = document.getElementById(button.dataset.target);
    details.open = true;
    details.scrollIntoView({block: "start"});
  });
}
"""


def score_histogram(totals: list[float], max_score: float) -> str:
    return charts.histogram(totals, max_score, f"score (out of {points_text(max_score)})")


def pass_rate_chart(names: list[str], rates: list[float]) -> str:
    return charts.pass_rates(names, rates, "students passing every check (%)")


def colour(fraction: float) -> str:
    """A light background from red (0) through yellow to green (1), for a share of the points."""
    fraction = min(1.0, max(0.0, fraction))
    return f"hsl({round(120 * fraction)}, 70%, {round(86 - 4 * fraction)}%)"


def _fraction(value: float, maximum: float) -> float:
    return value / maximum if maximum else 0.0


def _function_row(fn, n: int, scores: list[tuple[str, FunctionScore]]) -> dict[str, Any]:
    """What one row of the functions table shows (``scores``: each student's score of ``fn``): counts, and for
    the drill-down who failed and why (``ranked``: each distinct mistake with its students, most common first)."""
    passed, with_mistake, missing, not_started = 0, 0, [], []
    mistakes: dict[str, list[str]] = {}
    for student, score in scores:
        kind = failure_kind(score)
        if kind is None:
            passed += 1
        elif kind == MISSING:
            missing.append(student)
        elif kind == NOT_STARTED:
            not_started.append(student)
        else:
            with_mistake += 1
            for line in failure_lines(score):
                mistakes.setdefault(line, []).append(student)
    ranked = sorted(mistakes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    rate = passed / n if n else 0.0
    return {
        "qualname": fn.qualname,
        "points": points_text(fn.points, None),
        "passed": passed,
        "n": n,
        "rate": rate,
        "rate_percent": round(100 * rate),
        "with_mistake": with_mistake,
        "not_started": not_started,
        "missing": missing,
        "ranked": ranked,
        "has_items": bool(ranked or not_started or missing),
    }


def _student_row(
    index: int,
    result: StudentResult,
    total: float,
    final: float,
    columns: list[str],
    max_of: dict[str, float],
    max_score: float,
    late: dict[str, Lateness] | None,
    notes: dict[str, list[str]] | None,
) -> dict[str, Any]:
    """What one row of the students table shows: the final score (and with a late policy the raw one, the time
    and how late), the tags of the note column, a cell per function."""
    earned = {f"{s.module}.{s.function}": s.points for s in result.scores}
    info = late.get(result.student, Lateness(None, None, 0.0)) if late is not None else Lateness(None, None, 0.0)
    return {
        "index": index,
        "name": result.student,
        "empty": submitted_nothing(result),
        "final": final,
        "final_fraction": _fraction(final, max_score),
        "raw": total,
        "raw_fraction": _fraction(total, max_score),
        "submitted": format_time(info.submitted_at),
        "late_seconds": int(info.late_by.total_seconds()) if info.late_by else 0,
        "late_by": format_late_by(info.late_by),
        "is_late": late is not None and info.late_by is not None,
        "late_rule": info.rule,
        "late_percent": points_text(100 * info.penalty),
        "warnings": [*submission_warnings(result), *(notes or {}).get(result.student, [])],
        # the screen's findings, the audit hook's, tampering: for the instructor to look at
        "review": list(result.review),
        "cells": [(earned.get(c, 0.0), _fraction(earned.get(c, 0.0), max_of[c])) for c in columns],
    }


def _student_details(index: int, result: StudentResult, functions, total: float, max_score: float) -> dict[str, Any]:
    by_name = {s.qualname: s for s in result.scores}
    shown = []
    for fn in functions:
        score = by_name.get(fn.qualname)
        shown.append(
            {
                "qualname": fn.qualname,
                "points": None if score is None else points_text(score.points),
                "max_points": points_text(fn.points),
                "output": None if score is None else function_output(score),
            }
        )
    return {
        "index": index,
        "name": result.student,
        "total": points_text(total),
        "max_score": points_text(max_score),
        "review": list(result.review),
        "functions": shown,
    }


def _summary(
    n: int, modules: tuple[str, ...], max_score: float, totals: list[float], finals, late, nothing: int
) -> str:
    summary = f"{n} students graded; modules: {', '.join(modules)}; maximum {points_text(max_score)} points."
    if totals and late is not None:
        summary += (
            f" Final scores (after the late policy): mean {points_text(statistics.mean(finals))}, "
            f"median {points_text(statistics.median(finals))}; raw scores: mean {points_text(statistics.mean(totals))}, "
            f"median {points_text(statistics.median(totals))}."
        )
    elif totals:
        summary += f" Mean {points_text(statistics.mean(totals))}, median {points_text(statistics.median(totals))}."
    if nothing:
        summary += f" {nothing} submitted nothing."
    return summary


def report_html(
    course: Course,
    modules: tuple[str, ...],
    results: list[StudentResult],
    incomplete: str | None = None,
    late: dict[str, Lateness] | None = None,
    notes: dict[str, list[str]] | None = None,
) -> str:
    columns = function_columns(course, modules)
    functions = [fn for fn in course.functions if fn.module in modules]
    max_score = sum(fn.points for fn in functions)
    max_of = {fn.qualname: fn.points for fn in functions}
    results = sorted(results, key=lambda r: r.student)
    totals = [student_total(r, columns) for r in results]
    by_function: dict[str, list] = {fn.qualname: [] for fn in functions}
    for result in results:
        for score in result.scores:
            by_function.get(score.qualname, []).append((result.student, score))
    rows = [_function_row(fn, len(results), by_function[fn.qualname]) for fn in functions]
    # with a late policy in force the headline, the histogram and the first score column are the final scores
    finals = [
        late.get(r.student, Lateness(None, None, 0.0)).final(t) if late is not None else t
        for r, t in zip(results, totals)
    ]
    students = [
        _student_row(index, result, totals[index], finals[index], columns, max_of, max_score, late, notes)
        for index, result in enumerate(results)
    ]
    nothing = sum(s["empty"] for s in students)
    return templates.render(
        "report.html.j2",
        title=course.title,
        script_hash=base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode(),
        script=templates.markup(SCRIPT),
        incomplete=incomplete,
        summary_line=_summary(len(results), modules, max_score, totals, finals, late, nothing),
        has_late=late is not None,
        histogram=templates.markup(score_histogram(finals, max_score)),
        pass_rates=templates.markup(pass_rate_chart([fn.qualname for fn in functions], [r["rate"] for r in rows])),
        functions=rows,
        legend=[(f, round(100 * f)) for f in (0, 0.25, 0.5, 0.75, 1)],
        columns=[(c, c.split(".", 1)[1]) for c in columns],
        students=students,
        details=[
            _student_details(index, result, functions, totals[index], max_score) for index, result in enumerate(results)
        ],
        points=points_text,
        colour=colour,
    )
