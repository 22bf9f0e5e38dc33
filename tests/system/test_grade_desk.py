"""``grade --student`` and ``--resume`` as the instructor's operations, and folders that are not a class.

A small class is graded once with the real command; then one student's file changes and only that
student is regraded (``--student``: a classmate whose file also changed keeps the recorded grade),
then a late arrival is added and ``--resume`` grades it and the changed classmate, saying so.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from grade_fixtures import WRONG, replace
from support import ROOT, reference_source
from test_grade_command import TIMEOUT, copy_course, run_grade

from autograder.core.course import load_course

MODULE = "at_updates"


def rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def grade_fails(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", *args, "--timeout", TIMEOUT],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode != 0, proc.stdout
    return proc


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("desk")
    course = copy_course(base / "course")
    ref = reference_source(MODULE)
    fns = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
    for student, source in {
        "ada": ref,
        "bo": replace(ref, {fns[1]: WRONG}),
        "cy": replace(ref, {fn: WRONG for fn in fns}),
    }.items():
        (base / "class" / student).mkdir(parents=True)
        (base / "class" / student / f"{MODULE}.py").write_text(source)
    run_grade(base / "class", base / "out", course, "--jobs", "2")
    return base, course, ref


def test_grade_student_regrades_only_that_student(graded):
    base, course, ref = graded
    before = rows(base / "out")
    assert before["bo"]["score"] != "10" and before["cy"]["score"] == "0"
    cy_results = (base / "out" / "cy" / "results.json").read_bytes()
    (base / "class" / "bo" / f"{MODULE}.py").write_text(ref)
    (base / "class" / "cy" / f"{MODULE}.py").write_text(ref)  # changed too, but not named
    proc = run_grade(base / "class", base / "out", course, "--jobs", "2", "--student", "bo")
    assert "regrading bo" in proc.stdout and "graded now: bo;" in proc.stdout, proc.stdout
    after = rows(base / "out")
    assert after["bo"]["score"] == "10"
    assert after["ada"] == before["ada"] and after["cy"] == before["cy"], "the others keep their recorded grades"
    assert (base / "out" / "cy" / "results.json").read_bytes() == cy_results
    assert "bo" in (base / "out" / "report.html").read_text()


def test_resume_grades_late_arrivals_and_changed_students_and_says_so(graded):
    base, course, ref = graded
    (base / "class" / "dee").mkdir()
    (base / "class" / "dee" / f"{MODULE}.py").write_text(ref)
    proc = run_grade(base / "class", base / "out", course, "--jobs", "2", "--resume")
    assert "1 changed since graded (cy)" in proc.stdout and "1 not graded before (dee)" in proc.stdout, proc.stdout
    assert "graded now: cy, dee;" in proc.stdout
    after = rows(base / "out")
    assert after["dee"]["score"] == "10" and after["cy"]["score"] == "10" and len(after) == 4


def test_folders_that_are_not_a_class_are_refused_clearly(graded, tmp_path):
    base, course, _ = graded
    proc = grade_fails(str(base / "class" / "ada"), "--out", str(base / "out"), "--course", str(course))
    assert "is one student's submission" in proc.stderr and "--student ada" in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = grade_fails(str(tmp_path / "empty"), "--out", str(tmp_path / "o"), "--course", str(course))
    assert "has no student folders" in proc.stderr and "graded 0 students" not in proc.stdout
    proc = grade_fails(str(base / "class"), "--out", str(base / "out"), "--course", str(course), "--student", "zed")
    assert "--student 'zed': no such folder" in proc.stderr
    proc = grade_fails(
        str(base / "class"), "--out", str(tmp_path / "fresh"), "--course", str(course), "--student", "ada"
    )
    assert "no earlier run" in proc.stderr
    proc = grade_fails(str(base / "class"), "--out", str(tmp_path / "o"), "--course", str(course), "--canvas", "Lab")
    assert "need --roster" in proc.stderr
    (tmp_path / "roster.csv").write_text("student,canvas_id\nada,1\n")
    proc = grade_fails(
        str(base / "class"),
        "--out",
        str(tmp_path / "o"),
        "--course",
        str(course),
        "--canvas",
        "Lab",
        "--roster",
        str(tmp_path / "roster.csv"),
    )
    assert "no roster row with a canvas_id or sis_user_id for 'bo'" in proc.stderr
    proc = grade_fails(
        str(base / "class"), "--out", str(tmp_path / "o"), "--course", str(course), "--due", "2026-01-01"
    )
    assert "needs the submission times" in proc.stderr


def test_one_submission_folder_is_graded_as_one_student(graded, tmp_path):
    base, course, ref = graded
    (tmp_path / "eve").mkdir()
    (tmp_path / "eve" / f"{MODULE}.py").write_text(ref)
    proc = run_grade(tmp_path / "eve", tmp_path / "out", course, "--jobs", "1")
    assert "grading it as the student 'eve'" in proc.stdout and "graded 1 students" in proc.stdout
    assert rows(tmp_path / "out")["eve"]["score"] == "10"
