"""``autograder classroom50``: the public assignment folder and the ``result.json`` it writes.

The bundle is built from a real student release (the session's ``release``
fixture, conftest.py): its checks answer from the recorded oracle. Everything
is the real thing: ``autograder.py`` is started by the system's Python 3.11 in
a temporary student checkout with Classroom 50's environment variables; its
first run builds and proves its own venv next to itself (as once per runner),
from nothing but what the bundle ships (``platform_envs``: no ``PYTHONPATH``,
nothing of the kit's venv), and the later runs reuse it. Its scores are compared
with ``autograder grade``'s for the same files, and every ``result.json`` is
validated against ``schemas/classroom50_result.schema.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import jsonschema
import pytest
from platform_envs import MODULE as CANONICAL_MODULE
from platform_envs import WRONG_FUNCTION, assert_not_the_kit_venv, base_python, canonical_sources, clean_env
from support import ROOT

from autograder.core.course import load_course
from autograder.platforms import classroom50

MODULE = CANONICAL_MODULE
COURSE = load_course(ROOT)
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "classroom50_result.schema.json").read_text())
RUNNER_ENV = {
    "CLASSROOM": "jax-101",
    "ASSIGNMENT": MODULE,
    "SUBMISSION_TAG": "submit/2026-11-22T08-00-00Z-a1b2c3d",
    "COMMIT_URL": "https://example.invalid/commit/a1b2c3d",
    "RELEASE_URL": "https://example.invalid/releases/tag/submit",
}


@pytest.fixture(scope="module")
def bundle(release, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("classroom50") / "autograders" / MODULE
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "classroom50",
        str(out),
        "--slug",
        MODULE,
        "--only",
        MODULE,
        "--release",
        str(release),
        "--course",
        str(ROOT),
    ]
    proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_folder_is_small_and_holds_no_reference(bundle):
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < classroom50.MAX_BUNDLE_BYTES
    assert not list(bundle.rglob("solutions"))
    assert {"autograder.py", "classroom50.json", "requirements.txt", "release-body.md", "kit"} <= {
        p.name for p in bundle.iterdir()
    }
    assert len(list((bundle / "kit").glob("*.whl"))) == 1 and not (bundle / "course" / "autograder").exists()
    print(f"\nClassroom 50 folder ({MODULE}: checks, oracle, the kit's wheel): {size / 2**10:.0f} KiB")


def test_a_release_with_solutions_is_refused(release, tmp_path):
    spoiled = shutil.copytree(release, tmp_path / "release")
    shutil.copytree(ROOT / "solutions", spoiled / "solutions")
    with pytest.raises(ValueError, match="solutions"):
        classroom50.build(spoiled, tmp_path / "out", MODULE, COURSE, (MODULE,), "")


def test_partial_credit_survives_as_integers():
    fn = COURSE.module(MODULE).functions[2]  # 3 points
    results = {
        "functions": [
            {
                "module": MODULE,
                "function": f.name,
                "points": f.points * 2 / 3 if f is fn else 0.0,
                "passed": 2 if f is fn else 0,
                "total": 3,
                "status": "failed",
            }
            for f in COURSE.module(MODULE).functions
        ]
    }
    out = classroom50.result(COURSE, (MODULE,), results, RUNNER_ENV)
    jsonschema.validate(out, SCHEMA)
    row = next(t for t in out["tests"] if t["test-name"] == fn.qualname)
    assert row["score"] * 3 == row["max-score"] * 2 and row["score"] > 0


def test_a_lab_of_whole_points_is_reported_in_the_course_points():
    """Issue 44, finding 7: an 8/10 lab is 8 of 10 on Classroom 50, not 24 of 30."""
    fns = COURSE.module(MODULE).functions
    maximum = sum(f.points for f in fns)
    failing = next(f for f in fns if f.points == maximum - 8)
    results = {
        "functions": [
            {
                "module": MODULE,
                "function": f.name,
                "points": 0.0 if f is failing else float(f.points),
                "passed": 1 if f is failing else 3,
                "total": 3,
                "status": "failed" if f is failing else "passed",
            }
            for f in fns
        ]
    }
    out = classroom50.result(COURSE, (MODULE,), results, RUNNER_ENV)
    jsonschema.validate(out, SCHEMA)
    assert (out["score"], out["max-score"]) == (8, maximum)
    assert {t["test-name"]: t["max-score"] for t in out["tests"]} == {f.qualname: f.points for f in fns}


def run_autograder(bundle: Path, checkout: Path, **env: str) -> dict:
    """The runner's call: autograder.py from the bundle, in the student's checkout, started by the system's
    Python (the runner's own); the environment it grades in is the one it builds itself."""
    assert (bundle / "course" / "oracle" / f"{MODULE}.json").is_file() and not (
        bundle / "course" / "solutions"
    ).exists()
    python = base_python()
    if python is None:
        pytest.skip("no system python3.11 to start autograder.py with")
    environ = clean_env(**RUNNER_ENV, CLASSROOM50_BUNDLE_DIR=str(bundle), **env)
    proc = subprocess.run(
        [python, str(bundle / "autograder.py")], cwd=checkout, env=environ, capture_output=True, text=True, timeout=2400
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads((checkout / "result.json").read_text())
    jsonschema.validate(result, SCHEMA)
    return result


@pytest.fixture(scope="module")
def runner(bundle, tmp_path_factory):
    """The runner's first submission (the stubs): autograder.py builds and proves its venv, then grades."""
    checkout = checkout_with(tmp_path_factory.mktemp("first"), canonical(tmp_path_factory.mktemp("stubs"), "stubs"))
    started = time.monotonic()
    result = run_autograder(bundle, checkout)
    seconds = time.monotonic() - started
    assert (bundle / ".venv" / "proven").is_file()
    assert_not_the_kit_venv(bundle / ".venv" / "bin" / "python")
    print(f"\nClassroom 50 autograder.py, first run (builds and proves its venv, grades the stubs): {seconds:.0f} s")
    yield bundle, checkout, result
    shutil.rmtree(bundle / ".venv", ignore_errors=True)  # 2 GB


def checkout_with(tmp_path: Path, source: Path) -> Path:
    (tmp_path / "student" / "exercises").mkdir(parents=True)
    shutil.copy(source, tmp_path / "student" / "exercises" / f"{MODULE}.py")
    return tmp_path / "student"


def test_the_stubs_score_zero(runner):
    bundle, checkout, result = runner
    assert result["score"] == 0 and result["max-score"] > 0
    assert [t["test-name"] for t in result["tests"]] == [fn.qualname for fn in COURSE.module(MODULE).functions]
    assert "not started" in (checkout / "release-body.md").read_text()


def canonical(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(canonical_sources()[name], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def graded(runner, tmp_path_factory):
    """The correct and the wrong submission of tests/platform_envs.py (the stubs were the runner's first)."""
    bundle, stubs_checkout, stubs = runner
    tmp = tmp_path_factory.mktemp("graded")
    out = {"stubs": (stubs, stubs_checkout)}
    for name in ("reference", "wrong"):
        started = time.monotonic()
        checkout = checkout_with(tmp / name, canonical(tmp, name))
        out[name] = (run_autograder(bundle, checkout), checkout)
        print(f"\nClassroom 50 autograder.py, {name} (venv ready): {time.monotonic() - started:.0f} s")
    return out


def test_the_reference_scores_full_and_a_wrong_submission_in_between(graded):
    full = graded["reference"][0]
    assert full["score"] == full["max-score"] and all(t["passed"] for t in full["tests"])
    broken = COURSE.module(MODULE).function(WRONG_FUNCTION)
    wrong, checkout = graded["wrong"]
    rows = {t["test-name"]: t for t in wrong["tests"]}
    assert rows[broken.qualname]["score"] == 0 and not rows[broken.qualname]["passed"]
    assert 0 < wrong["score"] < wrong["max-score"]
    body = (checkout / "release-body.md").read_text()
    assert f"### {broken.qualname}" in body and f"Hint: {broken.hint}" in body


def test_scores_agree_with_grade_for_the_same_files(graded, canonical_grades):
    for name, (result, _) in graded.items():
        for row in result["tests"]:
            fn = COURSE.module(MODULE).function(row["test-name"].split(".", 1)[1])
            earned = float(Fraction(row["score"], row["max-score"])) * fn.points
            assert earned == pytest.approx(canonical_grades[name][fn.name], abs=0.011), (
                name,
                row,
                canonical_grades[name],
            )


def test_the_proof_fails_when_the_checks_plugin_is_missing(runner):
    """autograder.py's proof, in the venv it built: with the checks' plugin blocked (as in a venv without
    the kit), it says the checks did not run (the venv is then not kept, and nothing is graded)."""
    bundle, _, _ = runner
    python = bundle / ".venv" / "bin" / "python"
    code = (
        "import runpy, sys; from pathlib import Path; "
        "g = runpy.run_path(sys.argv[1], run_name='proof'); print(g['prove'](Path(sys.argv[2])) or 'OK')"
    )
    ok = subprocess.run(
        [str(python), "-c", code, str(bundle / "autograder.py"), str(python)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert ok.stdout.strip().endswith("OK"), ok.stdout[-2000:] + ok.stderr[-2000:]
    blocked = subprocess.run(
        [str(python), "-c", code, str(bundle / "autograder.py"), str(python)],
        env=clean_env(PYTEST_ADDOPTS="-p no:jax_course"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "the checks did not run" in blocked.stdout and "unrecognized arguments: --grading" in blocked.stdout, (
        blocked.stdout[-2000:]
    )
