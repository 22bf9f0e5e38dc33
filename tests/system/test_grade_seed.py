"""``grade --seed N`` draws other inputs; students who look the expected values up earn nothing for it, and
``grade`` without ``--seed`` draws them from an instructor seed of its own (issue 41): the published inputs, for which
a release recorded answers, are only the students' own runs' (``pytest exercises/``, the control here).

The thieves (``grade_fixtures.build_thieves``) try the routes of issue 11:
the reference from ``sys.modules``, from ``gc.get_objects()``, from files
next to them, and a student release's recorded oracle looked up by input.
The module they attack, ``at_updates``, is judged on the trusted side only.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from grade_fixtures import build_thieves
from support import ROOT
from test_grade_command import copy_course, run_grade

MODULE = "at_updates"
SEED = 20261122
pytestmark = pytest.mark.timeout(3600)


def record_release_oracle(course: Path, oracle: Path, module: str = MODULE) -> None:
    """What ``autograder release`` records for ``module`` (both profiles), without building a whole release."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT)
    for flags in ([], ["--grading"]):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                f"exercises/test_{module}.py",
                "--solutions",
                "--record-oracle",
                str(oracle),
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                *flags,
            ],
            cwd=course,
            env=env,
            check=True,
            capture_output=True,
        )
    given = oracle / "given"
    given.mkdir()
    (given / f"{module}.py").write_text((ROOT / "exercises" / f"{module}.py").read_text())


def scores(out: Path) -> dict[str, tuple[float, float]]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: (float(r["score"]), float(r["max_score"])) for r in csv.DictReader(f)}


def plugin_score(course: Path, folder: Path, module: str = MODULE) -> tuple[float, float]:
    """``(score, max)`` of the submission in ``folder`` on the published inputs: a student's own run of the checks
    (``pytest exercises/ --submission DIR --grading``), the inputs a release recorded answers for."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT)
    results = folder.parent / f"{folder.name}-{module}-published.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"exercises/test_{module}.py",
            "--submission",
            str(folder),
            "--grading",
            "--results-json",
            str(results),
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=course,
        env=env,
        capture_output=True,
    )
    payload = json.loads(results.read_text(encoding="utf-8"))
    return float(payload["score"]), float(payload["max_score"])


@pytest.fixture(scope="module")
def thieves(tmp_path_factory):
    base = tmp_path_factory.mktemp("seed")
    course = copy_course(base / "course")
    oracle = base / "release_oracle"
    record_release_oracle(course, oracle)
    students = build_thieves(base / "class", MODULE, release_oracle=oracle)
    with_seed = base / "out_seed"
    run_grade(base / "class", with_seed, course, "--jobs", "2", "--seed", str(SEED))
    before = (with_seed / "grades.csv").read_bytes()
    # --student without --seed keeps the run's seed (its record), not refused, the same grades
    run_grade(base / "class", with_seed, course, "--jobs", "2", "--student", "steals_from_release_oracle")
    assert (with_seed / "grades.csv").read_bytes() == before
    default, control = base / "out_default", base / "control"  # the control needs only these two
    for student in ("correct", "steals_from_release_oracle"):
        shutil.copytree(base / "class" / student, control / student)
    run_grade(control, default, course, "--jobs", "2")
    published = {
        student: plugin_score(course, control / student) for student in ("correct", "steals_from_release_oracle")
    }
    return students, scores(with_seed), published, scores(default)


def test_the_correct_student_keeps_full_marks_under_a_seed(thieves):
    _, with_seed, published, default = thieves
    assert with_seed["correct"][0] == with_seed["correct"][1] > 0
    assert published["correct"][0] == published["correct"][1]
    assert default["correct"][0] == default["correct"][1]


def test_the_release_oracle_answers_the_published_inputs(thieves):
    """The control: looking answers up in a release works on the inputs the release published ..."""
    _, _, published, _ = thieves
    assert published["steals_from_release_oracle"][0] > 0


def test_a_release_oracle_is_worth_nothing_under_an_instructors_seed(thieves):
    """... and earns nothing when the instructor grades with a seed, or with none (``grade`` draws its own)."""
    _, with_seed, _, default = thieves
    assert with_seed["steals_from_release_oracle"][0] == 0
    assert default["steals_from_release_oracle"][0] == 0


def test_files_next_to_the_submission_hold_no_reference(thieves):
    _, with_seed, _, _ = thieves
    assert with_seed["steals_from_files"][0] == 0


@pytest.mark.parametrize("student", ["steals_from_sys_modules", "steals_from_gc"])
def test_the_reference_in_memory_is_out_of_reach(thieves, student):
    """``at_updates`` is judged on the trusted side only (``tests/system/test_trusted_only.py``): its grading
    processes never load the reference, so there is nothing in memory to find."""
    _, with_seed, _, _ = thieves
    assert with_seed[student][0] == 0


# The modules whose checks build their inputs from fixtures (keys, datasets, given states): under a seed
# these are drawn from it (``scenario.drawn_seed``), so a release's recorded answers match none of them.
FROM_FIXTURES = ("training", "batchnorm", "dropout_rngs")


STUDENTS = ("correct", "steals_from_release_oracle")


def module_scores(out: Path, module: str) -> dict[str, tuple[float, float]]:
    """``{student: (points, max)}`` of ``module``'s functions, from each student's results.json in ``out``."""
    found = {}
    for student in STUDENTS:
        tests = json.loads((out / student / "results.json").read_text(encoding="utf-8"))["tests"]
        mine = [t for t in tests if t["name"].split(".", 1)[0] == module]
        assert mine, f"{student}: no function of {module} graded"
        found[student] = (sum(t["score"] for t in mine), sum(t["max_score"] for t in mine))
    return found


@pytest.fixture(scope="module")
def release_thieves(tmp_path_factory):
    """``{module: (with seed, published, default)}``: the scores in each module of FROM_FIXTURES of the correct
    student and the release-oracle thief, graded as one class of the three modules (one run per setting)."""
    base = tmp_path_factory.mktemp("seed_from_fixtures")
    course = copy_course(base / "course")
    for module in FROM_FIXTURES:
        oracle = base / f"release_oracle_{module}"
        record_release_oracle(course, oracle, module)
        build_thieves(base / "all" / module, module, release_oracle=oracle)
        for student in STUDENTS:
            shutil.copytree(base / "all" / module / student, base / "class" / student, dirs_exist_ok=True)
    with_seed, default = base / "out_seed", base / "out_default"
    run_grade(base / "class", with_seed, course, "--jobs", "2", "--seed", str(SEED), modules=FROM_FIXTURES)
    run_grade(base / "class", default, course, "--jobs", "2", modules=FROM_FIXTURES)
    return {
        module: (
            module_scores(with_seed, module),
            {student: plugin_score(course, base / "all" / module / student, module) for student in STUDENTS},
            module_scores(default, module),
        )
        for module in FROM_FIXTURES
    }


@pytest.fixture(params=FROM_FIXTURES)
def release_thief(request, release_thieves):
    """``(with seed, published, default)`` scores of the correct student and the release-oracle thief of one module."""
    return release_thieves[request.param]


def test_a_release_oracle_answers_the_published_scenario(release_thief):
    """The control: on the published keys, data and states, the recorded answers earn points ..."""
    _, published, _ = release_thief
    assert published["correct"][0] == published["correct"][1] > 0
    assert published["steals_from_release_oracle"][0] > 0


def test_a_release_oracle_earns_nothing_on_the_instructors_scenario(release_thief):
    """... and nothing when the instructor's seed draws them, while the correct student keeps full marks."""
    with_seed, _, default = release_thief
    for graded in (with_seed, default):  # --seed N, or grade's own instructor seed
        assert graded["correct"][0] == graded["correct"][1] > 0
        assert graded["steals_from_release_oracle"][0] == 0
