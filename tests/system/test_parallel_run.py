"""``pytest exercises/`` spreads a run of several modules over the cores (autograder.pytest_plugin.parallel).

Which runs are spread is decided on real command lines parsed by pytest (with the course's plugin and
pytest-xdist loaded); what a spread run prints and writes is compared with the same run in one process
(real ``pytest`` processes on the course's checks).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from autograder.pytest_plugin import parallel

CHECKS = ROOT / "exercises"


def processes_for(pytester, monkeypatch, *args, cores: int = 2, worker: str | None = None) -> tuple[int, str]:
    """How many processes check the run ``pytest *args`` on a machine with ``cores`` cores, and how xdist
    hands out the checks (``loadfile`` when the plugin spread the run: a module is checked whole by one worker)."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    if worker:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setattr(parallel, "available_cores", lambda: cores)
    config = pytester.parseconfig(*map(str, args))
    return getattr(config.option, "numprocesses", None) or 1, getattr(config.option, "dist", "no")


SPREAD = "loadfile"


@pytest.mark.parametrize(
    ("args", "cores", "expected"),
    [
        ([CHECKS], 2, (2, SPREAD)),
        ([CHECKS], 8, (parallel.MAX_WORKERS, SPREAD)),
        ([CHECKS], 1, (1, "no")),
        ([CHECKS / "test_data.py", CHECKS / "test_prng.py"], 8, (2, SPREAD)),
        (
            [
                CHECKS / "test_data.py",
                f"{CHECKS / 'test_prng.py'}::test_two_normals_matches_reference",
                CHECKS / "test_pytrees.py",
            ],
            8,
            (3, SPREAD),
        ),
        ([CHECKS / "test_data.py"], 8, (1, "no")),
        ([f"{CHECKS / 'test_data.py'}::a", f"{CHECKS / 'test_data.py'}::b"], 8, (1, "no")),  # node ids of one module
        ([ROOT / "tests"], 8, (1, "no")),  # not the course's checks
        ([CHECKS, "-n", "0"], 8, (1, "no")),  # the user's choice, with xdist's own options
        ([CHECKS, "-n", "3"], 8, (3, "no")),  # (xdist then hands out single checks: its own default)
        ([CHECKS, "--dist", "worksteal", "-n", "2"], 8, (2, "worksteal")),
        ([CHECKS, "-p", "no:xdist"], 8, (1, "no")),
        ([CHECKS, "-s"], 8, (1, "no")),  # a worker's prints would not be shown
        ([CHECKS, "--capture=no"], 8, (1, "no")),
        ([CHECKS, "--pdb"], 8, (1, "no")),
        ([CHECKS, "--trace"], 8, (1, "no")),
        ([CHECKS, "--sw"], 8, (1, "no")),
        ([CHECKS, "--collect-only"], 8, (1, "no")),
        ([CHECKS, "--record-oracle", "oracle"], 8, (1, "no")),  # autograder release records in one process
    ],
    ids=lambda v: " ".join(str(a).removeprefix(f"{ROOT}/") for a in v) if isinstance(v, list) else str(v),
)
def test_which_runs_are_spread_over_the_cores(pytester, monkeypatch, args, cores, expected):
    assert processes_for(pytester, monkeypatch, *args, cores=cores) == expected


def test_a_process_started_by_an_xdist_worker_runs_alone(pytester, monkeypatch):
    """The kit's own tests run in xdist workers: a course run they start stays in one process."""
    assert processes_for(pytester, monkeypatch, CHECKS, cores=8, worker="gw0") == (1, "no")


def test_an_in_process_run_with_its_own_plugins_runs_alone(pytester, monkeypatch):
    """A grading process, the verifier and a notebook's check cells call pytest in-process with plugins."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    result = pytester.runpytest_inprocess(
        str(CHECKS / "test_data.py"),
        str(CHECKS / "test_jit_static.py"),
        "--solutions",
        "-p",
        "no:cacheprovider",
        plugins=[object()],
    )
    assert "checked side by side" not in result.stdout.str() and "created:" not in result.stdout.str()
    assert result.ret == 0


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["exercises"], None),  # every module, in course order
        (["exercises/test_prng.py", "exercises/test_at_updates.py"], ["prng", "at_updates"]),
        (["exercises/test_prng.py::test_x", "exercises/test_prng.py::test_y"], ["prng"]),
        (["."], None),
        (["tests", "exercises/at_updates.py"], []),
    ],
)
def test_the_modules_a_command_line_selects(paths, expected):
    from autograder.core.course import load_course

    course = load_course(ROOT)
    modules = [m.name for m in course.modules]
    assert parallel.selected_modules(course, ROOT, paths) == (modules if expected is None else expected)


# a spread run reads as a run in one process ----------------------------------------------------


def solution(module: str) -> str:
    return (ROOT / "solutions" / f"{module}.py").read_text()


BROKEN = {  # a submission of four modules: one wrong, one that cannot be imported, one not started, one right
    "at_updates": lambda: solution("at_updates").replace("x.at[indices].add(updates)", "x.at[indices].set(updates)"),
    "data": lambda: "import numpy as np\nthis is not Python\n",
    "jit_static": lambda: (CHECKS / "jit_static.py").read_text(),
    "pytrees": lambda: solution("pytrees"),
}


def course_run(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "CI")}
    env["JAX_COURSE_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def from_failures_on(text: str) -> str:
    """What follows the progress lines (failures, score, summary), without the run's duration (nor the width of the
    ``=`` padding pytest centres the last line with: a duration of another number of digits changes it)."""
    without_duration = re.sub(r" in [\d.]+s(?: \([\d:]+\))?", "", text[text.index("= FAILURES =") :])
    return re.sub(r"={2,}", "==", without_duration)


@pytest.fixture(scope="module")
def broken_submission(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("parallel") / "submission"
    folder.mkdir()
    for module, source in BROKEN.items():
        (folder / f"{module}.py").write_text(source())
    assert (folder / "at_updates.py").read_text() != solution("at_updates")
    return folder


def test_a_spread_run_prints_and_writes_what_one_process_does(broken_submission, tmp_path):
    if parallel.available_cores() < 2:
        pytest.skip("one core: a run is never spread")
    checks = [f"exercises/test_{module}.py" for module in BROKEN]
    runs = {}
    for label, extra in (("spread", []), ("alone", ["-n", "0"])):
        results = tmp_path / f"{label}.json"
        runs[label] = course_run(
            *checks,
            "--submission",
            str(broken_submission),
            "--results-json",
            str(results),
            *extra,
            cwd=ROOT,
            cache=tmp_path / f"cache-{label}",
        )
        runs[label].results = results.read_text()
    spread, alone = runs["spread"], runs["alone"]
    assert "the modules are checked side by side" in spread.stdout and "created: 2/2 workers" in spread.stdout
    assert "checked side by side" not in alone.stdout and "created:" not in alone.stdout
    assert spread.returncode == alone.returncode == 1
    assert spread.results == alone.results  # the same scores and check outcomes, in the same order
    scores = json.loads(spread.results)
    assert {f["status"] for f in scores["functions"] if f["module"] == "data"} == {"failed"}
    assert {f["status"] for f in scores["functions"] if f["module"] == "jit_static"} == {"not started"}
    assert {f["status"] for f in scores["functions"] if f["module"] == "pytrees"} == {"passed"}
    assert scores["score"] < scores["max_score"]
    # The failures (by module in course order), the score table, the summary: line for line.
    assert from_failures_on(spread.stdout) == from_failures_on(alone.stdout)
    assert "[gw" not in spread.stdout  # the student's messages are not headed by the worker that ran them
    assert re.search(r"\n\.*[Fn]+", spread.stdout) and " not started" in spread.stdout  # the stub's own letter


def test_a_students_spread_run_records_their_progress(tmp_path):
    """The student's own run on exercises/: progress (which decides when the direct hint shows) is kept by
    the process the student started, from its workers' reports."""
    if parallel.available_cores() < 2:
        pytest.skip("one core: a run is never spread")
    copy = tmp_path / "course"
    shutil.copytree(ROOT / "exercises", copy / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "course.toml", copy / "course.toml")
    (copy / "solutions").mkdir()
    for module in ("at_updates", "data"):
        shutil.copy(ROOT / "solutions" / f"{module}.py", copy / "solutions" / f"{module}.py")
    (copy / "exercises" / "at_updates.py").write_text(BROKEN["at_updates"]())
    run = course_run("exercises/test_at_updates.py", "exercises/test_data.py", cwd=copy, cache=tmp_path / "cache")
    assert "checked side by side" in run.stdout, run.stdout[-2000:]
    saved = json.loads((copy / ".autograder" / "progress.json").read_text())["functions"]
    assert saved["at_updates.scatter_add"]["status"] == "failed" and saved["at_updates.scatter_add"]["failed_runs"] == 1
    assert saved["at_updates.set_diagonal"]["status"] == "passed"
    assert saved["data.numpy_collate"]["status"] == "not started"
    assert "hint: " in run.stdout and "not started" in run.stdout


def test_the_process_that_gathers_the_reports_imports_no_jax(tmp_path):
    """It only prints what its workers report: importing JAX there (0.6 s) would compete with them for the cores."""
    if parallel.available_cores() < 2:
        pytest.skip("one core: a run is never spread")
    probe = (
        "import sys, pytest\n"
        "code = pytest.main(['-q', '-p', 'no:cacheprovider', 'exercises/test_data.py', 'exercises/test_jit_static.py', '--solutions'])\n"
        "print('PROBE', int(code), sorted(m for m in ('jax', 'torch', 'numpy', 'flax') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "CI")}
    env["JAX_COURSE_CACHE_DIR"] = str(tmp_path / "cache")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "bringing up nodes" in run.stdout  # xdist's line, shown with -q
    assert "PROBE 0 []" in run.stdout, run.stdout[-2000:]


def test_a_check_whose_process_dies_fails_and_the_rest_is_still_checked(tmp_path):
    """In a spread run, pytest-xdist replaces a worker that died. Each check that killed its process
    fails once, with a message for the student, and its function earns nothing; the module's other checks
    and the other modules are still checked. (In one process, the death of the process ends the run.)"""
    if parallel.available_cores() < 2:
        pytest.skip("one core: a run is never spread")
    folder = tmp_path / "submission"
    folder.mkdir()
    exits = solution("at_updates").replace(
        "def scatter_add(x, indices, updates):",
        "def scatter_add(x, indices, updates):\n    import os\n    os._exit(3)\n",
        1,
    )
    assert "os._exit" in exits
    (folder / "at_updates.py").write_text(exits)
    (folder / "data.py").write_text(solution("data"))
    results = tmp_path / "results.json"
    run = course_run(
        "exercises/test_at_updates.py",
        "exercises/test_data.py",
        "--submission",
        str(folder),
        "--results-json",
        str(results),
        cwd=ROOT,
        cache=tmp_path / "cache",
    )
    scores = {f["function"]: f for f in json.loads(results.read_text())["functions"]}
    assert scores["scatter_add"]["points"] == 0 and scores["scatter_add"]["status"] == "failed"
    assert scores["scatter_add"]["passed"] == 0 and scores["scatter_add"]["total"] == run.stdout.count(
        "_ test_scatter_add"
    )
    assert scores["scatter_add"]["total"] >= 3  # every one of its checks, each once
    assert "at_updates.scatter_add: the process running this check died" in run.stdout
    assert {
        name: scores[name]["status"] for name in ("set_diagonal", "clamp_at", "replace_negatives", "numpy_collate")
    } == dict.fromkeys(("set_diagonal", "clamp_at", "replace_negatives", "numpy_collate"), "passed")
