"""The kit as an nbgrader course, end to end with the real nbgrader (no mocks).

Builds a course directory from this kit, releases ``at_updates`` with
``nbgrader generate_assignment``, autogrades three submitted notebooks and
exports the grades: the gradebook and the CSV hold the scores the checks give.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.core.course import load_course
from autograder.grading.outputs.gradebook import grade_id, write_gradebook
from autograder.notebooks.builder import build_course, solution_id

ROOT = Path(__file__).resolve().parents[2]
MODULE = "at_updates"

WRONG_CLAMP = """\
def clamp_at(x, indices, lo, hi):
    return jnp.clip(x, lo, hi)  # clamps every entry, not only those at indices
"""

IMPURE_SCATTER = """\
_seen = []

def scatter_add(x, indices, updates):
    _seen.append(indices)  # module-level state: caught by the hidden purity check
    return x.at[indices].add(updates)
"""


def nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # nbgrader runs `alembic` from PATH; the kernels must import this kit's autograder
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("JAX_COURSE_ROOT", None)
    env.pop("CI", None)
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def read_nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def cells_by_id(nb: dict) -> dict[str, dict]:
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in nb["cells"] if "nbgrader" in c["metadata"]}


def source_of(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def without_markers(source: str) -> str:
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def submit(course_dir: Path, student: str, nb: dict) -> None:
    path = course_dir / "submitted" / student / MODULE / f"{MODULE}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")


def filled(release: dict, answers: dict[str, str]) -> dict:
    nb = json.loads(json.dumps(release))
    cells = cells_by_id(nb)
    for function, source in answers.items():
        cells[solution_id(function)]["source"] = source
    return nb


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, course):
    """Build, release, submit three notebooks, autograde and export; return what the test inspects."""
    course_dir = tmp_path_factory.mktemp("nbgrader-course")
    written = build_course(ROOT, course_dir, [MODULE])
    assert written == [course_dir / "source" / MODULE / f"{MODULE}.ipynb"]
    nbgrader(course_dir, "generate_assignment", MODULE)

    source = read_nb(written[0])
    release = read_nb(course_dir / "release" / MODULE / f"{MODULE}.ipynb")
    functions = [fn.name for fn in course.module(MODULE).functions]
    reference = {f: without_markers(source_of(cells_by_id(source)[solution_id(f)])) for f in functions}

    submit(course_dir, "full", filled(release, reference))
    submit(course_dir, "untouched", release)
    submit(course_dir, "mixed", filled(release, {**reference, "clamp_at": WRONG_CLAMP, "scatter_add": IMPURE_SCATTER}))

    seconds = {}
    for student in ("full", "untouched", "mixed"):
        start = time.perf_counter()
        nbgrader(course_dir, "autograde", MODULE, "--student", student)
        seconds[student] = time.perf_counter() - start
    print(f"\nnbgrader autograde seconds per submission: {seconds}")
    nbgrader(course_dir, "export", "--to", str(course_dir / "grades.csv"))
    return {"dir": course_dir, "source": source, "release": release, "seconds": seconds}


def expected_points(course) -> dict[str, dict[str, float]]:
    module = course.module(MODULE)
    full = {fn.name: fn.points for fn in module.functions}
    scatter = module.function("scatter_add")
    assert scatter.hidden == ("test_scatter_add_is_pure",), "the test relies on this hidden check in course.toml"
    return {
        "full": full,
        "untouched": dict.fromkeys(full, 0.0),
        # wrong values earn nothing; the impure one fails 1 of its 3 checks (the hidden one)
        "mixed": {**full, "clamp_at": 0.0, "scatter_add": round(scatter.points * 2 / 3, 2)},
    }


def test_release_has_no_solutions_and_no_hidden_checks(graded, course):
    source, release = cells_by_id(graded["source"]), cells_by_id(graded["release"])
    solutions = (ROOT / "solutions" / f"{MODULE}.py").read_text(encoding="utf-8")
    for fn in course.module(MODULE).functions:
        body = [line.strip() for line in without_markers(source_of(source[solution_id(fn.name)])).splitlines()]
        answer = [line for line in body if line.startswith(("return", "n =", "idx ="))]
        assert answer and all(line in solutions for line in answer)  # the source holds the reference...
        released = source_of(release[solution_id(fn.name)])
        assert "raise NotImplementedError()" in released
        assert "BEGIN SOLUTION" not in released
        assert not any(line in released for line in answer), released  # ...the release does not
        test_cell = release[grade_id(fn.name)]
        assert test_cell["metadata"]["nbgrader"]["points"] == fn.points
        assert test_cell["metadata"]["nbgrader"]["grade"] is True
    hidden_source = source_of(source[grade_id("scatter_add")])
    assert "BEGIN HIDDEN TESTS" in hidden_source and "test_scatter_add_is_pure" in hidden_source
    released_text = json.dumps(graded["release"])
    assert "HIDDEN" not in released_text and "test_scatter_add_is_pure" not in released_text


def test_gradebook_holds_the_scores_of_the_checks(graded, course):
    from nbgrader.api import Gradebook

    expected = expected_points(course)
    with Gradebook(f"sqlite:///{graded['dir'] / 'gradebook.db'}", course_id="") as gb:
        for student, points in expected.items():
            got = {fn: gb.find_grade(grade_id(fn), MODULE, MODULE, student).auto_score for fn in points}
            assert got == pytest.approx(points), student
            assert gb.find_submission(MODULE, student).score == pytest.approx(sum(points.values()))


def test_exported_csv_holds_the_totals(graded, course):
    with open(graded["dir"] / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == MODULE}
    for student, points in expected_points(course).items():
        assert float(rows[student]["score"]) == pytest.approx(sum(points.values()))
        assert float(rows[student]["max_score"]) == course.module(MODULE).points


def test_autograded_notebook_shows_the_messages(graded):
    path = graded["dir"] / "autograded" / "mixed" / MODULE / f"{MODULE}.ipynb"
    cells = cells_by_id(read_nb(path))
    clamp = "".join(source_of({"source": o.get("text", "")}) for o in cells[grade_id("clamp_at")]["outputs"])
    assert re.search(r"clamp_at: result differs from the reference", clamp), clamp
    assert "hint:" in clamp
    scatter = "".join(source_of({"source": o.get("text", "")}) for o in cells[grade_id("scatter_add")]["outputs"])
    assert "module-level variable '_seen'" in scatter, scatter
    # nothing reached stderr (nbgrader would give 0 for the cell)
    for cell in cells.values():
        for out in cell.get("outputs", []):
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), out


def test_gradebook_writer_feeds_formgrader_and_export(tmp_path, course):
    """CLI scores written into a fresh gradebook are what ``nbgrader export`` reports."""
    from nbgrader.api import Gradebook

    course_dir = tmp_path / "course"
    build_course(ROOT, course_dir, [MODULE])
    db = f"sqlite:///{course_dir / 'gradebook.db'}"
    results = {
        "ann": {"at_updates.set_diagonal": 2.0, "at_updates.scatter_add": 1.33, "at_updates.clamp_at": 0.0},
        "ben": {
            "at_updates.set_diagonal": 2.0,
            "at_updates.scatter_add": 2.0,
            "at_updates.clamp_at": 3.0,
            "at_updates.replace_negatives": 3.0,
        },
    }
    assert write_gradebook(results, db, course) == 7
    assert write_gradebook(results, db, course) == 7  # idempotent: updates, does not duplicate
    with Gradebook(db, course_id="") as gb:
        assert gb.find_grade(grade_id("scatter_add"), MODULE, MODULE, "ann").auto_score == pytest.approx(1.33)
        assert gb.find_submission(MODULE, "ben").score == pytest.approx(10.0)
        assert gb.find_submission(MODULE, "ann").max_score == pytest.approx(10.0)
    with pytest.raises(ValueError, match="outside"):
        write_gradebook({"cy": {"at_updates.set_diagonal": 5.0}}, db, course)
    with pytest.raises(KeyError):
        write_gradebook({"cy": {"at_updates.no_such_function": 1.0}}, db, course)
    nbgrader(course_dir, "export", "--to", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)}
    assert rows == pytest.approx({"ann": 3.33, "ben": 10.0})


def test_leak_check_blames_only_the_function_that_leaks():
    """A notebook namespace is shared by all functions: an earlier leak is not the next function's fault."""
    import types

    import jax.numpy as jnp

    from autograder.checks import purity
    from autograder.core.failures import CheckFailure

    module = types.ModuleType("shared")
    module._seen = []

    def leaky(x):
        module._seen.append(x)
        return x

    def clean(x):
        return x + 1

    with pytest.raises(CheckFailure, match="leak|tracer"):
        purity.assert_no_leaked_tracers(leaky, jnp.ones(2), module=module)
    assert module._seen, "the leak must have happened for this test to mean anything"
    purity.assert_no_leaked_tracers(clean, jnp.ones(2), module=module)


TOY_COURSE = """\
format = 1
title = "Toy"
welcome = "hi"

[[modules]]
name = "toy"
topic = "shapes of answers the builder must handle"

  [[modules.functions]]
  name = "double"
  points = 1
  hint = "times two"

  [[modules.functions]]
  name = "fast_square"
  points = 2
  hint = "jit it"

  [[modules.functions]]
  name = "Counter"
  points = 1.5
  hint = "a class"
  hidden = ["test_Counter_hidden"]
"""

TOY_EXERCISE = '''\
"""Module 9 — toy.

Some ``teaching`` text.

Run the checks with

    pytest exercises/test_toy.py
"""

import jax.numpy as jnp

SCALE = 2.0


class Given:
    """Given code stays visible."""


def double(x):
    """Return ``SCALE * x``."""
    # TODO: multiply
    raise NotImplementedError


def fast_square(x):
    """Square ``x``, compiled with jax.jit."""
    raise NotImplementedError


class Counter:
    """Counts."""

    def __init__(self, start):
        """Start at ``start``."""
        raise NotImplementedError

    def bump(self):
        raise NotImplementedError
'''

TOY_SOLUTION = '''\
"""Reference."""

import functools

import jax
import jax.numpy as jnp

SCALE = 2.0


def _square(x):
    return x * x


def double(x):
    """Reference docstring, not shown."""
    return SCALE * x


@functools.partial(jax.jit)
def fast_square(x):
    return _square(x)


class Counter:
    step = 1

    def __init__(self, start):
        self.value = start

    def bump(self):
        self.value += self.step
        return self.value
'''

TOY_CHECKS = """\
def test_double(student):
    assert student.double(3.0) == 6.0

def test_fast_square(student):
    assert student.fast_square(3.0) == 9.0

def test_Counter_counts(student):
    assert student.Counter(1).bump() == 2

def test_Counter_hidden(student):
    assert student.Counter(5).bump() == 6
"""


@pytest.fixture
def toy_kit(tmp_path):
    kit = tmp_path / "kit"
    (kit / "exercises").mkdir(parents=True)
    (kit / "solutions").mkdir()
    (kit / "course.toml").write_text(TOY_COURSE, encoding="utf-8")
    (kit / "exercises" / "toy.py").write_text(TOY_EXERCISE, encoding="utf-8")
    (kit / "exercises" / "test_toy.py").write_text(TOY_CHECKS, encoding="utf-8")
    (kit / "solutions" / "toy.py").write_text(TOY_SOLUTION, encoding="utf-8")
    return kit


def _released(nb: dict) -> dict:
    """What ``generate_assignment`` makes of the solution and hidden-test regions (nbgrader's own preprocessors)."""
    import nbformat
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    node = nbformat.from_dict(json.loads(json.dumps(nb)))
    node, _ = ClearSolutions().preprocess(node, {})
    node, _ = ClearHiddenTests().preprocess(node, {})
    return json.loads(nbformat.writes(node))


def _run_cells(nb: dict, kinds: set[str]) -> dict:
    ns: dict = {}
    for cell in nb["cells"]:
        meta = cell["metadata"]["nbgrader"]
        kind = "tests" if meta["grade"] else "solution" if meta["solution"] else "setup"
        if cell["cell_type"] == "code" and kind in kinds:
            exec(compile(source_of(cell), meta["grade_id"], "exec"), ns)
    return ns


def test_builder_handles_given_code_decorators_helpers_and_classes(toy_kit, tmp_path):
    import nbformat

    (path,) = build_course(toy_kit, tmp_path / "course")
    nb = read_nb(path)
    nbformat.validate(nbformat.from_dict(nb))
    cells = cells_by_id(nb)
    intro = source_of(cells["intro"])
    assert intro.startswith("# Module 9 — toy") and "`teaching`" in intro and "pytest" not in intro
    assert "Run the checks" not in intro
    setup = source_of(cells["setup"])
    assert "SCALE = 2.0" in setup and "class Given" in setup and "import functools" in setup
    assert "def double" not in setup and "_square" not in setup

    # the reference, filled in, works; its helper travels inside the solution region
    ns = _run_cells(nb, {"setup", "solution"})
    assert ns["double"](3.0) == 6.0 and float(ns["fast_square"](3.0)) == 9.0 and hasattr(ns["fast_square"], "lower")
    counter = ns["Counter"](1)
    assert counter.bump() == 2
    assert "Reference docstring" not in source_of(cells[solution_id("double")])
    assert "# TODO: multiply" in source_of(cells[solution_id("double")])
    assert cells[grade_id("Counter")]["metadata"]["nbgrader"]["points"] == 1.5

    # released: every answer is a stub again, and the stubs still define their names
    released = _released(nb)
    rcells = cells_by_id(released)
    for name in ("double", "fast_square", "Counter"):
        text = source_of(rcells[solution_id(name)])
        assert "raise NotImplementedError()" in text and "BEGIN SOLUTION" not in text
        assert "return _square(x)" not in text and "return SCALE * x" not in text and "self.value" not in text
    assert "test_Counter_hidden" not in json.dumps(released)
    ns = _run_cells(released, {"setup", "solution"})
    assert callable(ns["double"]) and callable(ns["Counter"])
    with pytest.raises(NotImplementedError):
        ns["double"](1.0)


def test_hidden_check_names_are_validated(toy_kit, tmp_path):
    from autograder.core.course import CourseError

    toml = toy_kit / "course.toml"
    toml.write_text(TOY_COURSE.replace('hidden = ["test_Counter_hidden"]', 'hidden = ["test_Counter_typo"]'))
    with pytest.raises(CourseError, match="test_Counter_typo"):
        build_course(toy_kit, tmp_path / "course")
    toml.write_text(TOY_COURSE.replace('hidden = ["test_Counter_hidden"]', 'hidden = ["test_double"]'))
    with pytest.raises(CourseError, match="another function"):
        build_course(toy_kit, tmp_path / "course")


def test_gradebook_writer_adds_to_a_generated_gradebook(graded, course):
    """Scores graded outside notebooks land in the gradebook ``generate_assignment`` and ``autograde`` filled."""
    from nbgrader.api import Gradebook

    db = f"sqlite:///{graded['dir'] / 'gradebook.db'}"
    scores = {f"{MODULE}.{fn.name}": fn.points for fn in course.module(MODULE).functions}
    scores[f"{MODULE}.clamp_at"] = 1.0
    assert write_gradebook({"from_cli": scores}, db, course) == 4
    with Gradebook(db, course_id="") as gb:
        assert gb.find_submission(MODULE, "from_cli").score == pytest.approx(course.module(MODULE).points - 2)
        assert gb.find_submission(MODULE, "full").score == pytest.approx(course.module(MODULE).points)
        assert len(gb.find_assignment(MODULE).notebooks[0].grade_cells) == len(course.module(MODULE).functions)
