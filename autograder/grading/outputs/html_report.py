"""``OUT/report.html``: the class at a glance, in one self-contained page.

The page has the score distribution, the pass rate of every function in
course order and, per function, its distinct failures with how many students
hit each (a module file not submitted and a function not started are counted
apart from real mistakes); a click on a function lists who failed it and why.
The table of students sorts by any column, colours each score from red (none)
to green (full marks), marks students who submitted nothing and, when a due
date was given, shows when each submitted, how late, and the penalised score;
a click on a student opens their messages for every function (what their
``results.json`` says). The plots are drawn by matplotlib's SVG backend and
embedded inline; there is no network access, no external file, and the only
script is the small one below (sorting, opening a student), which the page's
Content-Security-Policy allows by its hash: whatever a student names a folder
or puts in an error message is escaped text, and could not run even if it
were not. Like the other outputs it is deterministic (no dates, fixed SVG ids).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import statistics

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult, points_text
from autograder.grading.desk.late import Lateness, format_late_by, format_time
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

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 80rem; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.figures { display: flex; flex-wrap: wrap; gap: 1rem; } .figures figure { margin: 0; }
figcaption { font-size: .9rem; color: #555; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
.scroll { overflow-x: auto; }
code { white-space: pre-wrap; }
pre { white-space: pre-wrap; margin: .2rem 0; font-size: .8rem; background: #f6f6f6; padding: .3rem; }
button.student { all: unset; cursor: pointer; color: #1a55a5; text-decoration: underline; }
.tag { font-size: .75rem; padding: 0 .3rem; border-radius: 3px; background: #ddd; color: #333; white-space: nowrap; }
.tag.none { background: #555; color: #fff; } .tag.late { background: #f4c7b8; }
.tag.warn { background: #ffe08a; white-space: normal; }
tr.nosub td { color: #777; }
details.function summary, details.student summary { cursor: pointer; }
ul.failures { margin: .3rem 0; padding-left: 1.2rem; } ul.failures li { margin-bottom: .3rem; }
.who { color: #555; font-size: .85rem; }
td.time { white-space: nowrap; }
details.student h4 { font-size: .9rem; margin: .5rem 0 .1rem; }
.legend span { display: inline-block; padding: 0 .5rem; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _svg(figure, salt: str) -> str:
    """A matplotlib figure as inline SVG markup, reproducible byte for byte."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=96)


def score_histogram(totals: list[float], max_score: float) -> str:
    figure = _figure(4.6, 3.0)
    axes = figure.subplots()
    bins = max(1, min(20, int(max_score) or 1))
    axes.hist(totals, bins=bins, range=(0, max_score or 1), color="#4477aa", edgecolor="white")
    axes.set_xlabel(f"score (out of {points_text(max_score)})")
    axes.set_ylabel("students")
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure, "score-distribution")


def pass_rate_chart(names: list[str], rates: list[float]) -> str:
    figure = _figure(5.0, 0.8 + 0.28 * len(names))
    axes = figure.subplots()
    positions = range(len(names))
    axes.barh(positions, [100 * r for r in rates], color="#228833")
    axes.set_yticks(positions, names)
    axes.invert_yaxis()  # course order from the top
    axes.set_xlim(0, 100)
    axes.set_xlabel("students passing every check (%)")
    axes.spines[["top", "right"]].set_visible(False)
    return _svg(figure, "pass-rate")


def colour(fraction: float) -> str:
    """A light background from red (0) through yellow to green (1), for a share of the points."""
    fraction = min(1.0, max(0.0, fraction))
    return f"hsl({round(120 * fraction)}, 70%, {round(86 - 4 * fraction)}%)"


def _cell(value: float, maximum: float) -> str:
    fraction = value / maximum if maximum else 0.0
    return f'<td class="num" data-value="{points_text(value)}" style="background:{colour(fraction)}">{points_text(value)}</td>'


def _function_row(fn, n: int, scores: list[tuple[str, FunctionScore]]) -> tuple[str, float]:
    """One row of the functions table (``scores``: each student's score of ``fn``): counts, and a
    drill-down of who failed and why."""
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
    who = lambda names: ", ".join(_e(name) for name in names)  # noqa: E731
    items = [
        f'<li><strong class="count">{len(names)}×</strong> <code>{_e(line)}</code><div class="who">{who(names)}</div></li>'
        for line, names in ranked
    ]
    if not_started:
        items.append(
            f'<li><strong class="count">{len(not_started)}×</strong> not started<div class="who">{who(not_started)}</div></li>'
        )
    if missing:
        items.append(
            f'<li><strong class="count">{len(missing)}×</strong> not submitted<div class="who">{who(missing)}</div></li>'
        )
    if ranked:
        top = f'<span class="count">{len(ranked[0][1])}×</span> <code>{_e(ranked[0][0])}</code>'
        more = f" (+{len(ranked) - 1} other mistake{'s' if len(ranked) > 2 else ''})" if len(ranked) > 1 else ""
        summary = f"{top}{more}"
    else:
        summary = "no mistakes" if items else "—"
    drill = (
        f'<details class="function"><summary>{summary}</summary><ul class="failures">{"".join(items)}</ul></details>'
        if items
        else summary
    )
    rate = passed / n if n else 0.0
    row = (
        f'<tr data-function="{_e(fn.qualname)}"><td>{_e(fn.qualname)}</td><td class="num">{points_text(fn.points, None)}</td>'
        f'<td class="num" data-value="{passed}" style="background:{colour(rate)}">{passed}/{n}</td>'
        f'<td class="num">{round(100 * rate)}%</td><td class="num">{with_mistake}</td><td class="num">{len(not_started)}</td>'
        f'<td class="num">{len(missing)}</td><td class="num">{len(ranked)}</td><td>{drill}</td></tr>'
    )
    return row, rate


def _student_details(index: int, result: StudentResult, functions, total: float, max_score: float) -> str:
    by_name = {s.qualname: s for s in result.scores}
    parts = [f'<p class="review">needs review: {_e(line)}</p>' for line in result.review]
    for fn in functions:
        score = by_name.get(fn.qualname)
        if score is None:
            parts.append(f"<h4>{_e(fn.qualname)}: not graded</h4>")
            continue
        parts.append(
            f"<h4>{_e(fn.qualname)}: {points_text(score.points)}/{points_text(fn.points)}</h4><pre>{_e(function_output(score))}</pre>"
        )
    return (
        f'<details class="student" id="student-{index}"><summary>{_e(result.student)}: {points_text(total)}/{points_text(max_score)}</summary>'
        f"{''.join(parts)}</details>"
    )


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
    n = len(results)
    incomplete_note = f'\n<p class="incomplete"><strong>INCOMPLETE:</strong> {_e(incomplete)}</p>' if incomplete else ""

    by_function: dict[str, list] = {fn.qualname: [] for fn in functions}
    for result in results:
        for score in result.scores:
            by_function.get(score.qualname, []).append((result.student, score))
    function_rows, rates = [], []
    for fn in functions:
        row, rate = _function_row(fn, n, by_function[fn.qualname])
        function_rows.append(row)
        rates.append(rate)

    # with a late policy in force the headline, the histogram and the first score column are the final scores
    finals = [
        late.get(r.student, Lateness(None, None, 0.0)).final(t) if late is not None else t
        for r, t in zip(results, totals)
    ]
    late_head = (
        '<th class="num" data-type="number">raw</th><th>submitted</th><th data-type="number">late by</th>'
        if late is not None
        else ""
    )
    head = "".join(f'<th class="num" data-type="number" title="{_e(c)}">{_e(c.split(".", 1)[1])}</th>' for c in columns)
    student_rows, details = [], []
    nothing = 0
    for index, (result, total) in enumerate(zip(results, totals)):
        earned = {f"{s.module}.{s.function}": s.points for s in result.scores}
        cells = "".join(_cell(earned.get(c, 0.0), max_of[c]) for c in columns)
        empty = submitted_nothing(result)
        nothing += empty
        note = '<span class="tag none">no submission</span>' if empty else ""
        warnings = [*submission_warnings(result), *(notes or {}).get(result.student, [])]
        note += "".join(f' <span class="tag warn">{_e(w)}</span>' for w in warnings)
        if result.review:  # the screen's findings, the audit hook's, tampering: for the instructor to look at
            note += f'<span class="tag review" title="{_e("; ".join(result.review))}">needs review</span>'
        late_cells = ""
        if late is not None:
            info = late.get(result.student, Lateness(None, None, 0.0))
            late_seconds = int(info.late_by.total_seconds()) if info.late_by else 0
            if info.late_by is not None:
                note += (
                    f' <span class="tag late" title="{_e(info.rule)}">late, {points_text(100 * info.penalty)}% off '
                    f"({_e(info.rule)})</span>"
                )
            late_cells = (
                _cell(total, max_score)
                + f'<td class="time">{_e(format_time(info.submitted_at))}</td>'
                + f'<td class="num time" data-value="{late_seconds}">{_e(format_late_by(info.late_by))}</td>'
            )
        row_class = ' class="nosub"' if empty else ""
        student_rows.append(
            f'<tr{row_class}><td data-value="{_e(result.student)}">'
            f'<button class="student" data-target="student-{index}">{_e(result.student)}</button></td>'
            f"{_cell(finals[index], max_score)}{late_cells}<td>{note}</td>{cells}</tr>"
        )
        details.append(_student_details(index, result, functions, total, max_score))

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
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    legend = "".join(f'<span style="background:{colour(f)}">{round(100 * f)}%</span>' for f in (0, 0.25, 0.5, 0.75, 1))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<title>{_e(course.title)}: class report</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{_e(course.title)}: class report</h1>{incomplete_note}
<p id="summary">{_e(summary)}</p>
<div class="figures">
<figure id="distribution">{score_histogram(finals, max_score)}<figcaption>{"Final score distribution (after the late policy)" if late is not None else "Score distribution"}</figcaption></figure>
<figure id="pass-rates">{pass_rate_chart([fn.qualname for fn in functions], rates)}<figcaption>Pass rate per function, in course order</figcaption></figure>
</div>
<h2>Functions, in course order</h2>
<p>A mistake is a failed check of submitted, started code; "not started" (still the stub) and "not submitted" (the module file is missing) are counted apart. Click a function's failures to see who hit each.</p>
<div class="scroll">
<table id="functions">
<thead><tr><th>function</th><th class="num">points</th><th class="num">passed</th><th class="num">pass rate</th><th class="num">mistakes</th><th class="num">not started</th><th class="num">not submitted</th><th class="num">distinct mistakes</th><th>failures (most common first)</th></tr></thead>
<tbody>
{chr(10).join(function_rows)}
</tbody>
</table>
</div>
<h2>Students</h2>
<p>Click a column to sort by it (again to reverse); click a student to read their messages. <span class="legend">Share of the points: {legend}</span></p>
<div class="scroll">
<table id="students" class="sortable">
<thead><tr><th>student</th><th class="num" data-type="number">{"final" if late is not None else "score"}</th>{late_head}<th>note</th>{head}</tr></thead>
<tbody>
{chr(10).join(student_rows)}
</tbody>
</table>
</div>
<h2>Each student's messages</h2>
<div id="student-details">
{chr(10).join(details)}
</div>
<script>{SCRIPT}</script>
</body>
</html>
"""
