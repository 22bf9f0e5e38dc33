"""Benchmark: the size of ``report.html`` for a class of N students and the time to write it (and to
render it in Chromium, when Debian's chromium and Playwright are there).

    python benchmarks/report_size.py [--students 200] [--modules all|at_updates,...]

The class is synthetic but shaped like a real one: for every function of the course a student passes,
makes one of five mistakes (each a realistic multi-line message with its hint), has not started it, or
did not submit the module; one student in 20 submitted nothing, one in 5 is late. Not a test: the
figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.core.course import load_course  # noqa: E402
from autograder.core.outcomes import FunctionScore, StudentResult  # noqa: E402
from autograder.core.status import Status  # noqa: E402
from autograder.grading.desk import late as late_work  # noqa: E402


def synthetic_class(course, modules, n: int, seed: int = 0):
    rng = random.Random(seed)
    due = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
    policy = late_work.Policy(due, 10.0, 3.0)
    results, late = [], {}
    for i in range(n):
        student = f"student{i:03d}"
        nothing = i % 20 == 7
        scores = []
        for fn in course.functions:
            if fn.module not in modules:
                continue
            roll = rng.random()
            if nothing:
                scores.append(
                    FunctionScore(
                        fn.module,
                        fn.name,
                        0.0,
                        fn.points,
                        Status.FAILED,
                        0,
                        4,
                        [f"{fn.module}.py is missing from your submission"],
                    )
                )
            elif roll < 0.6:
                scores.append(FunctionScore(fn.module, fn.name, fn.points, fn.points, Status.PASSED, 4, 4, []))
            elif roll < 0.7:
                scores.append(
                    FunctionScore(
                        fn.module,
                        fn.name,
                        0.0,
                        fn.points,
                        Status.NOT_STARTED,
                        0,
                        4,
                        [f"{fn.qualname} is not started (it still raises NotImplementedError)"],
                    )
                )
            else:
                k = rng.randrange(5)
                message = (
                    f"{fn.qualname}: mistake number {k}: the result differs from the reference\n"
                    "  expected: Array([[1., 0., 0.], [0., 1., 0.], [0., 0., 1.]], dtype=float32)\n"
                    "  got:      Array([[1., 1., 1.], [1., 1., 1.], [1., 1., 1.]], dtype=float32)\n"
                    "  smallest failing input: x=Array([[0., 0., 0.], [0., 0., 0.], [0., 0., 0.]]), value=1.0\n"
                    f"  hint: {fn.hint.strip()}"
                )
                scores.append(FunctionScore(fn.module, fn.name, 0.0, fn.points, Status.FAILED, 2, 4, [message]))
        results.append(StudentResult(student, scores))
        submitted = due + timedelta(hours=rng.choice([-30, -2, -1, 5, 30])) if i % 5 == 0 else due - timedelta(hours=3)
        late[student] = late_work.judge(policy, submitted)
    return results, late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--modules", default="all")
    args = parser.parse_args()
    course = load_course(ROOT)
    modules = tuple(m.name for m in course.modules) if args.modules == "all" else tuple(args.modules.split(","))
    results, late = synthetic_class(course, modules, args.students)

    from autograder.grading.outputs.html_report import report_html

    report_html(course, modules, results[:2], late=late)  # warm up outside the timing
    started = time.perf_counter()
    page = report_html(course, modules, results, late=late)
    built = time.perf_counter() - started
    functions = sum(1 for fn in course.functions if fn.module in modules)
    print(f"{args.students} students x {functions} functions ({len(modules)} modules)")
    print(f"report.html: {len(page.encode()) / 2**20:.2f} MiB, written in {built:.2f} s")
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return
    if not chromium.exists():
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        path.write_text(page, encoding="utf-8")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            try:
                tab = browser.new_page(viewport={"width": 1280, "height": 900})
                started = time.perf_counter()
                tab.goto(path.as_uri(), wait_until="load")
                loaded = time.perf_counter() - started
                # in the page: from the click on the score header to the next frame painted
                sorted_in = tab.evaluate(
                    """() => new Promise(done => {
                        const started = performance.now();
                        document.querySelectorAll('#students thead th')[1].click();
                        requestAnimationFrame(() => setTimeout(() => done((performance.now() - started) / 1000)));
                    })"""
                )
            finally:
                browser.close()
    print(
        f"Chromium: loaded and rendered in {loaded:.2f} s; sorting {args.students} rows by score took {sorted_in:.2f} s"
    )


if __name__ == "__main__":
    main()
