"""``autograder classroom50``: the public assignment folder and the ``result.json`` it writes.

The bundle is built from a real student release (the session's ``release``
fixture, conftest.py): its checks answer from the recorded oracle. Everything
is the real thing: ``autograder.py`` runs in a temporary student checkout with
Classroom 50's environment variables, and every ``result.json`` is validated
against ``schemas/classroom50_result.schema.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from autograder.core.course import load_course
from autograder.platforms import classroom50
from support import ROOT

MODULE = "at_updates"
COURSE = load_course(ROOT)
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "classroom50_result.schema.json").read_text())
RUNNER_ENV = {
    "CLASSROOM": "jax-101", "ASSIGNMENT": MODULE, "SUBMISSION_TAG": "submit/2026-11-22T08-00-00Z-a1b2c3d",
    "COMMIT_URL": "https://example.invalid/commit/a1b2c3d", "RELEASE_URL": "https://example.invalid/releases/tag/submit",
}


@pytest.fixture(scope="module")
def bundle(release, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("classroom50") / "autograders" / MODULE
    cmd = [sys.executable, "-m", "autograder", "classroom50", str(out), "--slug", MODULE, "--only", MODULE,
           "--release", str(release), "--course", str(ROOT)]
    proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_folder_is_small_and_holds_no_reference(bundle):
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < classroom50.MAX_BUNDLE_BYTES
    assert not list(bundle.rglob("solutions"))
    assert {"autograder.py", "classroom50.json", "requirements.txt", "release-body.md"} <= {p.name for p in bundle.iterdir()}
    print(f"\nClassroom 50 folder ({MODULE}, without the oracle): {size / 2**10:.0f} KiB")


def test_a_release_with_solutions_is_refused(release, tmp_path):
    spoiled = shutil.copytree(release, tmp_path / "release")
    shutil.copytree(ROOT / "solutions", spoiled / "solutions")
    with pytest.raises(ValueError, match="solutions"):
        classroom50.build(spoiled, tmp_path / "out", MODULE, COURSE, (MODULE,), "")


def test_partial_credit_survives_as_integers():
    fn = COURSE.module(MODULE).functions[2]  # 3 points
    results = {"functions": [
        {"module": MODULE, "function": f.name, "points": f.points * 2 / 3 if f is fn else 0.0, "passed": 2 if f is fn else 0,
         "total": 3, "status": "failed"} for f in COURSE.module(MODULE).functions
    ]}
    out = classroom50.result(COURSE, (MODULE,), results, RUNNER_ENV)
    jsonschema.validate(out, SCHEMA)
    row = next(t for t in out["tests"] if t["test-name"] == fn.qualname)
    assert row["score"] * 3 == row["max-score"] * 2 and row["score"] > 0


def run_autograder(bundle: Path, checkout: Path) -> dict:
    """The runner's call: autograder.py from the bundle, in the student's checkout."""
    assert (bundle / "course" / "oracle" / f"{MODULE}.json").is_file() and not (bundle / "course" / "solutions").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    env.update(RUNNER_ENV, AUTOGRADER_PYTHON=sys.executable, CLASSROOM50_BUNDLE_DIR=str(bundle))
    proc = subprocess.run([sys.executable, str(bundle / "autograder.py")], cwd=checkout, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads((checkout / "result.json").read_text())
    jsonschema.validate(result, SCHEMA)
    return result


def checkout_with(tmp_path: Path, source: Path) -> Path:
    (tmp_path / "student" / "exercises").mkdir(parents=True)
    shutil.copy(source, tmp_path / "student" / "exercises" / f"{MODULE}.py")
    return tmp_path / "student"


def test_the_stubs_score_zero(bundle, tmp_path):
    result = run_autograder(bundle, checkout_with(tmp_path, ROOT / "exercises" / f"{MODULE}.py"))
    assert result["score"] == 0 and result["max-score"] > 0
    assert [t["test-name"] for t in result["tests"]] == [fn.qualname for fn in COURSE.module(MODULE).functions]
    assert "not started" in (tmp_path / "student" / "release-body.md").read_text()


def test_the_reference_scores_full_and_a_mixed_submission_in_between(bundle, tmp_path):
    full = run_autograder(bundle, checkout_with(tmp_path / "ref", ROOT / "solutions" / f"{MODULE}.py"))
    assert full["score"] == full["max-score"] and all(t["passed"] for t in full["tests"])
    broken = COURSE.module(MODULE).functions[0]
    mixed_source = tmp_path / "mixed.py"
    mixed_source.write_text((ROOT / "solutions" / f"{MODULE}.py").read_text() + f"\n\ndef {broken.name}(*args, **kwargs):\n    return args[0]\n")
    mixed = run_autograder(bundle, checkout_with(tmp_path / "mixed", mixed_source))
    rows = {t["test-name"]: t for t in mixed["tests"]}
    assert rows[broken.qualname]["score"] == 0 and not rows[broken.qualname]["passed"]
    assert 0 < mixed["score"] < mixed["max-score"]
    body = (tmp_path / "mixed" / "student" / "release-body.md").read_text()
    assert f"### {broken.qualname}" in body and f"Hint: {broken.hint}" in body
