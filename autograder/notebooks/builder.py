"""The kit as an nbgrader course (``autograder nbgrader COURSE_DIR``, see :mod:`.api`).

:func:`build_course` writes (or rewrites) a real nbgrader course directory
from ``course.toml``, the exercise stubs and the references — nothing is
written twice:

- ``nbgrader_config.py`` (:mod:`.config`, from a template): points the notebook kernels at the course's own copy
  of the course files (``JAX_COURSE_ROOT``) and its own venv's interpreter (a
  kernelspec first on ``JUPYTER_PATH``), sets the per-cell timeout from
  ``[grading]`` and puts the pre-flight (:mod:`.preflight`) in front of
  nbgrader's autograde preprocessors;
- what grading needs without the kit's checkout or venv (:mod:`.environment`):
  the course files, the kit's wheel, ``requirements.txt`` and ``setup.sh``;
- ``source/<module>/<module>.ipynb`` for every module, in order:

  * a locked markdown cell teaching the module (its docstring) and one on how
    the notebook is graded;
  * a locked setup cell: the exercise file's imports and given code, plus any
    import the reference needs;
  * per function: a locked markdown cell with its stub docstring and points,
    a solution cell (the stub's signature and docstring around the
    reference's body inside ``### BEGIN SOLUTION`` / ``### END SOLUTION``,
    which ``nbgrader generate_assignment`` turns into
    ``raise NotImplementedError()``), and an autograded test cell worth the
    function's points that calls :func:`autograder.notebooks.runtime.check` — the
    checks of ``exercises/test_<module>.py``, with the hidden ones named
    inside ``### BEGIN HIDDEN TESTS``.

A function's grade cell is named :func:`~autograder.grading.desk.gradebook.grade_id`, as the gradebook
``grade --gradebook`` writes names it (:mod:`autograder.grading.desk.gradebook`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from autograder.core.course import Course, CourseError, Function, Module, load_course
from autograder.core.outcomes import points_text
from autograder.grading.desk.gradebook import grade_id
from autograder.notebooks.config import CONFIG_MARKER, config_source
from autograder.notebooks.environment import write_environment
from autograder.notebooks.sources import Definition, ModuleSources, drop_pytest_paragraphs, markdown

SCHEMA_VERSION = 3
SETUP_ID = "setup"
# The first lines of every notebook's setup cell: the kernel's JAX gets the course's CPU devices
# before anything computes with it (it fixes the number at its first operation).
DEVICES_SETUP = """\
from autograder.notebook import use_course_backend
use_course_backend()  # the course's 8 CPU devices, quick compilation; run this cell before anything else
"""


def solution_id(function: str) -> str:
    return f"{function}_solution"


def check_hidden(course: Course) -> None:
    """Every hidden check named in ``course.toml`` is a check of that function in its test file
    (the rule of ``autograder check-course``)."""
    from autograder.authoring.check import hidden_problems

    for module in course.modules:
        for problem in hidden_problems(course, module, ModuleSources(course, module).check_names()):
            raise CourseError(f"{problem.what}; fix: {problem.fix}")


# --- notebooks -------------------------------------------------------------------


def _meta(kind: str, cell_id: str, points: float | None = None) -> dict:
    meta = {
        "grade": kind == "tests",
        "grade_id": cell_id,
        "locked": kind != "solution",
        "schema_version": SCHEMA_VERSION,
        "solution": kind == "solution",
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def _cell(cell_type: str, source: str, meta: dict) -> dict:
    cell = {"cell_type": cell_type, "id": meta["nbgrader"]["grade_id"], "metadata": meta, "source": source.rstrip("\n")}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _points(points: float) -> str:
    return f"{points_text(points, None)} point" + ("" if points == 1 else "s")


def check_cell_source(fn: Function) -> str:
    lines = [
        f"# Checks of {fn.name} ({_points(fn.points)}): the same checks as `pytest exercises/test_{fn.module}.py`.",
        "# The number this cell shows is your score for the function.",
        "from autograder.notebooks.runtime import check",
        "",
    ]
    if fn.hidden:
        lines += [
            "hidden_checks = []",
            "### BEGIN HIDDEN TESTS",
            f"hidden_checks = {list(fn.hidden)!r}",
            "### END HIDDEN TESTS",
            f"check({fn.module!r}, {fn.name!r}, globals(), hidden=hidden_checks)",
        ]
    else:
        lines.append(f"check({fn.module!r}, {fn.name!r}, globals())")
    return "\n".join(lines)


def _signature(node: Definition) -> str:
    if isinstance(node, ast.ClassDef):
        return node.name
    return f"{node.name}({ast.unparse(node.args)})"


def module_notebook(course: Course, module: Module) -> dict:
    """The nbgrader source notebook of one module."""
    src = ModuleSources(course, module)
    index = [m.name for m in course.modules].index(module.name) + 1
    doc = drop_pytest_paragraphs(markdown(src.docstring())) if src.docstring() else ""
    first, _, rest = doc.partition("\n")
    title = first.rstrip(".") if first else f"Module {index} — {module.topic}"
    intro = f"# {title}\n\n{rest.strip()}" if rest.strip() else f"# {title}"
    how = (
        f"## How this notebook is graded\n\n"
        f"Write each function in the cell that says `YOUR CODE HERE` (replace `raise NotImplementedError()`), "
        f"run it, then run the check cell below it. The check cell runs the same checks as "
        f"`pytest exercises/test_{module.name}.py`: it prints what failed and a hint, and shows your points "
        f"for that function. Your functions must be pure (no global state, no changed arguments) and work "
        f"under `jax.jit`. Do not change the check cells. This module is worth {points_text(module.points, None)} points."
    )
    if any(fn.hidden for fn in module.functions):
        how += (
            "\n\nSome functions have more checks than their cell runs here: those run when your notebook "
            "is graded, so the points a check cell shows now can still go down."
        )
    cells = [
        _cell("markdown", intro, _meta("text", "intro")),
        _cell("markdown", how, _meta("text", "how_graded")),
    ]
    cells.append(_cell("code", DEVICES_SETUP + "\n" + src.setup_code(), _meta("text", SETUP_ID)))
    for fn in module.functions:
        stub = src.stubs[fn.name]
        doc = ast.get_docstring(stub, clean=True) or ""
        text = f"## `{_signature(stub)}` — {_points(fn.points)}"
        if doc:
            text += "\n\n" + markdown(doc)
        cells.append(_cell("markdown", text, _meta("text", f"{fn.name}_task")))
        cells.append(_cell("code", src.solution_cell(fn), _meta("solution", solution_id(fn.name))))
        cells.append(_cell("code", check_cell_source(fn), _meta("tests", grade_id(fn.name), fn.points)))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


# What autograde runs before nbgrader's own preprocessors: the pre-flight (autograder.notebooks.preflight).
def build_course(kit_root: Path | str, course_dir: Path | str, modules: list[str] | None = None) -> list[Path]:
    """Write ``nbgrader_config.py``, ``source/<module>/<module>.ipynb`` and the course's own environment
    (:func:`~autograder.notebooks.environment.write_environment`); return the notebooks written."""
    course = load_course(kit_root)
    check_hidden(course)
    course_dir = Path(course_dir).resolve()
    course_dir.mkdir(parents=True, exist_ok=True)
    config = course_dir / "nbgrader_config.py"
    if config.exists() and CONFIG_MARKER not in config.read_text(encoding="utf-8"):
        raise CourseError(
            f"{config} exists and was not written by this kit; move it to nbgrader_config_local.py "
            "(the generated config loads it) and run again"
        )
    config.write_text(config_source(course), encoding="utf-8")
    wanted = modules or [m.name for m in course.modules]
    written = []
    for name in wanted:
        module = course.module(name)
        path = course_dir / "source" / module.name / f"{module.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(module_notebook(course, module), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        written.append(path)
    try:
        write_environment(course, course_dir)
    except FileExistsError as err:
        raise CourseError(str(err)) from None
    return written
