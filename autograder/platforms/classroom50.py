"""Classroom 50: ``autograder classroom50 OUT --slug SLUG`` and the ``result.json`` it grades into.

``OUT`` is the assignment's folder for a teacher's Classroom 50 configuration
repository (``CLASSROOM/autograders/SLUG/``), which Classroom 50 publishes as a
public bundle. It holds no reference: it is made from a student release
(``autograder release``: checks, kit, ``course.toml`` without hidden checks,
the recorded oracle):

    autograder.py        the entrypoint Classroom 50's runner starts in the student's checkout
    classroom50.json     the slug and the graded modules
    requirements.txt     the pinned stack (torch first, from PyTorch's CPU index)
    course/              the release's course.toml, exercises/ (stubs and checks), autograder/, oracle/
    release-body.md      what each function asks, its points and hint (the runner's release body
                         is rewritten per submission by autograder.py)

``autograder.py`` sets up a venv next to itself (once per runner), copies the
student's ``exercises/<module>.py`` files into a fresh copy of ``course/``
(the checks always come from the bundle, so a student cannot edit them), runs
``pytest --grading --results-json`` there and converts the results with
:func:`result` into Classroom 50's documented ``classroom50/result/v1``: one
test per ``<module>.<function>``, integer ``score``/``max-score`` (the course's
points scaled by :func:`scale`, so partial credit survives as integers), and
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

SCHEMA = "classroom50/result/v1"
MAX_BUNDLE_BYTES = 10 * 2**20
SETTINGS = "classroom50.json"
RELEASE_PARTS = ("course.toml", "exercises", "autograder", "oracle")

AUTOGRADER_PY = '''#!/usr/bin/env python3
"""Classroom 50 autograder written by `autograder classroom50` (see classroom50.json).

Started by Classroom 50's runner in the student's checkout. Sets up the pinned stack
once (next to this file), grades the student's exercises/<module>.py with the checks
of this bundle, and writes ./result.json and ./release-body.md.
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
CPU_TORCH = ["torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"]


def environment() -> Path:
    python = Path(os.environ.get("AUTOGRADER_PYTHON", HERE / ".venv" / "bin" / "python"))
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(HERE / ".venv")], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run(pip + CPU_TORCH, check=True)
        subprocess.run(pip + ["-r", str(HERE / "requirements.txt")], check=True)
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
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        checks = [f"exercises/test_{module}.py" for module in SETTINGS["modules"]]
        subprocess.run(
            [str(python), "-m", "pytest", *checks, "--grading", "--results-json", str(work / "results.json"),
             "-q", "-p", "no:cacheprovider"],
            cwd=work, env=env, check=False,
        )
        done = subprocess.run(
            [str(python), "-m", "autograder.platforms.classroom50", "--results", str(work / "results.json"),
             "--settings", str(HERE / "classroom50.json"), "--out", str(checkout)],
            cwd=work, env=env, check=False,
        )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
'''


def scale(course: Course, modules: tuple[str, ...], checks: dict[str, int]) -> int:
    """The smallest factor that makes every function's points per check an integer."""
    factor = 1
    for fn in course.functions:
        if fn.module in modules:
            unit = Fraction(fn.points).limit_denominator(1000) / max(1, checks.get(fn.qualname, 1))
            factor = math.lcm(factor, unit.denominator)
    return factor


def result(course: Course, modules: tuple[str, ...], results: dict, env: dict[str, str]) -> dict:
    """``classroom50/result/v1`` from ``pytest --results-json`` output (one row per function)."""
    rows = {f"{f['module']}.{f['function']}": f for f in results.get("functions", [])}
    checks = {name: int(row["total"]) for name, row in rows.items()}
    factor = scale(course, modules, checks)
    tests = []
    for fn in course.functions:
        if fn.module not in modules:
            continue
        row = rows.get(fn.qualname)
        maximum = int(Fraction(fn.points).limit_denominator(1000) * factor)
        if row is None:
            tests.append({"test-name": fn.qualname, "passed": False, "score": 0, "max-score": maximum})
            continue
        earned = Fraction(0)
        if row["points"] > 0:  # points * passed / total (0 when a correctness check failed), exactly
            earned = Fraction(fn.points).limit_denominator(1000) * int(row["passed"]) / max(1, int(row["total"]))
        tests.append({
            "test-name": fn.qualname,
            "passed": row["status"] == "passed",
            "score": int(earned * factor),
            "max-score": maximum,
        })
    commit = env.get("COMMIT_URL", "")
    return {
        "schema": SCHEMA,
        "classroom": env.get("CLASSROOM", ""),
        "assignment": env.get("ASSIGNMENT", ""),
        "submission": env.get("SUBMISSION_TAG", ""),
        "commit": commit,
        "release": env.get("RELEASE_URL", ""),
        "review": env.get("REVIEW_URL") or commit,
        "datetime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
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
        earned = f"{row['points']:g}" if row else "0"
        lines.append(f"| {fn.qualname} | {earned}/{fn.points:g} | {status} |")
        if row and row["status"] not in ("passed", "not started"):
            messages = list(dict.fromkeys(m.strip() for m in row.get("messages", []) if m.strip()))[:3]
            notes += ["", f"### {fn.qualname}", "", *(f"```text\n{m}\n```" for m in messages), f"Hint: {fn.hint}"]
    return "\n".join(lines + notes) + "\n"


def build(release: Path, out: Path, slug: str, course: Course, modules: tuple[str, ...], requirements: str) -> Path:
    """Write the assignment folder ``out`` from a student release; refuses a release holding ``solutions/``."""
    release, out = Path(release), Path(out)
    if (release / "solutions").exists():
        raise ValueError(f"{release} holds solutions/: a Classroom 50 bundle is public, build it from a student release")
    out.mkdir(parents=True, exist_ok=True)
    for part in RELEASE_PARTS:
        source = release / part
        if source.is_dir():
            shutil.copytree(source, out / "course" / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.is_file():
            (out / "course").mkdir(exist_ok=True)
            shutil.copyfile(source, out / "course" / part)
    (out / "autograder.py").write_text(AUTOGRADER_PY, encoding="utf-8")
    (out / SETTINGS).write_text(json.dumps({"slug": slug, "modules": list(modules)}, indent=2) + "\n", encoding="utf-8")
    (out / "requirements.txt").write_text(requirements, encoding="utf-8")
    (out / "release-body.md").write_text(release_body(course, modules, None), encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if size > MAX_BUNDLE_BYTES:
        raise ValueError(f"the bundle is {size / 2**20:.1f} MiB, over Classroom 50's {MAX_BUNDLE_BYTES / 2**20:.0f} MiB")
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
    (args.out / "result.json").write_text(json.dumps(result(course, modules, results, dict(os.environ)), indent=2) + "\n", encoding="utf-8")
    (args.out / "release-body.md").write_text(release_body(course, modules, results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
