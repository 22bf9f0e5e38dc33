"""Every file ``grade`` writes into OUT, written atomically (a reader never sees half a file).

:func:`write_student` as soon as a student is graded (``OUT/<student>/results.json``, what ``--resume`` reads
back), :func:`write_all` when the run ends: each student's ``results.json`` and ``feedback.html``,
``summary.md``, ``grades.csv`` and ``report.html``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import StudentResult
from autograder.grading.desk.late import Lateness
from autograder.grading.outputs.class_report import grades_csv, results_json, summary_md
from autograder.grading.outputs.feedback import feedback_html
from autograder.grading.outputs.html_report import report_html
from autograder.runtime import atomic

EXPORTS = ("canvas_import.csv", "moodle_import.csv")
INCOMPLETE = "INCOMPLETE.txt"  # an interrupted run's note, beside grades.csv (a row in it would be data)


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
    exports: dict[str, str] | None = None,
    notes: dict[str, list[str]] | None = None,
) -> None:
    """Every output: each student's ``results.json`` and ``feedback.html``, ``summary.md``, ``grades.csv``,
    ``report.html``, and ``exports`` (the LMS files: name -> text). ``late``: each student's submission time and
    penalty, when known. ``notes``: lines for a student that cost nothing (given code changed). Every text is made before the first is written: the class files are rewritten together
    or, when one cannot be made, not at all."""
    out = Path(out)
    texts: dict[Path, str] = {}
    for result in results:
        info = late.get(result.student) if late else None
        texts[out / result.student / "results.json"] = results_json(course, modules, result)
        texts[out / result.student / "feedback.html"] = feedback_html(
            course, modules, result, info, (notes or {}).get(result.student, [])
        )
    texts[out / "summary.md"] = summary_md(course, modules, results, incomplete)
    texts[out / "grades.csv"] = grades_csv(course, modules, results, incomplete, late)
    texts[out / "report.html"] = report_html(course, modules, results, incomplete, late, notes)
    for name, text in (exports or {}).items():
        texts[out / name] = text
    if incomplete:
        texts[out / INCOMPLETE] = f"INCOMPLETE: {incomplete}\n"
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    if not incomplete:
        (out / INCOMPLETE).unlink(missing_ok=True)


CLASS_FILES = ("grades.csv", "summary.md", "report.html", INCOMPLETE, *EXPORTS)


def _student_folders(out: Path) -> list[Path]:
    """The folders of ``out`` that ``grade`` wrote for a student (they hold its ``results.json``)."""
    if not out.is_dir():
        return []
    return [p for p in out.iterdir() if p.is_dir() and not p.is_symlink() and (p / "results.json").is_file()]


def clear(out: Path, state: str) -> None:
    """Remove what ``grade`` writes into ``out`` (class files, the run's record ``state``, student folders);
    nothing else in the folder is touched."""
    out = Path(out)
    for name in CLASS_FILES:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / state, ignore_errors=True)
    for folder in _student_folders(out):
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale(out: Path, students: list[str], exports: list[str]) -> list[str]:
    """After a fresh run of the class that ``out`` holds: the student folders of students no longer in it and the
    LMS files this run did not write (they would describe the earlier run); returns what was removed."""
    out = Path(out)
    removed = []
    for name in EXPORTS:
        if name not in exports and (out / name).is_file():
            (out / name).unlink()
            removed.append(name)
    for folder in _student_folders(out):
        if folder.name not in students:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name + "/")
    return removed


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file)."""
    atomic.write_text(path, text)
