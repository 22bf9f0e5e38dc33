"""Every file ``grade`` writes into OUT, written atomically (a reader never sees half a file).

:func:`write_student` as soon as a student is graded (``OUT/<student>/results.json``, what ``--resume`` reads
back), :func:`write_all` when the run ends: each student's ``results.json`` and ``feedback.html``,
``summary.md``, ``grades.csv`` and ``report.html``.
"""

from __future__ import annotations

from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import StudentResult
from autograder.grading.outputs.class_report import grades_csv, results_json, summary_md
from autograder.grading.outputs.feedback import feedback_html
from autograder.grading.outputs.html_report import report_html
from autograder.grading.outputs.late import Lateness
from autograder.runtime import atomic


def write_student(out: Path, course: Course, modules: tuple[str, ...], result: StudentResult) -> None:
    folder = Path(out) / result.student
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / "results.json", results_json(course, modules, result))


def write_all(
    out: Path,
    course: Course,
    modules: tuple[str, ...],
    results: list[StudentResult],
    incomplete: str | None = None,
    late: dict[str, Lateness] | None = None,
) -> None:
    """Every output: each student's ``results.json`` and ``feedback.html``, ``summary.md``, ``grades.csv``,
    ``report.html``. ``late``: each student's submission time and penalty, when known."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        write_student(out, course, modules, result)
        info = late.get(result.student) if late else None
        write_text(out / result.student / "feedback.html", feedback_html(course, modules, result, info))
    write_text(out / "summary.md", summary_md(course, modules, results, incomplete))
    write_text(out / "grades.csv", grades_csv(course, modules, results, incomplete, late))
    write_text(out / "report.html", report_html(course, modules, results, incomplete, late))


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file)."""
    atomic.write_text(path, text)
