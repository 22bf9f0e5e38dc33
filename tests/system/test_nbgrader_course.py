"""The kit as an nbgrader course, end to end with the real nbgrader (no mocks), in the course's own environment.

``autograder nbgrader COURSE_DIR --module at_updates`` writes the course, and the course's own
``setup.sh`` builds ``COURSE_DIR/.venv`` from the system's Python 3.11 and nothing of the kit's venv or
checkout (the session fixture ``nbgrader_course_env``, tests/conftest.py; tests/platform_envs.py) and
proves it. That venv's nbgrader then releases ``at_updates`` with ``generate_assignment``, autogrades
submitted notebooks (its pre-flight first) and exports the grades: the gradebook and the CSV hold the
scores the checks give, the same points per function as ``autograder grade`` gives the same functions
(``canonical_grades``). Other ``python3`` kernelspecs planted where Jupyter would look first (a user's,
``JUPYTER_PATH``) are never used: the course's config pins its own venv's interpreter. A broken environment
(the course copy's reference made wrong, a kernel that cannot import JAX) grades nobody, with the
pre-flight's message, and no submission gets an ``auto_score`` of 0.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from platform_envs import base_python, canonical_sources, clean_env

from autograder.core.course import load_course
from autograder.grading.desk.gradebook import grade_id, write_gradebook
from autograder.notebooks import environment
from autograder.notebooks.builder import build_course, solution_id
from autograder.notebooks.config import NBGRADER_AUTOGRADE, PREFLIGHT

ROOT = Path(__file__).resolve().parents[2]
MODULE = "at_updates"
PASSED = re.compile(
    r"pre-flight passed in ([0-9.]+) s: the reference got full marks \(10 points\) and its stubs nothing"
)

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


def kit_nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """nbgrader of the kit's own venv (for commands that start no kernel: export)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # nbgrader runs `alembic`
    env.pop("JAX_COURSE_ROOT", None)
    env.pop("CI", None)
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def decoys(folder: Path) -> dict[str, str]:
    """An environment where another ``python3`` kernelspec comes first, as on an instructor's machine: one in the
    user's Jupyter folder (preferred to the venv's with ``JUPYTER_PREFER_ENV_PATH=0``) and one on
    ``JUPYTER_PATH``; both start the system's Python, which has neither ipykernel nor the kit."""
    home, path = folder / "home", folder / "jupyter-path"
    for data in (home / ".local" / "share" / "jupyter", path):
        spec = data / "kernels" / "python3" / "kernel.json"
        spec.parent.mkdir(parents=True, exist_ok=True)
        argv = [base_python() or "/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec.write_text(json.dumps({"argv": argv, "display_name": "decoy", "language": "python"}))
    return {"HOME": str(home), "JUPYTER_PATH": str(path), "JUPYTER_PREFER_ENV_PATH": "0"}


def nbgrader(
    course_dir: Path, venv_course: Path, *args: str, env: dict[str, str], ok: bool = True
) -> subprocess.CompletedProcess:
    """``venv_course/.venv/bin/nbgrader ARGS`` in ``course_dir``: the course's own environment, nothing of the kit's."""
    proc = subprocess.run(
        [str(venv_course / ".venv" / "bin" / "nbgrader"), *args],
        cwd=course_dir,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if ok:
        assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
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


def functions_of(source: str) -> dict[str, str]:
    """``{name: source}`` of a module's top-level functions (the last definition of a name wins, as in Python)."""
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[node.name] = "\n".join(lines[first - 1 : node.end_lineno])
    return out


def autograded_scores(course_dir: Path, students) -> dict[str, dict[str, float | None]]:
    from nbgrader.api import Gradebook

    functions = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", course_id="") as gb:
        return {
            student: {fn: gb.find_grade(grade_id(fn), MODULE, MODULE, student).auto_score for fn in functions}
            for student in students
        }


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT)


@pytest.fixture(scope="module")
def decoy_env(tmp_path_factory) -> dict[str, str]:
    return decoys(tmp_path_factory.mktemp("decoys"))


@pytest.fixture(scope="module")
def graded(nbgrader_course_env, decoy_env, tmp_path_factory, course):
    """Release, submit six notebooks (a full, an untouched and a mixed one, and tests/platform_envs.py's canonical
    correct, wrong and untouched functions), autograde them in one run of the course venv's nbgrader (its
    pre-flight first), export; return what the tests inspect."""
    course_dir = nbgrader_course_env
    written = course_dir / "source" / MODULE / f"{MODULE}.ipynb"
    nbgrader(course_dir, course_dir, "generate_assignment", MODULE, "--force", env=decoy_env)

    source = read_nb(written)
    release = read_nb(course_dir / "release" / MODULE / f"{MODULE}.ipynb")
    functions = [fn.name for fn in course.module(MODULE).functions]
    reference = {f: without_markers(source_of(cells_by_id(source)[solution_id(f)])) for f in functions}

    submissions = {
        "full": filled(release, reference),
        "untouched": release,
        "mixed": filled(release, {**reference, "clamp_at": WRONG_CLAMP, "scatter_add": IMPURE_SCATTER}),
    }
    for name, text in canonical_sources().items():
        defined = functions_of(text)
        submissions[f"canonical-{name}"] = filled(release, {f: defined[f] for f in functions})
    for student, nb in submissions.items():
        submit(course_dir, student, nb)

    started = time.monotonic()
    proc = nbgrader(course_dir, course_dir, "autograde", MODULE, env=decoy_env)
    seconds = time.monotonic() - started
    log = proc.stdout + proc.stderr
    found = PASSED.search(log)
    assert found, log[-5000:]
    preflight = float(found.group(1))
    setup = (course_dir.parent / "seconds").read_text()
    print(
        f"\nnbgrader course: setup.sh (builds and proves .venv) {setup} s; autograde of {len(submissions)} "
        f"submissions {seconds:.1f} s, of which the pre-flight {preflight:.1f} s: "
        f"{(seconds - preflight) / len(submissions):.1f} s per submission"
    )
    nbgrader(course_dir, course_dir, "export", "--to", str(course_dir / "grades.csv"), env=decoy_env)
    return {
        "dir": course_dir,
        "source": source,
        "release": release,
        "reference": reference,
        "log": log,
        "students": list(submissions),
    }


def expected_points(course) -> dict[str, dict[str, float]]:
    module = course.module(MODULE)
    full = {fn.name: fn.points for fn in module.functions}
    scatter = module.function("scatter_add")
    assert scatter.hidden == (
        "test_scatter_add_is_pure",
        "test_scatter_add_keeps_no_module_state_and_leaks_no_tracer",
    ), "the test relies on these hidden checks in course.toml"
    return {
        "full": full,
        "untouched": dict.fromkeys(full, 0.0),
        # wrong values earn nothing; the impure one fails 1 of its 4 checks (a hidden one: it keeps state)
        "mixed": {**full, "clamp_at": 0.0, "scatter_add": round(scatter.points * 3 / 4, 2)},
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
    kit_nbgrader(course_dir, "export", "--to", str(tmp_path / "grades.csv"))
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


# --- the course's own environment and its pre-flight -------------------------------------------------------


def test_points_per_function_agree_with_grade_for_the_same_functions(graded, canonical_grades, course):
    """tests/platform_envs.py's correct, wrong and untouched functions, filled into the released notebook: nbgrader
    (the course's own venv) gives each function the points ``autograder grade`` gives the same functions."""
    got = autograded_scores(graded["dir"], [f"canonical-{name}" for name in canonical_grades])
    for name, expected in canonical_grades.items():
        for fn in course.module(MODULE).functions:
            assert got[f"canonical-{name}"][fn.name] == pytest.approx(expected[fn.name], abs=0.011), (name, fn.name)
    assert 0 < sum(canonical_grades["wrong"].values()) < course.module(MODULE).points  # the comparison means something


def test_the_preflight_passed_once_before_the_first_submission(graded):
    log = graded["log"]
    assert len(PASSED.findall(log)) == 1, log[-5000:]
    assert log.count("pre-flight: running") == 1
    # it ran while the first submission was autograded, before the second one was looked at
    second = sorted(graded["students"])[1]
    assert log.index("pre-flight passed") < log.index(f"submitted/{second}/{MODULE}"), log[-5000:]
    assert "pre-flight failed" not in log


def test_the_course_grades_from_its_own_environment(nbgrader_course_env, decoy_env):
    """No path into the kit: the config sets no PYTHONPATH, the check cells read the course's own copy, and the
    kernel nbgrader starts is the course venv's Python even where other python3 kernelspecs come first."""
    course_dir = nbgrader_course_env
    config = (course_dir / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "PYTHONPATH" not in config and str(ROOT) not in config.split("\n", 1)[1]
    copy = course_dir / environment.COURSE_COPY
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*.py")) == [
        f"exercises/{MODULE}.py",
        f"exercises/test_{MODULE}.py",
        f"solutions/{MODULE}.py",
    ]
    assert load_course(copy).modules[0].name == MODULE and len(load_course(copy).modules) == 1
    probe = (
        "import os, sys; from traitlets.config.loader import PyFileConfigLoader; "
        "PyFileConfigLoader('nbgrader_config.py', path=os.getcwd()).load_config(); "
        "from jupyter_client.kernelspec import KernelSpecManager; "
        "print(KernelSpecManager().get_kernel_spec('python3').argv[0]); print(os.environ['JAX_COURSE_ROOT'])"
    )
    python = course_dir / ".venv" / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-c", probe], cwd=course_dir, env=clean_env(**decoy_env), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    kernel, root = proc.stdout.split("\n")[:2]
    assert kernel == str(python) and root == str(copy)
    # without the course's config, the decoy would have been the kernel (the test's decoys do decoy)
    bare = (
        "from jupyter_client.kernelspec import KernelSpecManager; "
        "print(KernelSpecManager().get_kernel_spec('python3').argv[0])"
    )
    proc = subprocess.run(
        [str(python), "-c", bare], cwd="/", env=clean_env(**decoy_env), capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stdout.strip() == base_python(), proc.stdout + proc.stderr


def broken_copy(course_dir: Path, tmp_path: Path) -> Path:
    """A copy of the generated (and released) course, submissions and its venv left out; its kernel is still the
    original's venv (the kernelspec's interpreter)."""
    copy = tmp_path / "course"
    shutil.copytree(
        course_dir, copy, ignore=shutil.ignore_patterns(".venv", "submitted", "autograded", "feedback", "grades.csv")
    )
    return copy


def assert_nobody_graded(copy: Path, students: list[str], log: str) -> None:
    assert "pre-flight failed" in log, log[-5000:]
    assert log.count("pre-flight: running") == 1, "every later submission fails without running it again"
    for student in students:
        assert f"There was an error processing assignment '{MODULE}' for student '{student}'" in log
        assert not (copy / "autograded" / student / MODULE / f"{MODULE}.ipynb").exists()
    scores = autograded_scores(copy, students)
    assert all(score is None for points in scores.values() for score in points.values()), scores
    assert PASSED.search(log) is None


def test_a_wrong_reference_in_the_course_copy_grades_nobody(graded, nbgrader_course_env, decoy_env, tmp_path):
    """The course copy's reference made wrong: the pre-flight names the check cell that failed with its output's
    last lines, autograde exits non-zero, and neither submission gets a score (no auto_score, so no 0)."""
    copy = broken_copy(nbgrader_course_env, tmp_path)
    reference = copy / environment.COURSE_COPY / "solutions" / f"{MODULE}.py"
    text = reference.read_text(encoding="utf-8")
    wrong = "return x.at[indices].max(lo).at[indices].min(hi)"
    assert wrong in text
    reference.write_text(text.replace(wrong, "return x"), encoding="utf-8")
    submit(copy, "ann", filled(graded["release"], graded["reference"]))
    submit(copy, "ben", graded["release"])
    proc = nbgrader(copy, nbgrader_course_env, "autograde", MODULE, env=decoy_env, ok=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert_nobody_graded(copy, ["ann", "ben"], log)
    assert "the reference got 0/3 in clamp_at_checks" in log and "result differs from the reference" in log, log
    assert "set_diagonal_checks" not in log.split("pre-flight failed", 1)[1].split("Traceback", 1)[0]

    # setup.sh's last step says the same, and fails
    cli = subprocess.run(
        [str(nbgrader_course_env / ".venv" / "bin" / "python"), "-m", "autograder.notebooks.preflight", str(copy)],
        env=clean_env(**decoy_env),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert cli.returncode == 1 and "the reference got 0/3 in clamp_at_checks" in cli.stdout, cli.stdout + cli.stderr


def test_a_kernel_that_cannot_import_jax_grades_nobody(graded, nbgrader_course_env, decoy_env, tmp_path):
    copy = broken_copy(nbgrader_course_env, tmp_path)
    fake = tmp_path / "broken-site" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('this jax is broken')\n", encoding="utf-8")
    submit(copy, "cy", filled(graded["release"], graded["reference"]))
    env = {**decoy_env, "PYTHONPATH": str(fake.parent)}
    proc = nbgrader(copy, nbgrader_course_env, "autograde", MODULE, env=env, ok=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert_nobody_graded(copy, ["cy"], log)
    assert "the reference's setup raised" in log and "ImportError: this jax is broken" in log, log[-5000:]


def test_the_config_puts_the_preflight_before_nbgrader_s_own_preprocessors(tmp_path, monkeypatch):
    from nbgrader.converters.autograde import Autograde
    from traitlets.config.loader import PyFileConfigLoader
    from traitlets.utils.importstring import import_item

    build_course(ROOT, tmp_path / "course", [MODULE])
    for name in ("JAX_COURSE_ROOT", "JUPYTER_PATH"):  # the config sets them in the process that loads it
        monkeypatch.setenv(name, "before")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path / "course")).load_config()
    names = config.Autograde.autograde_preprocessors
    assert names[0] == PREFLIGHT and import_item(PREFLIGHT).__module__ == "autograder.notebooks.preflight"
    assert [import_item(n) for n in names[1:]] == list(Autograde.class_traits()["autograde_preprocessors"].default())
    assert tuple(names[1:]) == NBGRADER_AUTOGRADE
    assert os.environ["JAX_COURSE_ROOT"] == str(tmp_path / "course" / environment.COURSE_COPY)
    assert os.environ["JUPYTER_PATH"].split(os.pathsep) == [str(tmp_path / "course" / environment.KERNELS), "before"]
    spec = json.loads((tmp_path / "course" / "jupyter" / "kernels" / "python3" / "kernel.json").read_text())
    assert spec["argv"][0] == str(tmp_path / "course" / ".venv" / "bin" / "python")


def test_setup_sh_installs_cpu_torch_then_the_stack_then_the_kit_and_proves_it(tmp_path):
    from autograder.shipped.stack import CPU_INDEX, TORCH

    build_course(ROOT, tmp_path / "course", [MODULE])
    text = (tmp_path / "course" / "setup.sh").read_text(encoding="utf-8")
    torch = next(line for line in text.splitlines() if "torch==" in line)
    assert TORCH in torch and CPU_INDEX in torch and "--index-url" in torch
    order = [TORCH, '-r "$HERE/requirements.txt"', "--no-deps", "-m autograder.notebooks.preflight"]
    assert [text.index(step) for step in order] == sorted(text.index(step) for step in order)
    assert "set -euo pipefail" in text and "PYTHONPATH" not in text
    requirements = (tmp_path / "course" / "requirements.txt").read_text(encoding="utf-8").split()
    assert "nbgrader==0.9.6" in requirements and TORCH in requirements and "ipykernel" in requirements
    assert len(list((tmp_path / "course" / "kit").glob("*.whl"))) == 1


def test_the_course_ships_the_references_its_scenarios_need(tmp_path):
    """checkpointing's checks build their scenario with training's reference, which needs data's: their references
    and stubs come along; course.toml lists only the modules built, and a later build adds its module."""
    course_dir = tmp_path / "course"
    build_course(ROOT, course_dir, ["checkpointing"])
    copy = course_dir / environment.COURSE_COPY
    assert {p.name for p in (copy / "solutions").iterdir()} == {"checkpointing.py", "training.py", "data.py"}
    assert (copy / "exercises" / "test_checkpointing.py").is_file() and not (
        copy / "exercises" / "test_data.py"
    ).exists()
    assert [m.name for m in load_course(copy).modules] == ["checkpointing"]
    build_course(ROOT, course_dir, [MODULE])
    assert [m.name for m in load_course(copy).modules] == [MODULE, "checkpointing"]
    (copy / environment.COPY_MARKER).unlink()
    from autograder.core.course import CourseError

    with pytest.raises(CourseError, match="not written by"):
        build_course(ROOT, course_dir, [MODULE])
