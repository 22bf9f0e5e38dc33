"""Gradescope: ``autograder gradescope OUT.zip`` and the runner the bundle starts per submission.

The bundle (Gradescope's documented layout: ``setup.sh`` and ``run_autograder``
at the root of the zip, unpacked into ``/autograder/source``) holds the
instructor's course of the modules the assignment grades (``--only``: those
modules' checks, stubs and references, ``course.toml`` cut to them) with its
live reference — students never see it — and the kit as a wheel
(``kit_wheel``). ``setup.sh`` installs bubblewrap, Python 3.11, the pinned
stack (torch's CPU build first) and the kit's wheel, which registers the
checks' pytest plugin, into ``/autograder/venv`` (the image's own Python, which
Gradescope's harness uses, is left alone), creates the unprivileged user
``student``, and proves the environment (:func:`prove`: the reference earns full
marks and the stubs 0 there) or fails the image build, saying why.
``run_autograder`` (as root, per submission) makes the source readable by
root only and the results folder root's alone (nothing a student left there,
no write by the student's user), and runs :func:`run`, whose first line says
which isolation is in force: ``autograder grade``'s pipeline on
``/autograder/submission`` with ``--run-as student`` (the student's code runs
as that user, the trusted verifier as root), then writes
``/autograder/results/results.json``. Whatever fails — the submission, the
grader, the interpreter — a valid ``results.json`` is written (by the shell
script if Python itself cannot).

``results.json`` has one test per function, its ``max_score`` the function's
points; checks that ``course.toml`` lists as ``hidden`` are a second test of
that function with ``visibility: after_due_date`` (Gradescope then also hides
the total until the due date), adding what they earned (the course's rule:
points x passed checks / all checks) with no maximum of its own. ``AUTOGRADER_ROOT`` replaces ``/autograder`` (tests).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from autograder.core.course import Course, load_course
from autograder.core.outcomes import points_text
from autograder.platforms.gradescope_results import FAILED_OUTPUT, check_results, failed_results, results
from autograder.runtime import atomic
from autograder.shipped import hidden, kit_wheel
from autograder.shipped.references import instructor_seed, references_needed
from autograder.shipped.stack import CPU_INDEX, TORCH, pyproject_of, requirements

USER = "student"
SETTINGS = "gradescope.json"  # in the bundle: {"modules": [...], "seed": N}: what this assignment grades, and its instructor seed
KIT_DIR = "kit"  # in the bundle: the kit's wheel
UV = "uv==0.13.8"
SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Python 3.11, the pinned stack and the kit (its wheel: the `autograder` command
# and the pytest plugin the checks need) go into /autograder/venv; the image's own
# python3 (which Gradescope's harness uses) is not changed. Then the environment
# proves itself: the bundle's reference must earn full marks and its stubs 0,
# or the build fails here, before any student is graded.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
RUN_AS="${{AUTOGRADER_USER:-{USER}}}"
if [ -z "${{AUTOGRADER_BASE_PYTHON:-}}" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends ca-certificates python3-venv bubblewrap
  # uv (a pinned wheel, in a throwaway venv) fetches a standalone CPython 3.11.
  python3 -m venv "$ROOT/tools"
  "$ROOT/tools/bin/pip" install --quiet --disable-pip-version-check {UV}
  export UV_PYTHON_INSTALL_DIR="$ROOT/python"
  "$ROOT/tools/bin/uv" python install 3.11
  "$ROOT/tools/bin/uv" venv --seed --python 3.11 "$ROOT/venv"
else
  # A Python 3.11 that is already there (AUTOGRADER_BASE_PYTHON): the same venv from it.
  "$AUTOGRADER_BASE_PYTHON" -m venv "$ROOT/venv"
fi
"$ROOT/venv/bin/pip" install --quiet --disable-pip-version-check {TORCH} --index-url {CPU_INDEX}
"$ROOT/venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/source/requirements.txt"
"$ROOT/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$ROOT/source/{KIT_DIR}/"*.whl
chmod -R a+rX "$ROOT/venv"
if [ -d "$ROOT/python" ]; then chmod -R a+rX "$ROOT/python"; fi
# Students' code runs as this user; the reference in $ROOT/source is readable by root only.
id -u "$RUN_AS" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
"$ROOT/venv/bin/python" -m autograder.platforms.gradescope --root "$ROOT" --prove
# The grader's own pre-flight, as each submission is graded (sandbox, limits, the student's user): its proof is
# kept in root's cache and reused by every submission of this image (proven again only if something changed).
"$ROOT/venv/bin/python" -m autograder.platforms.gradescope --root "$ROOT" --preflight --run-as "$RUN_AS"
"""

RUN_AUTOGRADER = f"""#!/usr/bin/env bash
# Gradescope runs this as root for every submission. It always leaves a valid
# $ROOT/results/results.json, whatever the submission or the grader does.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
RUN_AS="${{AUTOGRADER_USER:-{USER}}}"
LIMIT="${{AUTOGRADER_TIME_LIMIT:-1500}}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
# The results folder is root's alone, before any student code runs: nothing there a student left (a link where
# the runner writes next) and no student process may write there.
chown 0:0 "$ROOT/results" 2>/dev/null || true
chmod 0755 "$ROOT/results"
rm -rf "$RESULTS" "$RESULTS.tmp"
chmod -R go-rwx "$ROOT/source"
cd "$ROOT/source"  # the kit is the wheel setup.sh installed into the venv
timeout --kill-after=30 "$LIMIT" "$PYTHON" -m autograder.platforms.gradescope --root "$ROOT" --run-as "$RUN_AS"
status=$?
echo "runner exit status: $status"
# 0: the runner wrote results.json and checked it. Anything else (a crash, the time limit): check it here.
if [ "$status" -ne 0 ] && ! "$PYTHON" -m autograder.platforms.gradescope --root "$ROOT" --check-results; then
  rm -rf "$RESULTS"
  cat > "$RESULTS" <<'JSON'
{json.dumps({"score": 0.0, "output": FAILED_OUTPUT, "visibility": "visible", "stdout_visibility": "hidden", "tests": []})}
JSON
fi
exit 0
"""


# -- the bundle -----------------------------------------------------------
def bundle_files(course_root: Path, modules: tuple[str, ...]) -> dict[str, bytes]:
    """``{path in the zip: bytes}``: scripts, requirements, the kit's wheel, and the course (``course.toml``,
    checks, stubs and references) of the modules this assignment grades, and of no other."""
    course_root = Path(course_root)
    pyproject = pyproject_of(course_root)
    course_toml = (course_root / "course.toml").read_text(encoding="utf-8")
    known = {m.name for m in load_course(course_root, verify_files=False).modules}
    files = {
        SETTINGS: json.dumps(
            {"modules": list(modules), "seed": instructor_seed(_solutions(course_root))}, indent=2
        ).encode()
        + b"\n",
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": requirements(pyproject).encode(),
        "course.toml": (
            course_toml if set(modules) >= known else hidden.keep_modules(course_toml, set(modules))
        ).encode(),
        f"{KIT_DIR}/{kit_wheel.wheel_name(pyproject)}": kit_wheel.wheel_bytes(
            Path(__file__).resolve().parents[1], pyproject
        ),
    }
    for path in sorted(course_root.glob("conftest.py")) + sorted((course_root / "exercises").glob("conftest.py")):
        files[path.relative_to(course_root).as_posix()] = path.read_bytes()
    for module in modules:
        for part in (f"exercises/{module}.py", f"exercises/test_{module}.py", f"solutions/{module}.py"):
            files[part] = (course_root / part).read_bytes()
    for module in sorted(references_needed(course_root, modules) - set(modules)):
        # the reference a scenario is built with, and its stub: what the recording of givens reads the module's
        # contracted functions from when course.toml does not list it
        for part in (f"solutions/{module}.py", f"exercises/{module}.py"):
            files[part] = (course_root / part).read_bytes()
    return files


def build_bundle(course_root: Path, out: Path, modules: tuple[str, ...]) -> Path:
    """Write the Gradescope ``autograder.zip`` grading ``modules`` (byte-identical for the same inputs)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in sorted(bundle_files(course_root, modules).items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out


def _solutions(course_root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(course_root).glob("solutions/*.py"))}


# -- the runner -----------------------------------------------------------
def modules_of(source: Path, course: Course) -> tuple[str, ...]:
    """The modules this bundle grades (``gradescope.json``), else the whole course."""
    try:
        return tuple(json.loads((source / SETTINGS).read_text(encoding="utf-8"))["modules"])
    except (OSError, ValueError, KeyError):
        return tuple(m.name for m in course.modules)


def prove(root: Path) -> list[str]:
    """``setup.sh``'s last step, in the environment it built: the bundle's checks (the installed kit's
    plugin, ``--grading``) give the bundle's reference full marks and its stubs 0. What is wrong, if anything."""
    course = load_course(root / "source")
    modules = modules_of(root / "source", course)
    maximum = round(sum(fn.points for fn in course.functions if fn.module in modules), 2)
    names = {fn.qualname for fn in course.functions if fn.module in modules}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    problems = []
    with tempfile.TemporaryDirectory(prefix="gradescope-proof-") as tmp:
        work = Path(tmp) / "course"
        shutil.copytree(root / "source", work)
        for label, flags, expected in (("the reference", ["--solutions"], maximum), ("the stubs", [], 0)):
            out = Path(tmp) / "results.json"
            out.unlink(missing_ok=True)
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                *(f"exercises/test_{m}.py" for m in modules),
                "--grading",
                "--results-json",
                str(out),
                "-q",
                "-p",
                "no:cacheprovider",
                *flags,
            ]
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
            try:
                data = json.loads(out.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                problems.append(
                    f"{label}: the checks did not run (pytest exit status {proc.returncode}):\n"
                    f"{(proc.stdout + proc.stderr)[-3000:]}"
                )
                continue
            seen = {f"{f['module']}.{f['function']}" for f in data.get("functions", [])}
            score = round(float(data.get("score", -1)), 2)
            if score != expected or seen != names:
                problems.append(
                    f"{label} earned {points_text(score, None)}/{points_text(maximum, None)} (expected {points_text(expected, None)}); functions checked: "
                    f"{len(seen & names)}/{len(names)}:\n{proc.stdout[-3000:]}"
                )
    return problems


def grading_options(root: Path, course: Course, run_as: str | None):
    """The options every submission of this bundle is graded with (and ``setup.sh``'s pre-flight proves)."""
    from autograder.grading.options import Options

    try:
        settings = json.loads((root / "source" / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = {}
    seed = settings.get("seed") if type(settings.get("seed")) is int else instructor_seed(_solutions(root / "source"))
    return Options(
        modules=modules_of(root / "source", course),
        timeout_per_function=course.grading.timeout_per_function,
        memory_mb=course.grading.memory_limit_mb,
        jobs=1,
        run_as=run_as,
        seed=seed,  # the bundle's own instructor seed: never the inputs a release published
    )


def preflight(root: Path, run_as: str | None) -> int:
    """``setup.sh``'s proof through the grader itself (its sandbox, limits and options, as :func:`run` grades):
    kept in root's cache, so that each submission's :func:`run` reuses it instead of proving again."""
    from autograder.grading import api
    from autograder.grading.preflight import GraderError, PreflightFailed

    course = load_course(root / "source")
    options = grading_options(root, course, run_as)
    options.prove_again = True
    try:
        api.preflight_only(course, options, log=sys.stdout)
    except (PreflightFailed, GraderError) as err:
        print(f"setup.sh: this environment cannot grade: {err}", file=sys.stderr)
        return 1
    return 0


def run(root: Path, run_as: str | None) -> dict:
    """Grade ``root/submission`` with the course in ``root/source``; the results (always)."""
    from autograder.grading import grade_class
    from autograder.grading.isolation.bubblewrap import isolation

    started = time.monotonic()
    # the first line of the log: how the student's code is kept from the bundle (issue 31)
    print(f"autograder gradescope: isolation: {isolation().describe()}", flush=True)
    course = load_course(root / "source")
    modules = modules_of(root / "source", course)
    try:
        options = grading_options(root, course, run_as)
        # pre-flight first (setup.sh's proof, reused when nothing changed): the reference full marks, the stubs
        # nothing (its line on stderr); else the grader's failure
        grades = grade_class(course, [("submission", root / "submission")], options, workers=1, log=sys.stderr)
        if grades.failure is not None:
            raise grades.failure
        return results(course, modules, grades.results[0], time.monotonic() - started)
    except Exception as err:  # noqa: BLE001 - the student still gets valid results
        return failed_results(course, modules, time.monotonic() - started, f"{type(err).__name__}: {err}")


def write_results(path: Path, payload: dict) -> None:
    """Write ``path`` through a new file of the runner's own: never through a link or a file already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_name(path.name + ".tmp").unlink(missing_ok=True)  # a link left where runners write next: not ours
    atomic.write_text(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.platforms.gradescope", description="Gradescope's per-submission runner."
    )
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
    parser.add_argument("--run-as", metavar="USER", help="the unprivileged user that runs the student's code")
    parser.add_argument(
        "--check-results", action="store_true", help="only check that results.json is valid (exit 1 if not)"
    )
    parser.add_argument(
        "--prove",
        action="store_true",
        help="setup.sh: the reference earns full marks and the stubs 0 here (exit 1 if not)",
    )
    parser.add_argument(
        "--preflight",
        action="store_true",
        help="setup.sh: the grader's own pre-flight (sandbox, limits, --run-as), kept for every submission to reuse",
    )
    args = parser.parse_args(argv)
    path = args.root / "results" / "results.json"
    if args.prove:
        problems = prove(args.root)
        for problem in problems:
            print(f"setup.sh: this environment cannot grade: {problem}", file=sys.stderr)
        if not problems:
            print(
                "setup.sh: environment proven: the reference earns full marks and the stubs 0 with the bundle's checks"
            )
        return 1 if problems else 0
    if args.preflight:
        return preflight(args.root, args.run_as)
    if args.check_results:
        return 0 if check_results(path) else 1
    write_results(path, run(args.root, args.run_as))
    return 0 if check_results(path) else 1  # 0 tells run_autograder there is nothing left to check


if __name__ == "__main__":
    sys.exit(main())
