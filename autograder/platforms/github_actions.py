"""GitHub Actions in a student release: ``.github/workflows/grade.yml`` and the step that reports.

On every push the workflow sets up (the environment cached by the hash of
``pyproject.toml`` and ``scripts/setup.sh``), runs ``pytest exercises/`` with
``--grading`` passed explicitly (GitHub's classroom command grader strips the
environment, so ``CI`` is not set there) and ``--results-json results.json``,
and then ``autograder actions-report results.json``. Before the checks, ``autograder
actions-preflight`` proves the job's environment (:func:`preflight`): the release's
untouched stubs (``oracle/given/``) get 0, every function of ``course.toml``
collected and "not started", and JAX's backend starts as the checks start it
(the course's 8 CPU devices, its XLA flags) and computes. A failure is a red
run with ``::error title=The grading environment is broken::`` and the
process's own last lines (XLA's fatal line among them), never a student's 0.
The report:

- the score table as the job summary (``$GITHUB_STEP_SUMMARY``: one row per
  function, then each failing function's message and hint);
- ``::notice title=Autograding report::{"totalPoints":X,"maxPoints":Y}``,
  the line existing classroom tools read, and ``points``/``max-points`` in
  ``$GITHUB_OUTPUT``;
- a red run, with an ``::error`` that says why, when the checks did not run
  (pytest could not start: a broken set-up; no checks collected) or when a
  function of ``course.toml`` has no check left (a deleted check file): never
  a green 0.

``results.json`` is uploaded as the ``results`` artifact. This score is
practice feedback: the grade is the instructor's ``grade`` with their seed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import points_text
from autograder.grading.preflight import last_lines

RESULTS = "results.json"
PYTEST_SOME_FAILED = 1  # pytest's exit code when checks ran and some failed: a score, not a broken run

WORKFLOW = """\
# Written by `autograder release`. Runs the course's checks on every push:
# the score table is the run's summary, results.json its artifact. A practice
# score: the grade is the instructor's.
name: Grade
on:
  push:
  workflow_dispatch:
permissions:
  contents: read
jobs:
  grade:
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Cache the environment
        id: cache
        uses: actions/cache@v4
        with:
          path: .venv
          key: venv-${{ runner.os }}-py3.11-${{ hashFiles('pyproject.toml', 'scripts/setup.sh') }}
      - name: Set up
        if: steps.cache.outputs.cache-hit != 'true'
        run: bash scripts/setup.sh
      - name: Prove the environment
        run: .venv/bin/python -m autograder actions-preflight
      - name: Run the checks
        run: |
          set +e
          .venv/bin/python -m pytest exercises/ --grading --results-json RESULTS -q -p no:cacheprovider
          code=$?
          if [ "$code" -gt PYTEST_SOME_FAILED ]; then
            echo "::error title=The checks did not run::pytest stopped with exit code $code: the set-up is broken or the checks are missing (exercises/test_*.py). Restore them from the course's repository."
            exit "$code"
          fi
      - name: Report the score
        id: report
        run: .venv/bin/python -m autograder actions-report RESULTS
      - name: Keep results.json
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: results
          path: RESULTS
          if-no-files-found: warn
""".replace("PYTEST_SOME_FAILED", str(PYTEST_SOME_FAILED)).replace("RESULTS", RESULTS)


def write_workflow(out: Path) -> Path:
    """Write ``.github/workflows/grade.yml`` into the release ``out``."""
    path = Path(out) / ".github" / "workflows" / "grade.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WORKFLOW, encoding="utf-8")
    return path


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def summary(course: Course, results: dict) -> str:
    """The job summary: one row per function, then what failed, with the hint."""
    functions = {(f["module"], f["function"]): f for f in results.get("functions", [])}
    unjudged = not_judged(course, results)
    lines = [
        f"## {course.title}: {points_text(results['score'])}/{points_text(judgedpoints_text(course, unjudged))} points",
        "",
    ]
    lines += ["| function | points | checks | status |", "|---|---|---|---|"]
    failing = []
    for fn in course.functions:
        row = functions.get((fn.module, fn.name))
        if row is None:
            why = (
                "not judged here (the release cannot answer its checks)"
                if fn.qualname in unjudged
                else "checks missing"
            )
            lines.append(f"| {fn.qualname} | 0/{points_text(fn.points)} | — | {why} |")
            continue
        status = row["status"].replace("_", " ")
        lines.append(
            f"| {fn.qualname} | {points_text(row['points'])}/{points_text(fn.points)} | {row['passed']}/{row['total']} | {status} |"
        )
        if row["status"] not in ("passed", "not started"):
            failing.append((fn, row))
    for fn, row in failing:
        lines += ["", f"### {fn.qualname}", ""]
        for message in list(dict.fromkeys(m.strip() for m in row.get("messages", []) if m.strip()))[:3]:
            lines += ["```text", message, "```"]
        lines.append(f"Hint: {fn.hint}")
    return "\n".join(lines) + "\n"


def missing_functions(course: Course, results: dict) -> list[str]:
    """Functions of ``course.toml`` without any check in the results (their checks were deleted)."""
    seen = {(f["module"], f["function"]) for f in results.get("functions", [])}
    skipped = not_judged(course, results)
    return [fn.qualname for fn in course.functions if (fn.module, fn.name) not in seen and fn.qualname not in skipped]


def not_judged(course: Course, results: dict) -> dict[str, str]:
    """Functions whose every check was skipped, with the reason: a student release cannot answer them
    (``autograder release`` lists them); the instructor's grading judges them."""
    seen = {(f["module"], f["function"]) for f in results.get("functions", [])}
    skipped = results.get("skipped", {})
    return {
        fn.qualname: skipped[fn.qualname]
        for fn in course.functions
        if (fn.module, fn.name) not in seen and fn.qualname in skipped
    }


def judgedpoints_text(course: Course, unjudged: dict[str, str]) -> float:
    """The practice maximum: the course's points less those of the functions this release cannot judge."""
    return course.points - sum(fn.points for fn in course.functions if fn.qualname in unjudged)


def report(course: Course, results_path: Path, env: dict[str, str]) -> int:
    """Write the summary, the notice and the outputs; 1 (a red run) when the checks did not all run."""
    try:
        results = json.loads(Path(results_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"::error title=No results::{results_path} was not written ({err}): the checks did not run")
        return 1
    _append(env.get("GITHUB_STEP_SUMMARY"), summary(course, results))
    unjudged = not_judged(course, results)
    total, maximum = round(results["score"], 2), judgedpoints_text(course, unjudged)
    if unjudged:
        print(
            f"::warning title=Not judged here::{', '.join(unjudged)}: this release cannot answer their checks "
            "(they skip); the instructor's grading judges them"
        )
    print(
        "::notice title=Autograding report::"
        + json.dumps({"totalPoints": total, "maxPoints": maximum}, separators=(",", ":"))
    )
    _append(env.get("GITHUB_OUTPUT"), f"points={points_text(total)}\nmax-points={points_text(maximum)}\n")
    missing = missing_functions(course, results)
    if missing:
        print(
            f"::error title=Checks missing::no check ran for {', '.join(missing)}: restore exercises/test_*.py from the course's repository"
        )
        return 1
    return 0


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "actions-report",
        help="report a results.json in GitHub Actions (job summary, notice, outputs)",
        description="Used by the release's .github/workflows/grade.yml after `pytest exercises/ --results-json`.",
    )
    parser.add_argument("results", type=Path, metavar="RESULTS_JSON")
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")
    return parser


def run(course: Course, args: argparse.Namespace) -> int:
    return report(course, args.results, dict(os.environ))


# --- the job's pre-flight -----------------------------------------------------

STUBS = Path("oracle") / "given"  # the release's untouched stubs (public: what a student starts from)
# JAX's backend as the checks start it (the course's CPU devices, its quick-compilation XLA flags), then a
# compiled computation over every device: what a stub, which raises before any JAX runs, never proves.
BACKEND_PROBE = """
from autograder.runtime.devices import COURSE_CPU_DEVICES, use_course_backend
use_course_backend()
import jax
import jax.numpy as jnp
devices = jax.devices()
if devices[0].platform != "cpu" or len(devices) != COURSE_CPU_DEVICES:
    raise SystemExit(f"JAX runs on {len(devices)} {devices[0].platform} device(s), not the course's {COURSE_CPU_DEVICES} CPU devices")
rows = jnp.arange(2.0 * COURSE_CPU_DEVICES).reshape(COURSE_CPU_DEVICES, 2)
total = jax.jit(jnp.sum)(jax.pmap(lambda row: row * 2.0)(rows))
if float(total) != 2.0 * float(rows.sum()):
    raise SystemExit(f"JAX computed {float(total)} for {2.0 * float(rows.sum())}")
"""
PREFLIGHT_TIMEOUT = 900.0


def preflight(course: Course, python: str = sys.executable) -> str | None:
    """Prove this job's environment before the student's checks run; the problem, or None when it holds.

    The release's untouched stubs (``oracle/given/<module>.py``) run through the checks as the job runs them
    (``pytest --grading``): every function of ``course.toml`` must be collected and "not started", the score 0.
    Then JAX's backend starts as the checks start it and computes over the course's devices. (A release holds no
    reference, so none can be graded here: its recorded answers were made by the reference when the release was
    built.)"""
    root = course.root
    missing = [m.name for m in course.modules if not (root / STUBS / f"{m.name}.py").is_file()]
    if missing:
        return (
            f"the release's untouched stubs ({STUBS}/) lack {', '.join(missing)}: rebuild it with `autograder release`"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    with tempfile.TemporaryDirectory(prefix="autograder-preflight-") as tmp:
        results_path = Path(tmp) / RESULTS
        try:
            ran = subprocess.run(
                [python, "-m", "pytest", "exercises/", "--grading", "--submission", str(root / STUBS),
                 "--results-json", str(results_path), "-q", "-p", "no:cacheprovider"],
                cwd=root, env=env, capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"the checks did not finish on the untouched stubs within {PREFLIGHT_TIMEOUT:g} s"
        try:
            results = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"the checks did not run on the untouched stubs (pytest exit status {ran.returncode})" + last_lines(
                ran.stdout + ran.stderr
            )
    rows = {(r.get("module"), r.get("function")): r for r in results.get("functions", [])}
    unjudged = not_judged(course, results)
    wrong = [
        f"{fn.qualname}: {rows[(fn.module, fn.name)].get('status') if (fn.module, fn.name) in rows else 'no check ran'}"
        for fn in course.functions
        if fn.qualname not in unjudged and (rows.get((fn.module, fn.name)) or {}).get("status") != "not started"
    ]
    if wrong or results.get("score") != 0:
        return (
            f"the release's untouched stubs did not get 0 with every function not started (score "
            f"{points_text(results.get('score') or 0)}): " + "; ".join(wrong[:8]) + last_lines(ran.stdout + ran.stderr)
        )
    try:
        probe = subprocess.run(
            [python, "-c", BACKEND_PROBE], cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True,
            timeout=PREFLIGHT_TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"JAX's backend did not start within {PREFLIGHT_TIMEOUT:g} s"
    if probe.returncode != 0:
        return (
            f"JAX's backend did not start and compute as the checks start it (exit status {probe.returncode})"
            + last_lines(probe.stdout + probe.stderr)
        )
    return None


def run_preflight(course: Course) -> int:
    """``autograder actions-preflight``: 0 and one line when the environment holds; else an ``::error`` and 1."""
    started = time.monotonic()
    problem = preflight(course)
    if problem:
        print(f"::error title=The grading environment is broken::{problem.splitlines()[0]}")
        print(problem, file=sys.stderr)
        return 1
    print(
        f"pre-flight passed in {time.monotonic() - started:.1f} s: the release's untouched stubs got nothing, "
        f"every function not started, and JAX's backend computed on the course's CPU devices"
    )
    return 0


def add_preflight_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "actions-preflight",
        help="prove a release's environment before its checks run (GitHub Actions)",
        description="Used by the release's .github/workflows/grade.yml before `pytest exercises/`: the release's "
        "untouched stubs must get 0 (every function not started) and JAX's backend must start and compute.",
    )
    parser.add_argument("--course", type=Path, metavar="DIR", help="the course folder (default: found from here)")
    return parser
