"""``autograder grade``: what the command does, for :mod:`autograder.cli` (which only parses)."""

from __future__ import annotations

import sys
from pathlib import Path

from autograder.core.course import Course
from autograder.grading import class_report
from autograder.grading.grader import Grader, Options, Progress, find_students


def select_modules(course: Course, only: list[str] | None) -> tuple[str, ...]:
    """The modules to grade, in course order; raises SystemExit naming an unknown one."""
    names = [m.name for m in course.modules]
    unknown = [m for m in only or () if m not in names]
    if unknown:
        raise SystemExit(f"autograder grade: unknown module(s) {unknown}; course.toml has {names}")
    return tuple(m for m in names if not only or m in only)


def grade(course: Course, submissions: Path, out: Path, options: Options, gradebook: str | None = None) -> int:
    """Grade every student folder of ``submissions`` and write ``out/grades.csv``, ``out/<student>/results.json``
    and ``out/summary.md`` (and the gradebook, when given). Returns the exit status."""
    if not submissions.is_dir():
        raise SystemExit(f"autograder grade: {submissions} is not a folder")
    out = out.resolve()
    students = find_students(submissions)
    grader = Grader(course, options)
    weak = grader.unconfirmable_functions()
    if weak:
        print(
            f"autograder grade: warning: {', '.join(weak)} have no @pytest.mark.correctness check; "
            "their passes are taken from the student's process without confirmation",
            file=sys.stderr,
        )
    progress = Progress()
    progress(0, len(students))
    try:
        results = grader.grade_class(students, progress)
    finally:
        grader.close()
    progress.finish()
    class_report.write_all(out, course, options.modules, results)
    if gradebook:
        from autograder.notebooks.builder import write_gradebook

        written = write_gradebook(class_report.points_by_student(results), gradebook, course)
        print(f"wrote {written} grades into the gradebook {gradebook}")
    total = sum(fn.points for fn in course.functions if fn.module in options.modules)
    print(f"graded {len(results)} students ({', '.join(options.modules)}; max {total:g} points): {out / 'grades.csv'}")
    return 0
