"""``OUT/report.html``: built from results (unit tests), and opened in a real headless Chromium.

The browser test grades a small fixture class with the real ``grade`` command
(``--only at_updates``), including students whose folder names and error
messages are markup, opens the report with Playwright driving Debian's
``chromium`` (installed by scripts/test.sh), checks that every number shown
matches ``grades.csv``, that nothing from a submission runs as script, and that
sorting works, and keeps a screenshot in ``build/report-screenshot.png``.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from support import ROOT

from autograder.core.course import load_course
from autograder.core.outcomes import FunctionScore, StudentResult
from autograder.core.status import Status
from autograder.grading.outputs.class_report import grades_csv
from autograder.grading.outputs.html_report import report_html

MODULE = "at_updates"
HOSTILE_NAMES = [
    "<script>window.pwned=1<",
    "<img src=x onerror=window.pwned=2>",
    "<svg onload=window.pwned=3>",
    "\"' onmouseover=window.pwned=4 x='",
]
HOSTILE_MESSAGE = "</code></td><script>window.pwned=5</script><img src=x onerror=window.pwned=6>"


def synthetic_results(course) -> list[StudentResult]:
    functions = course.module(MODULE).functions
    results = []
    for i, student in enumerate(["ada", "bo", *HOSTILE_NAMES]):
        scores = []
        for j, fn in enumerate(functions):
            ok = (i + j) % 3 != 0
            message = [] if ok else [f"{fn.qualname}: {HOSTILE_MESSAGE}\n  hint: ..."]
            scores.append(
                FunctionScore(
                    MODULE,
                    fn.name,
                    fn.points if ok else 0.0,
                    fn.points,
                    Status.PASSED if ok else Status.FAILED,
                    1 if ok else 0,
                    1,
                    message,
                )
            )
        results.append(StudentResult(student, scores))
    return results


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT)


def test_the_page_is_self_contained_escaped_and_deterministic(course):
    results = synthetic_results(course)
    page = report_html(course, (MODULE,), results)
    assert page == report_html(course, (MODULE,), list(reversed(results)))
    for name in HOSTILE_NAMES:
        assert name not in page
    assert (
        "<script>window" not in page
        and "<img" not in page
        and "<svg onload" not in page
        and "' onmouseover" not in page
    )
    assert page.count("<script>") == 1
    assert "Content-Security-Policy" in page and "sha256-" in page
    # Nothing is fetched: no external source, stylesheet, font or import.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert (
        "<link" not in page and "@import" not in page and not re.search(r"url\((?!#)", page)
    )  # url(#id) is inside the page
    assert page.count("<svg") == 2  # the two plots, inline


def test_the_numbers_on_the_page_are_those_of_grades_csv(course):
    results = synthetic_results(course)
    page = report_html(course, (MODULE,), results)
    rows = list(csv.DictReader(io.StringIO(grades_csv(course, (MODULE,), results))))
    body = page[page.index('<table id="students"') :]
    cells = re.findall(
        r'<tr(?: class="nosub")?><td data-value="[^"]*"><button class="student" data-target="student-\d+">(.*?)</button></td>(.*?)</tr>',
        body,
    )
    assert len(cells) == len(rows)
    columns = [fn.qualname for fn in course.module(MODULE).functions]
    for (name, rest), row in zip(cells, rows):
        assert html.unescape(name) == row["student"]
        numbers = re.findall(
            r'<td class="num" data-value="[^"]*" style="background:hsl\(\d+, 70%, \d+%\)">([^<]*)</td>', rest
        )
        assert numbers == [row["score"], *(row[c] for c in columns)]


def test_the_most_common_failure_counts_each_student_once():
    """Two checks of one function failing with the same first line (other inputs below it) are one student."""
    from autograder.grading.outputs.class_report import most_common_failures

    same_student = FunctionScore(
        MODULE,
        "f",
        0.0,
        1.0,
        Status.FAILED,
        0,
        2,
        ["f raised ValueError: x\n  input 1", "f raised ValueError: x\n  input 2"],
    )
    other = FunctionScore(MODULE, "f", 0.0, 1.0, Status.FAILED, 0, 1, ["f: result differs"])
    assert most_common_failures([same_student, other], 3) == [("f raised ValueError: x", 1), ("f: result differs", 1)]
    assert most_common_failures([same_student, same_student, other], 1) == [("f raised ValueError: x", 2)]


# a real grade run, opened in Chromium ------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


FORMULA_NAME = '=HYPERLINK("evil.example","click")'  # a folder name: no slash
DUE = "2026-03-01T23:59:00+00:00"
TIMES = {"correct": "2026-03-01T12:00:00Z", "late": "2026-03-02T10:00:00Z", "too_late": "2026-03-09T10:00:00Z"}


def grade_args(base: Path) -> list[str]:
    return [
        "--jobs",
        "2",
        "--submitted-at",
        f"csv:{base / 'times.csv'}",
        "--due",
        DUE,
        "--late-penalty",
        "10",
        "--late-cutoff",
        "3",
        "--roster",
        str(base / "roster.csv"),
        "--canvas",
        "Lab 1",
        "--canvas-assignment-id",
        "77",
        "--moodle",
        "Lab 1",
    ]


def write_class_files(base: Path, students: list[str]) -> None:
    """The submission times and the roster of ``students`` (plus one roster entry with no folder)."""
    with open(base / "times.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "submitted_at"])
        writer.writerows([s, TIMES.get(s, "2026-03-01T20:00:00Z")] for s in students)
    with open(base / "roster.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "email"])
        for i, s in enumerate([*students, "never_submitted"]):
            writer.writerow([s, f"Student {i}", str(1000 + i), f"S{i}", f"login{i}", "A", f"s{i}@uni.example"])


def csv_text_of(name: str) -> str:
    from autograder.grading.outputs.inert import csv_text

    return csv_text(name)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> Path:
    """A class as the instructor's desk sees it: a correct student, two with the same two bugs, two empty
    folders, late students, and folders named like markup or a formula."""
    from grade_fixtures import RAISES, WRONG, replace
    from support import reference_source
    from test_grade_command import copy_course, run_grade

    base = tmp_path_factory.mktemp("report")
    course_dir = copy_course(base / "course")
    ref = reference_source(MODULE)
    fns = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
    same = replace(ref, {fns[1]: WRONG, fns[3]: WRONG})
    submissions = {
        "correct": ref,
        "same_a": same,
        "same_b": same,
        "late": same,
        "too_late": ref,
        "wrong": replace(ref, {fn: WRONG for fn in fns}),
        "raises": replace(ref, {fns[0]: RAISES}),
        "empty_a": None,
        "empty_b": None,
        HOSTILE_NAMES[0]: replace(ref, {fns[0]: f"raise ValueError({HOSTILE_MESSAGE!r})"}),
        HOSTILE_NAMES[1]: replace(ref, {fns[1]: f"raise ValueError({HOSTILE_MESSAGE!r})"}),
        HOSTILE_NAMES[2]: ref,
        FORMULA_NAME: ref,
    }
    for student, source in submissions.items():
        (base / "class" / student).mkdir(parents=True)
        if source is not None:
            (base / "class" / student / f"{MODULE}.py").write_text(source)
    write_class_files(base, list(submissions))
    proc = run_grade(base / "class", base / "out", course_dir, *grade_args(base))
    (base / "out.log").write_text(proc.stdout + proc.stderr)
    return base / "out"


def test_grades_csv_has_late_columns_and_inert_names(graded_class):
    with open(graded_class / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert "'" + FORMULA_NAME in rows and FORMULA_NAME not in rows
    assert rows["correct"]["late_by"] == "" and rows["correct"]["final_score"] == rows["correct"]["score"] == "10"
    assert rows["correct"]["submitted_at"] == "2026-03-01T12:00:00Z"
    assert rows["late"]["late_by"] == "0d 10:01:00" and rows["late"]["late_penalty_percent"] == "10"
    assert float(rows["late"]["final_score"]) == pytest.approx(0.9 * float(rows["late"]["score"]), abs=0.01)
    assert rows["too_late"]["score"] == "10" and rows["too_late"]["final_score"] == "0", "past the cut-off"
    assert rows["empty_a"]["score"] == "0"


def test_the_lms_exports_read_back_with_their_documented_columns(graded_class):
    log = (graded_class.parent / "out.log").read_text()
    assert "never_submitted" in log, "the roster entry with no folder is listed"
    with open(graded_class / "grades.csv", newline="", encoding="utf-8") as f:
        finals = {r["student"]: r["final_score"] for r in csv.DictReader(f)}
    with open(graded_class.parent / "roster.csv", newline="", encoding="utf-8") as f:
        roster = {r["student"]: r for r in csv.DictReader(f)}
    with open(graded_class / "canvas_import.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    # Canvas's gradebook import: Student / ID / SIS User ID identify the student, SIS Login ID, Section, then
    # one column per assignment, "Name (id)"; the Points Possible row as Canvas's own export has it.
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1 (77)"]
    assert rows[1][0] == "Points Possible" and rows[1][5] == "10"
    by_id = {r[1]: r for r in rows[2:]}
    assert len(by_id) == len(finals) + 1
    for student, row in roster.items():
        if student == "never_submitted":
            assert by_id[row["canvas_id"]][5] == "0", "no folder: no submission, 0 (a blank changes nothing)"
            continue
        assert by_id[row["canvas_id"]][5] == finals[csv_text_of(student)]
        assert by_id[row["canvas_id"]][2] == row["sis_user_id"] and by_id[row["canvas_id"]][4] == "A"
    with open(graded_class / "moodle_import.csv", newline="", encoding="utf-8") as f:
        moodle = list(csv.DictReader(f))
    # Moodle's CSV grade import: a user identifier column (email, mapped to useremail) and a grade item column.
    assert list(moodle[0]) == ["Email address", "Lab 1"]
    emails = {r["email"]: csv_text_of(s) for s, r in roster.items()}
    assert {r["Email address"]: r["Lab 1"] for r in moodle} == {e: finals.get(s, "0") for e, s in emails.items()}


def test_every_student_gets_feedback_with_their_messages(graded_class):
    results = json.loads((graded_class / "same_a" / "results.json").read_text())
    page = (graded_class / "same_a" / "feedback.html").read_text()
    for test in results["tests"]:
        assert f'id="{test["name"]}"' in page
        for message in test["output"].split("\n\n")[1:]:
            assert html.escape(message.strip()).splitlines()[0] in page
    assert "hint:" in page and "Final score" not in page and "late)" not in page  # same_a was on time
    late = (graded_class / "late" / "feedback.html").read_text()
    assert "10% off by the late penalty: 10% per started day late, 1 day started" in late
    assert late.index("Final score: <strong>") < late.index("your checks earned")
    assert "<script" not in (graded_class / HOSTILE_NAMES[0] / "feedback.html").read_text()


def _shot(page, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    artifacts = ROOT / "build"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(path, artifacts / path.name)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (bash scripts/test.sh installs it)"
)
def test_the_report_of_a_graded_class_renders_in_chromium(graded_class, tmp_path):
    from playwright.sync_api import sync_playwright

    with open(graded_class / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in rows[0] if "." in c]
    course = load_course(ROOT)
    fns = course.module(MODULE).functions
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            page.on("pageerror", lambda err: problems.append(str(err)))
            page.on("console", lambda msg: msg.type == "error" and problems.append(msg.text))
            page.on("request", lambda req: req.url.startswith("file:") or problems.append(f"fetched {req.url}"))
            page.goto((graded_class / "report.html").as_uri())

            # Nothing from a submission ran, and the page broke no rule of its own.
            assert page.evaluate("typeof window.pwned") == "undefined"
            assert problems == []
            # It renders: two plots with a size, one row per student.
            for figure in ("#distribution svg", "#pass-rates svg"):
                box = page.locator(figure).bounding_box()
                assert box and box["width"] > 200 and box["height"] > 100
            assert page.locator("#students tbody tr").count() == len(rows)
            heads = page.eval_on_selector_all("#students thead th", "cells => cells.map(c => c.textContent)")

            def shown() -> list[dict[str, str]]:
                return [
                    dict(zip(heads, (c.strip() for c in r)))
                    for r in page.eval_on_selector_all(
                        "#students tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
                    )
                ]

            # The numbers shown are grades.csv's (names too, as text: escaped, not markup).
            expected = {
                r["student"]: [r["score"], r["final_score"], r["submitted_at"], r["late_by"], *(r[c] for c in columns)]
                for r in rows
            }
            got = {
                csv_text_of(c["student"]): [
                    c["raw"],
                    c["final"],
                    c["submitted"],
                    c["late by"],
                    *(c[fn.name] for fn in fns),
                ]
                for c in shown()
            }
            assert got == expected
            names = {c["student"] for c in shown()}
            assert names >= {*HOSTILE_NAMES[:3], FORMULA_NAME}
            # Students who submitted nothing are marked, and only they; late ones say so.
            notes = {c["student"]: c["note"] for c in shown()}
            assert {s for s, note in notes.items() if "no submission" in note} == {"empty_a", "empty_b"}
            assert (
                "late, 10% off" in notes["late"]
                and "late, 100% off" in notes["too_late"]
                and "late" not in notes["same_a"]
            )
            # A colour scale: full marks and no marks are painted differently.
            colour = lambda name: page.evaluate(  # noqa: E731
                "name => { const r = [...document.querySelectorAll('#students tbody tr')].find(r => r.cells[0].textContent === name);"
                " return getComputedStyle(r.cells[1]).backgroundColor; }",
                name,
            )
            assert colour("correct") != colour("wrong") and colour("correct").startswith("rgb")

            # Per function: real mistakes apart from "not submitted" and "not started", with counts.
            functions = page.eval_on_selector_all(
                "#functions tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
            )
            assert [f[0] for f in functions] == [fn.qualname for fn in fns]
            for fn_row, fn in zip(functions, fns):
                full = sum(float(r[fn.qualname]) == fn.points for r in rows)
                assert fn_row[2] == f"{full}/{len(rows)}"
                assert fn_row[6] == "2", "two empty folders: not submitted"
            scatter = functions[1]
            assert scatter[8].startswith("4×"), (
                "same_a, same_b, late and wrong made the same mistake; 'missing' does not win"
            )
            assert any("<script>window.pwned=5</script>" in f[8] for f in functions), (
                "the hostile message is shown as text"
            )

            # Click a function: who failed it and why.
            details = page.locator("#functions tbody tr").nth(1).locator("details")
            assert not details.evaluate("d => d.open")
            details.locator("summary").click()
            assert details.evaluate("d => d.open")
            items = details.locator("li").all_text_contents()
            assert any(t.startswith("4×") and all(s in t for s in ("same_a", "same_b", "late", "wrong")) for t in items)
            assert any("not submitted" in t and "empty_a" in t and "empty_b" in t for t in items)
            _shot(page, tmp_path / "report-function-drilldown.png")

            # Click a student: their messages for every function, what results.json says.
            button = page.locator("#students button.student", has_text="same_a")
            opened = page.locator(f"#{button.get_attribute('data-target')}")
            assert not opened.evaluate("d => d.open")
            button.click()
            assert opened.evaluate("d => d.open") and opened.is_visible()
            text = opened.text_content()
            results = json.loads((graded_class / "same_a" / "results.json").read_text())
            for test in results["tests"]:
                assert test["name"] in text and test["output"].splitlines()[0] in text
            opened.screenshot(path=str(tmp_path / "report-student-drilldown.png"))
            shutil.copy(tmp_path / "report-student-drilldown.png", ROOT / "build" / "report-student-drilldown.png")

            # Sorting by score, both ways, by the penalised score, and by name.
            header = page.locator("#students thead th")
            header.nth(heads.index("raw")).click()
            scores = [float(c["raw"]) for c in shown()]
            assert scores == sorted(scores)
            header.nth(heads.index("raw")).click()
            assert [float(c["raw"]) for c in shown()] == sorted(scores, reverse=True)
            header.nth(heads.index("final")).click()
            finals = [float(c["final"]) for c in shown()]
            assert finals == sorted(finals) and finals[0] == 0
            header.nth(0).click()
            names = [c["student"] for c in shown()]
            assert names == page.evaluate("names => [...names].sort((a, b) => a.localeCompare(b))", names)
            assert page.evaluate("typeof window.pwned") == "undefined"
            assert problems == []
            page.evaluate("window.scrollTo(0, 0)")
            _shot(page, tmp_path / "report-screenshot.png")
        finally:
            browser.close()
