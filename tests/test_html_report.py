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
import io
import re
import shutil
from pathlib import Path

import pytest

from autograder.core.course import load_course
from autograder.grading.class_report import grades_csv
from autograder.core.outcomes import StudentResult
from autograder.grading.html_report import report_html
from autograder.core.status import Status
from autograder.core.outcomes import FunctionScore
from support import ROOT

MODULE = "at_updates"
HOSTILE_NAMES = ["<script>window.pwned=1<", "<img src=x onerror=window.pwned=2>", "<svg onload=window.pwned=3>", "\"' onmouseover=window.pwned=4 x='"]
HOSTILE_MESSAGE = "</code></td><script>window.pwned=5</script><img src=x onerror=window.pwned=6>"


def synthetic_results(course) -> list[StudentResult]:
    functions = course.module(MODULE).functions
    results = []
    for i, student in enumerate(["ada", "bo", *HOSTILE_NAMES]):
        scores = []
        for j, fn in enumerate(functions):
            ok = (i + j) % 3 != 0
            message = [] if ok else [f"{fn.qualname}: {HOSTILE_MESSAGE}\n  hint: ..."]
            scores.append(FunctionScore(MODULE, fn.name, fn.points if ok else 0.0, fn.points, Status.PASSED if ok else Status.FAILED, 1 if ok else 0, 1, message))
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
    assert "<script>window" not in page and "<img" not in page and "<svg onload" not in page and "' onmouseover" not in page
    assert page.count("<script>") == 1
    assert "Content-Security-Policy" in page and "sha256-" in page
    # Nothing is fetched: no external source, stylesheet, font or import.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page and not re.search(r"url\((?!#)", page)  # url(#id) is inside the page
    assert page.count("<svg") == 2  # the two plots, inline


def test_the_numbers_on_the_page_are_those_of_grades_csv(course):
    results = synthetic_results(course)
    page = report_html(course, (MODULE,), results)
    rows = list(csv.DictReader(io.StringIO(grades_csv(course, (MODULE,), results))))
    body = page[page.index('<table id="students"') :]
    cells = re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", body)
    assert len(cells) == len(rows)
    columns = [fn.qualname for fn in course.module(MODULE).functions]
    import html

    for (name, rest), row in zip(cells, rows):
        assert html.unescape(name) == row["student"]
        numbers = re.findall(r'<td class="num">([^<]*)</td>', rest)
        assert numbers == [row["score"], *(row[c] for c in columns)]


def test_the_most_common_failure_counts_each_student_once():
    """Two checks of one function failing with the same first line (other inputs below it) are one student."""
    from autograder.grading.class_report import most_common_failures

    same_student = FunctionScore(MODULE, "f", 0.0, 1.0, Status.FAILED, 0, 2, ["f raised ValueError: x\n  input 1", "f raised ValueError: x\n  input 2"])
    other = FunctionScore(MODULE, "f", 0.0, 1.0, Status.FAILED, 0, 1, ["f: result differs"])
    assert most_common_failures([same_student, other], 3) == [("f raised ValueError: x", 1), ("f: result differs", 1)]
    assert most_common_failures([same_student, same_student, other], 1) == [("f raised ValueError: x", 2)]


# a real grade run, opened in Chromium ------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> Path:
    from grade_fixtures import RAISES, WRONG, replace
    from support import reference_source
    from test_grade_command import copy_course, run_grade

    base = tmp_path_factory.mktemp("report")
    course_dir = copy_course(base / "course")
    ref = reference_source(MODULE)
    fns = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
    submissions = {
        "correct": ref,
        "half": replace(ref, {fns[2]: WRONG, fns[3]: WRONG}),
        "wrong": replace(ref, {fn: WRONG for fn in fns}),
        "raises": replace(ref, {fns[0]: RAISES}),
        HOSTILE_NAMES[0]: replace(ref, {fns[0]: f"raise ValueError({HOSTILE_MESSAGE!r})"}),
        HOSTILE_NAMES[1]: replace(ref, {fns[1]: f"raise ValueError({HOSTILE_MESSAGE!r})"}),
        HOSTILE_NAMES[2]: ref,
    }
    for student, source in submissions.items():
        (base / "class" / student).mkdir(parents=True)
        (base / "class" / student / f"{MODULE}.py").write_text(source)
    run_grade(base / "class", base / "out", course_dir, "--jobs", "2")
    return base / "out"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (bash scripts/test.sh installs it)")
def test_the_report_of_a_graded_class_renders_in_chromium(graded_class, tmp_path):
    from playwright.sync_api import sync_playwright

    with open(graded_class / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in rows[0] if "." in c]
    course = load_course(ROOT)
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
            table = page.locator("#students tbody tr")
            assert table.count() == len(rows)

            def shown() -> list[list[str]]:
                return [[c.strip() for c in r] for r in page.eval_on_selector_all(
                    "#students tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")]

            # The numbers shown are grades.csv's (names too, as text: escaped, not markup).
            expected = {r["student"]: [r["score"], *(r[c] for c in columns)] for r in rows}
            assert {cells[0]: cells[1:] for cells in shown()} == expected
            assert {cells[0] for cells in shown()} >= set(HOSTILE_NAMES[:3])
            # Pass rates per function, in course order, count the students with full marks.
            functions = page.eval_on_selector_all("#functions tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
            assert [f[0] for f in functions] == [fn.qualname for fn in course.module(MODULE).functions]
            for fn_row, fn in zip(functions, course.module(MODULE).functions):
                full = sum(float(r[fn.qualname]) == fn.points for r in rows)
                assert fn_row[2] == f"{full}/{len(rows)}"
            hit = [f for f in functions if "<script>window.pwned=5</script>" in f[5]]
            assert hit and all(f[4] == "1" for f in hit), "the hostile message is shown as text, with its count"

            # Sorting by score, both ways, and by name.
            header = page.locator("#students thead th")
            header.nth(1).click()
            scores = [float(cells[1]) for cells in shown()]
            assert scores == sorted(scores)
            header.nth(1).click()
            assert [float(cells[1]) for cells in shown()] == sorted(scores, reverse=True)
            header.nth(0).click()
            names = [cells[0] for cells in shown()]
            assert names == page.evaluate("names => [...names].sort((a, b) => a.localeCompare(b))", names)
            assert names != [cells[0] for cells in sorted(shown(), key=lambda c: float(c[1]))] or len(rows) < 2
            assert page.evaluate("typeof window.pwned") == "undefined"

            shot = tmp_path / "report-screenshot.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    artifacts = ROOT / "build"
    artifacts.mkdir(exist_ok=True)
    shutil.copy(shot, artifacts / "report-screenshot.png")
