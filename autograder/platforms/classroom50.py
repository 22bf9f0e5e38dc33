"""Classroom 50: ``autograder classroom50 OUT --slug SLUG`` and the ``result.json`` it grades into.

``OUT`` is the assignment's folder for a teacher's Classroom 50 configuration
repository (``CLASSROOM/autograders/SLUG/``), which Classroom 50 publishes as a
public bundle. It holds no reference: it is made from a student release
(``autograder release``: checks, kit, ``course.toml`` without hidden checks,
the recorded oracle):

    autograder.py        the entrypoint Classroom 50's runner starts in the student's checkout
    classroom50.json     the slug and the graded modules
    requirements.txt     the pinned stack (torch first, from PyTorch's CPU index)
    kit/                 the release's kit as a wheel (the ``autograder`` package and the checks' pytest plugin)
    course/              the release's course.toml, exercises/ (stubs and checks), oracle/
    release-body.md      what each function asks, its points and hint (the runner's release body
                         is rewritten per submission by autograder.py)

``autograder.py`` sets up a venv next to itself (once per runner: the stack, then the
kit's wheel) and proves it (the bundle's checks run there and give the stubs 0; a
broken environment is an ``::error`` and is not kept), copies the
student's ``exercises/<module>.py`` files into a fresh copy of ``course/``
(the checks always come from the bundle, so a student cannot edit them), runs
``pytest --grading --results-json`` there and converts the results with
:func:`result` into Classroom 50's documented ``classroom50/result/v1``: one
test per ``<module>.<function>``, integer ``score``/``max-score`` in the course's
own points (scaled by :func:`scale` only when partial credit is not a whole number), and
``passed``. It exits 0 whenever it graded (pass or fail is in ``result.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
from fractions import Fraction
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import points_text
from autograder.shipped import kit_wheel
from autograder.shipped.stack import CPU_INDEX, TORCH

SCHEMA = "classroom50/result/v1"
MAX_BUNDLE_BYTES = 10 * 2**20
SETTINGS = "classroom50.json"
RELEASE_PARTS = ("course.toml", "exercises", "oracle")  # the kit goes in as its wheel (kit/)
KIT_DIR = "kit"

AUTOGRADER_PY = '''#!/usr/bin/env python3
"""Classroom 50 autograder written by `autograder classroom50` (see classroom50.json).

Started by Classroom 50's runner in the student's checkout. Sets up its own environment
once (next to this file: the pinned stack, torch's CPU build, and the kit from its wheel in
kit/, which registers the checks' pytest plugin) and proves it (the bundle's checks run and
give the untouched stubs 0) before it grades; grades the student's exercises/<module>.py
with the checks of this bundle, and writes ./result.json and ./release-body.md.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETTINGS = json.loads((HERE / "classroom50.json").read_text(encoding="utf-8"))
VENV = HERE / ".venv"
PROVEN = VENV / "proven"
PIP = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
CPU_TORCH = ["@TORCH@", "--index-url", "@CPU_INDEX@"]


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "CI")}


def checks() -> list:
    return [f"exercises/test_{module}.py" for module in SETTINGS["modules"]]


def run_checks(python: Path, work: Path, results: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "pytest", *checks(), "--grading", "--results-json", str(results), "-q", "-p", "no:cacheprovider"],
        cwd=work, env=clean_env(), check=False, capture_output=True, text=True,
    )


def prove(python: Path) -> str:
    """The bundle's checks run in this environment and give the bundle's stubs 0, every function checked."""
    with tempfile.TemporaryDirectory(prefix="classroom50-proof-") as tmp:
        work = Path(tmp) / "course"
        shutil.copytree(HERE / "course", work)
        done = run_checks(python, work, Path(tmp) / "results.json")
        try:
            results = json.loads((Path(tmp) / "results.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"the checks did not run (pytest exit status {done.returncode}): {(done.stdout + done.stderr)[-3000:]}"
        rows = results.get("functions", [])
        if results.get("score") != 0 or not rows or any(r.get("status") != "not started" for r in rows):
            return f"the untouched stubs did not score 0, all not started: {json.dumps(results)[:3000]}"
    return ""


def environment() -> Path:
    python = VENV / "bin" / "python"
    if PROVEN.is_file():
        return python
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), *PIP, *CPU_TORCH], check=True, env=clean_env())
    subprocess.run([str(python), *PIP, "-r", str(HERE / "requirements.txt")], check=True, env=clean_env())
    wheels = sorted(str(w) for w in (HERE / "kit").glob("*.whl"))
    subprocess.run([str(python), *PIP, "--no-deps", *wheels], check=True, env=clean_env())
    problem = prove(python)
    if problem:
        print(f"::error title=The grading environment is broken::{problem.splitlines()[0]}")
        print(problem, file=sys.stderr)
        shutil.rmtree(VENV, ignore_errors=True)
        raise SystemExit(1)
    PROVEN.write_text("the stubs scored 0 with every check run\\n", encoding="utf-8")
    return python


def main() -> int:
    python = environment()
    checkout = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="classroom50-") as tmp:
        work = Path(tmp) / "course"
        shutil.copytree(HERE / "course", work)
        for module in SETTINGS["modules"]:
            mine = checkout / "exercises" / f"{module}.py"
            if mine.is_file() and not mine.is_symlink() and not mine.parent.is_symlink():  # regular files only
                shutil.copyfile(mine, work / "exercises" / f"{module}.py")
        ran = run_checks(python, work, work / "results.json")
        print(ran.stdout[-20000:], end="")
        print(ran.stderr[-5000:], end="", file=sys.stderr)
        done = subprocess.run(
            [str(python), "-m", "autograder.platforms.classroom50", "--results", str(work / "results.json"),
             "--settings", str(HERE / "classroom50.json"), "--out", str(checkout)],
            cwd=work, env=clean_env(), check=False,
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
'''.replace("@CPU_INDEX@", CPU_INDEX).replace("@TORCH@", TORCH)


def scale(values) -> int:
    """The smallest factor that makes every value (points, earned points) an integer: 1 whenever they already are,
    so a course of whole points is reported in its own points."""
    factor = 1
    for value in values:
        factor = math.lcm(factor, Fraction(value).limit_denominator(1000).denominator)
    return factor


def result(course: Course, modules: tuple[str, ...], results: dict, env: dict[str, str]) -> dict:
    """``classroom50/result/v1`` from ``pytest --results-json`` output (one row per function): the course's own
    points, scaled only when a score is not a whole number (Classroom 50 takes integers)."""
    rows = {f"{f['module']}.{f['function']}": f for f in results.get("functions", [])}
    earned: dict[str, Fraction] = {}
    functions = [fn for fn in course.functions if fn.module in modules]
    for fn in functions:
        row = rows.get(fn.qualname)
        earned[fn.qualname] = Fraction(0)
        if row is not None and row["points"] > 0:  # points * passed / total (0 when a correctness check failed)
            earned[fn.qualname] = (
                Fraction(fn.points).limit_denominator(1000) * int(row["passed"]) / max(1, int(row["total"]))
            )
    factor = scale([*(fn.points for fn in functions), *earned.values()])
    tests = []
    for fn in functions:
        row = rows.get(fn.qualname)
        tests.append(
            {
                "test-name": fn.qualname,
                "passed": row is not None and row["status"] == "passed",
                "score": int(earned[fn.qualname] * factor),
                "max-score": int(Fraction(fn.points).limit_denominator(1000) * factor),
            }
        )
    commit = env.get("COMMIT_URL", "")
    return {
        "schema": SCHEMA,
        "classroom": env.get("CLASSROOM", ""),
        "assignment": env.get("ASSIGNMENT", ""),
        "submission": env.get("SUBMISSION_TAG", ""),
        "commit": commit,
        "release": env.get("RELEASE_URL", ""),
        "review": env.get("REVIEW_URL") or commit,
        "datetime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }


def release_body(course: Course, modules: tuple[str, ...], results: dict | None) -> str:
    """Markdown for the submission's Release: per function, points, and each failure's message and hint."""
    rows = {f"{f['module']}.{f['function']}": f for f in (results or {}).get("functions", [])}
    lines = [f"## {course.title}", "", "| function | points | status |", "|---|---|---|"]
    notes = []
    for fn in course.functions:
        if fn.module not in modules:
            continue
        row = rows.get(fn.qualname)
        status = row["status"].replace("_", " ") if row else "not graded"
        earned = f"{points_text(row['points'], None)}" if row else "0"
        lines.append(f"| {fn.qualname} | {earned}/{points_text(fn.points, None)} | {status} |")
        if row and row["status"] not in ("passed", "not started"):
            messages = list(dict.fromkeys(m.strip() for m in row.get("messages", []) if m.strip()))[:3]
            notes += ["", f"### {fn.qualname}", "", *(f"```text\n{m}\n```" for m in messages), f"Hint: {fn.hint}"]
    return "\n".join(lines + notes) + "\n"


def build(release: Path, out: Path, slug: str, course: Course, modules: tuple[str, ...], requirements: str) -> Path:
    """Write the assignment folder ``out`` from a student release; refuses a release holding ``solutions/``."""
    release, out = Path(release), Path(out)
    if (release / "solutions").exists():
        raise ValueError(
            f"{release} holds solutions/: a Classroom 50 bundle is public, build it from a student release"
        )
    out.mkdir(parents=True, exist_ok=True)
    for part in RELEASE_PARTS:
        source = release / part
        if source.is_dir():
            shutil.copytree(source, out / "course" / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            (out / "course").mkdir(exist_ok=True)
            shutil.copyfile(source, out / "course" / part)
    if not (release / "autograder").is_dir() or not (release / "pyproject.toml").is_file():
        raise ValueError(f"{release} has no autograder/ and pyproject.toml: build the bundle from a student release")
    kit_wheel.build_wheel(release / "autograder", release / "pyproject.toml", out / KIT_DIR)
    (out / "autograder.py").write_text(AUTOGRADER_PY, encoding="utf-8")
    (out / SETTINGS).write_text(json.dumps({"slug": slug, "modules": list(modules)}, indent=2) + "\n", encoding="utf-8")
    (out / "requirements.txt").write_text(requirements, encoding="utf-8")
    (out / "release-body.md").write_text(release_body(course, modules, None), encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if size > MAX_BUNDLE_BYTES:
        raise ValueError(
            f"the bundle is {size / 2**20:.1f} MiB, over Classroom 50's {MAX_BUNDLE_BYTES / 2**20:.0f} MiB"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """In the bundle's course copy: results.json -> ./result.json and ./release-body.md in ``--out``."""
    from autograder.core.course import load_course

    parser = argparse.ArgumentParser(prog="python -m autograder.platforms.classroom50")
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--settings", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    course = load_course(Path.cwd())
    modules = tuple(json.loads(args.settings.read_text(encoding="utf-8"))["modules"])
    try:
        results = json.loads(args.results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"::error::the checks did not run ({err})")
        return 1
    (args.out / "result.json").write_text(
        json.dumps(result(course, modules, results, dict(os.environ)), indent=2) + "\n", encoding="utf-8"
    )
    (args.out / "release-body.md").write_text(release_body(course, modules, results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
