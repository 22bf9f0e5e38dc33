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
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore, StudentResult
from autograder.core.status import Status


def points(value: float) -> str:
    return f"{round(value, 2):g}"


def function_columns(course: Course, modules: tuple[str, ...]) -> list[str]:
    return [fn.qualname for fn in course.functions if fn.module in modules]


def points_by_student(results: list[StudentResult]) -> dict[str, dict[str, float]]:
    """``{student: {"<module>.<function>": points}}``, e.g. for an nbgrader gradebook."""
    return {r.student: r.points_by_function() for r in results}


def grades_csv(course: Course, modules: tuple[str, ...], results: list[StudentResult], incomplete: str | None = None) -> str:
    columns = function_columns(course, modules)
    max_score = sum(fn.points for fn in course.functions if fn.module in modules)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "score", "max_score", *columns])
    for result in sorted(results, key=lambda r: r.student):
        earned = result.points_by_function()
        total = student_total(result, columns)
        writer.writerow([result.student, points(total), points(max_score), *(points(earned.get(c, 0.0)) for c in columns)])
    if incomplete:
        buffer.write(f"# INCOMPLETE: {incomplete}\n")
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
    tests = []
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
                "status": str(Status.PASSED if score.status == Status.PASSED else Status.FAILED),  # Gradescope knows these two
                "output": function_output(score),
                "visibility": "visible",
            }
        )
    total = round(sum(t["score"] for t in tests), 2)
    max_total = sum(t["max_score"] for t in tests)
    payload = {
        "score": total,
        "output": f"{course.title}: {points(total)}/{points(max_total)}",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return line if len(line) <= 160 else line[:157] + "..."


def most_common_failures(scores: list[FunctionScore], count: int) -> list[tuple[str, int]]:
    """The ``count`` most frequent first lines of the failure messages of one function, with how many students hit each."""
    failures = Counter(
        line
        for s in scores
        if s.status != Status.PASSED
        for line in dict.fromkeys(_first_line(m) for m in s.messages or ["(no message)"])  # once per student
    )
    return sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))[:count]


def function_scores(results: list[StudentResult], module: str, function: str) -> list[FunctionScore]:
    return [s for r in results for s in r.scores if s.module == module and s.function == function]


def student_total(result: StudentResult, columns: list[str]) -> float:
    earned = result.points_by_function()
    return sum(earned.get(c, 0.0) for c in columns)


def summary_md(course: Course, modules: tuple[str, ...], results: list[StudentResult], incomplete: str | None = None) -> str:
    n = len(results)
    note = [f"> **INCOMPLETE:** {incomplete}", ""] if incomplete else []
    lines = [*note, f"# {course.title}: class summary", "", f"{n} students graded.", ""]
    for module in course.modules:
        if module.name not in modules:
            continue
        lines += [f"## {module.name} — {module.topic}", "", "| function | passed | mean points | most common failures |", "|---|---|---|---|"]
        for fn in module.functions:
            scores = function_scores(results, fn.module, fn.name)
            passed = sum(s.status == Status.PASSED for s in scores)
            mean = sum(s.points for s in scores) / n if n else 0.0
            common = most_common_failures(scores, 3)
            text = "<br>".join(f"{count}× {_md(msg)}" for msg, count in common) or "—"
            lines.append(f"| {fn.name} | {passed}/{n} | {mean:.2f}/{points(fn.points)} | {text} |")
        lines.append("")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_student(out: Path, course: Course, modules: tuple[str, ...], result: StudentResult) -> None:
    folder = Path(out) / result.student
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "results.json", results_json(course, modules, result))


def write_all(
    out: Path, course: Course, modules: tuple[str, ...], results: list[StudentResult], incomplete: str | None = None
) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        write_student(out, course, modules, result)
    _write(out / "summary.md", summary_md(course, modules, results, incomplete))
    _write(out / "grades.csv", grades_csv(course, modules, results, incomplete))
    from autograder.grading.html_report import report_html

    _write(out / "report.html", report_html(course, modules, results, incomplete))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
