"""Issue 44's end-to-end check: a class handed in the ways students really hand in (a notebook, a zip, a
"Download ZIP" folder nested one level, a syntax error, a file saved in cp1252, a look-alike file name) with
late students, graded once with a late policy and both LMS exports; another class is refused that OUT; one
student is regraded without repeating any option; and ``grades.csv``, both LMS files, ``report.html`` and every
``feedback.html`` agree on every final score.
"""

from __future__ import annotations

import csv
import json
import re
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from grade_fixtures import WRONG, replace
from support import ROOT, reference_source
from test_grade_command import copy_course, run_grade
from test_grade_desk import grade_fails

from autograder.core.course import load_course
from autograder.notebooks.builder import module_notebook

MODULE = "at_updates"
DUE = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
LATE = {"lou": timedelta(days=4), "nora": timedelta(hours=20)}  # past the cut-off; one started day (10% off)
EXPECTED_FINAL = {"ada": 10, "erin": 10, "liam": 10, "lou": 0, "mo": 0, "nora": 9, "sam": 0, "uma": 0}


def rows(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def number(text: str) -> float:
    return float(text)


def finals_everywhere(out, roster: dict[str, dict[str, str]]) -> dict[str, dict[str, float]]:
    """Each student's final score as each output says it."""
    grades = {r["student"]: number(r["final_score"]) for r in rows(out / "grades.csv")}
    by_canvas = {r["canvas_id"]: s for s, r in roster.items()}
    by_email = {r["email"]: s for s, r in roster.items()}
    canvas = {by_canvas[r["ID"]]: number(r["Lab 1"]) for r in rows(out / "canvas_import.csv")[1:] if r["ID"]}
    moodle = {by_email[r["Email address"]]: number(r["Lab 1"]) for r in rows(out / "moodle_import.csv")}
    page = (out / "report.html").read_text(encoding="utf-8")
    report = {
        m.group(1): number(m.group(2))
        for m in re.finditer(r'<tr[^>]*><td data-value="([^"]+)">.*?</td><td class="num" data-value="([^"]+)"', page)
    }
    feedback = {}
    for student in grades:
        text = (out / student / "feedback.html").read_text(encoding="utf-8")
        feedback[student] = number(re.search(r'id="total">[^<]*<strong>([\d.]+)/', text).group(1))
    return {"grades.csv": grades, "canvas": canvas, "moodle": moodle, "report.html": report, "feedback": feedback}


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    base = tmp_path_factory.mktemp("desk_class")
    course = copy_course(base / "course")
    ref = reference_source(MODULE)
    fns = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
    cls = base / "class"
    for student in EXPECTED_FINAL | {"kate": 0}:
        (cls / student).mkdir(parents=True)
    for student in ("ada", "lou", "nora"):
        (cls / student / f"{MODULE}.py").write_text(ref)
    notebook = module_notebook(load_course(course), load_course(course).module(MODULE))  # every cell answered
    (cls / "erin" / f"{MODULE}.ipynb").write_text(json.dumps(notebook))
    with zipfile.ZipFile(cls / "kate" / "submission.zip", "w") as archive:
        archive.writestr(f"{MODULE}.py", replace(ref, {fns[1]: WRONG}))
    (cls / "liam" / "jax-course-main" / "exercises").mkdir(parents=True)
    (cls / "liam" / "jax-course-main" / "exercises" / f"{MODULE}.py").write_text(ref)
    (cls / "sam" / f"{MODULE}.py").write_text(ref.replace("def ", "def (", 1))
    (cls / "uma" / f"{MODULE}.py").write_bytes(("# written by Ren\u00e9e \u2014 caf\u00e9\n" + ref).encode("cp1252"))
    (cls / "mo" / "at_update.py").write_text(ref)
    times = base / "times.csv"
    times.write_text(
        "student,submitted_at\n"
        + "".join(f"{s},{(DUE + LATE.get(s, -timedelta(hours=1))).isoformat()}\n" for s in [*EXPECTED_FINAL, "kate"])
    )
    roster = {
        s: {"name": s.title(), "canvas_id": str(100 + i), "email": f"{s}@uni.example"}
        for i, s in enumerate(sorted([*EXPECTED_FINAL, "kate", "zed"]))
    }
    (base / "roster.csv").write_text(
        "student,name,canvas_id,email\n"
        + "".join(f"{s},{r['name']},{r['canvas_id']},{r['email']}\n" for s, r in roster.items())
    )
    first = run_grade(
        cls,
        base / "out",
        course,
        "--jobs",
        "2",
        "--due",
        DUE.isoformat(),
        "--submitted-at",
        f"csv:{times}",
        "--late-penalty",
        "10",
        "--late-cutoff",
        "3",
        "--roster",
        str(base / "roster.csv"),
        "--canvas",
        "Lab 1",
        "--moodle",
        "Lab 1",
    )
    return base, course, cls, roster, first, fns, ref


def test_every_way_of_handing_in_is_graded_or_named(desk):
    base, _, _, roster, first, _, _ = desk
    out = base / "out"
    graded = {r["student"]: r for r in rows(out / "grades.csv")}
    assert {s: number(r["final_score"]) for s, r in graded.items() if s != "kate"} == EXPECTED_FINAL
    assert number(graded["kate"]["score"]) not in (0, 10), "the zip was graded: all but one function"
    assert number(graded["lou"]["score"]) == 10 and graded["lou"]["late_penalty_percent"] == "100"
    results = {s: json.loads((out / s / "results.json").read_text()) for s in graded}
    said = lambda s: "\n".join(t["output"] for t in results[s]["tests"])  # noqa: E731
    assert "SyntaxError" in said("sam")
    assert f"{MODULE}.py is not UTF-8 text (it looks like Windows-1252 (cp1252)" in said("uma")
    assert "UnicodeDecodeError" not in said("uma")
    assert "found at_update.py; expected at_updates.py" in said("mo")
    assert "warning: mo: at_updates.py is missing from your submission: found at_update.py" in first.stderr
    report = (out / "report.html").read_text()
    assert "found at_update.py; expected at_updates.py" in report
    assert "found at_update.py; expected at_updates.py" in (out / "mo" / "feedback.html").read_text()
    erin = report[report.index('data-value="erin"') :].split("</tr>")[0]
    assert "no submission" not in erin


def test_another_class_is_refused_and_a_conflicting_option_too(desk, tmp_path):
    base, course, cls, _, _, _, ref = desk
    (tmp_path / "class2" / "zoe").mkdir(parents=True)
    (tmp_path / "class2" / "zoe" / f"{MODULE}.py").write_text(ref)
    before = (base / "out" / "grades.csv").read_bytes()
    proc = grade_fails(str(tmp_path / "class2"), "--out", str(base / "out"), "--course", str(course))
    assert f"already holds the grades of the class {cls}" in proc.stderr and "--force" in proc.stderr
    assert (base / "out" / "grades.csv").read_bytes() == before
    proc = grade_fails(
        str(cls), "--out", str(base / "out"), "--course", str(course), "--student", "kate", "--late-penalty", "20"
    )
    assert "--late-penalty 20.0 (graded with --late-penalty 10.0)" in proc.stderr, proc.stderr
    assert (base / "out" / "grades.csv").read_bytes() == before


def test_regrading_one_student_reuses_every_option_and_every_output_agrees(desk):
    base, course, cls, roster, _, fns, ref = desk
    out = base / "out"
    with zipfile.ZipFile(cls / "kate" / "submission.zip", "w") as archive:  # kate hands in the fix
        archive.writestr(f"{MODULE}.py", ref)
    (cls / "lou" / f"{MODULE}.py").write_text(replace(ref, {fns[0]: WRONG}))  # changed, but not named: kept
    proc = run_grade(cls, out, course, "--jobs", "1", "--student", "kate")
    assert "--student: reusing the options" in proc.stdout and "--due" in proc.stdout and "--canvas" in proc.stdout
    graded = {r["student"]: r for r in rows(out / "grades.csv")}
    assert number(graded["kate"]["final_score"]) == 10 and number(graded["lou"]["score"]) == 10
    assert {s: number(r["final_score"]) for s, r in graded.items() if s != "kate"} == EXPECTED_FINAL
    everywhere = finals_everywhere(out, roster)
    expected = {**EXPECTED_FINAL, "kate": 10}
    for where, finals in everywhere.items():
        # zed is on the roster with no folder: no submission, 0 in both imports (a blank cell changes nothing)
        assert finals == ({**expected, "zed": 0} if where in ("canvas", "moodle") else expected), (where, finals)


def test_changed_given_code_costs_no_function_and_is_named_once(tmp_path):
    """Issue 44, finding 8, graded: pytrees' given make_regression_data changed no longer costs fit (the
    reference's code) through the trusted replay; the student is told once, naming it."""
    course = copy_course(tmp_path / "course")
    source = reference_source("pytrees")
    changed = source.replace("noise=0.1):", "noise=3.0):", 1)
    assert changed != source
    (tmp_path / "class" / "pia").mkdir(parents=True)
    (tmp_path / "class" / "pia" / "pytrees.py").write_text(changed)
    proc = run_grade(tmp_path / "class", tmp_path / "out", course, "--jobs", "1", modules=("pytrees",))
    row = rows(tmp_path / "out" / "grades.csv")[0]
    assert number(row["score"]) == number(row["max_score"]), row
    note = "given code changed: pytrees.make_regression_data differs from the course&#x27;s given code"
    assert proc.stderr.count("given code changed: pytrees.make_regression_data") == 1, proc.stderr[-3000:]
    assert note in (tmp_path / "out" / "pia" / "feedback.html").read_text()
    assert note in (tmp_path / "out" / "report.html").read_text()
