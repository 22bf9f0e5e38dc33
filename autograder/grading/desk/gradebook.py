"""``grade --gradebook URL``: the class's scores stored in an nbgrader gradebook, so formgrader and
``nbgrader export`` see them.

:func:`write_gradebook` stores ``{student: {"<module>.<function>": points}}`` (as ``grade`` produces). Assignment =
module, notebook = module, grade cell = :func:`grade_id` (``<function>_checks``): the names the generated
notebooks use too (:mod:`autograder.notebooks.builder`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import points_text


def grade_id(function: str) -> str:
    """The nbgrader grade cell of a function's checks."""
    return f"{function}_checks"


def write_gradebook(
    results: dict[str, dict[str, float]],
    db_url: str,
    course: Course,
    *,
    course_id: str = "",
) -> int:
    """Store ``{student: {"<module>.<function>": points}}`` in an nbgrader gradebook.

    Assignments, notebooks and grade cells missing from the gradebook are
    created from ``course.toml`` (with the names the generated notebooks use,
    so a gradebook that ``generate_assignment`` filled matches). Each score
    becomes the grade cell's ``auto_score``. Returns the number of grades written.
    """
    from nbgrader.api import Gradebook, MissingEntry

    by_module: dict[str, dict[str, dict[str, float]]] = {}
    for student, scores in results.items():
        for qualname, points in scores.items():
            module_key, _, function = qualname.partition(".")
            fn = course.module(module_key).function(function)
            if not 0 <= points <= fn.points:
                raise ValueError(
                    f"{student}: {qualname} has {points} points, outside [0, {points_text(fn.points, None)}]"
                )
            by_module.setdefault(module_key, {}).setdefault(student, {})[function] = float(points)

    written = 0
    with _alembic_on_path(), Gradebook(db_url, course_id=course_id) as gb:
        for module_name, students in by_module.items():
            module = course.module(module_name)
            gb.update_or_create_assignment(module.name)
            try:
                gb.find_notebook(module.name, module.name)
            except MissingEntry:
                gb.add_notebook(module.name, module.name)
            for fn in module.functions:
                try:
                    gb.find_grade_cell(grade_id(fn.name), module.name, module.name)
                except MissingEntry:
                    gb.add_grade_cell(
                        grade_id(fn.name), module.name, module.name, max_score=fn.points, cell_type="code"
                    )
            for student, scores in students.items():
                gb.update_or_create_student(student)
                gb.update_or_create_submission(module.name, student)
                for function, points in scores.items():
                    grade = gb.find_grade(grade_id(function), module.name, module.name, student)
                    grade.auto_score = points
                    grade.needs_manual_grade = False
                    written += 1
            gb.db.commit()
    return written


@contextlib.contextmanager
def _alembic_on_path():
    """nbgrader creates and upgrades a gradebook by running ``alembic`` from PATH: use this Python's."""
    if shutil.which("alembic"):
        yield
        return
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + (os.pathsep + old if old else "")
    try:
        yield
    finally:
        os.environ["PATH"] = old
