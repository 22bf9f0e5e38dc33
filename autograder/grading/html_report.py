"""``OUT/report.html``: the class at a glance, in one self-contained page.

The page has the score distribution, the pass rate of every function in
course order, the most common failure of each function with how many students
hit it, and a table of students that sorts by any column. The plots are drawn
by matplotlib's SVG backend and embedded inline; there is no network access,
no external file, and the only script is the small sorter below, which the
page's Content-Security-Policy allows by its hash: whatever a student names a
folder or puts in an error message is escaped text, and could not run even if
it were not. Like the other outputs it is deterministic (no dates, fixed SVG ids).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import statistics

from autograder.core.course import Course
from autograder.grading.class_report import (
    function_columns,
    function_scores,
    most_common_failures,
    points,
    student_total,
)
from autograder.core.outcomes import StudentResult
from autograder.core.status import Status

SORT_SCRIPT = """
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
"""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; padding: 0 1rem; color: #222; }
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
    axes.set_xlabel(f"score (out of {points(max_score)})")
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


def report_html(
    course: Course, modules: tuple[str, ...], results: list[StudentResult], incomplete: str | None = None
) -> str:
    columns = function_columns(course, modules)
    functions = [fn for fn in course.functions if fn.module in modules]
    max_score = sum(fn.points for fn in functions)
    results = sorted(results, key=lambda r: r.student)
    totals = [student_total(r, columns) for r in results]
    n = len(results)
    incomplete_note = f'\n<p class="incomplete"><strong>INCOMPLETE:</strong> {_e(incomplete)}</p>' if incomplete else ""

    function_rows, rates = [], []
    for fn in functions:
        scores = function_scores(results, fn.module, fn.name)
        passed = sum(s.status == Status.PASSED for s in scores)
        rates.append(passed / n if n else 0.0)
        common = most_common_failures(scores, 1)
        failure = (
            f'<td class="num">{common[0][1]}</td><td><code>{_e(common[0][0])}</code></td>' if common else '<td class="num">0</td><td>—</td>'
        )
        function_rows.append(
            f'<tr><td>{_e(fn.qualname)}</td><td class="num">{fn.points:g}</td>'
            f'<td class="num" data-value="{passed}">{passed}/{n}</td>'
            f'<td class="num">{round(100 * rates[-1])}%</td>{failure}</tr>'
        )

    head = "".join(f'<th class="num" data-type="number" title="{_e(c)}">{_e(c.split(".", 1)[1])}</th>' for c in columns)
    student_rows = []
    for result, total in zip(results, totals):
        earned = {f"{s.module}.{s.function}": s.points for s in result.scores}
        cells = "".join(f'<td class="num">{points(earned.get(c, 0.0))}</td>' for c in columns)
        student_rows.append(f'<tr><td>{_e(result.student)}</td><td class="num">{points(total)}</td>{cells}</tr>')

    summary = f"{n} students graded; modules: {', '.join(modules)}; maximum {points(max_score)} points."
    if totals:
        summary += f" Mean {points(statistics.mean(totals))}, median {points(statistics.median(totals))}."
    script_hash = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
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
<figure id="distribution">{score_histogram(totals, max_score)}<figcaption>Score distribution</figcaption></figure>
<figure id="pass-rates">{pass_rate_chart([fn.qualname for fn in functions], rates)}<figcaption>Pass rate per function, in course order</figcaption></figure>
</div>
<h2>Functions, in course order</h2>
<table id="functions">
<thead><tr><th>function</th><th class="num">points</th><th class="num">passed</th><th class="num">pass rate</th><th class="num">students hit</th><th>most common failure</th></tr></thead>
<tbody>
{chr(10).join(function_rows)}
</tbody>
</table>
<h2>Students</h2>
<p>Click a column to sort by it (again to reverse).</p>
<div class="scroll">
<table id="students" class="sortable">
<thead><tr><th>student</th><th class="num" data-type="number">score</th>{head}</tr></thead>
<tbody>
{chr(10).join(student_rows)}
</tbody>
</table>
</div>
<script>{SORT_SCRIPT}</script>
</body>
</html>
"""
