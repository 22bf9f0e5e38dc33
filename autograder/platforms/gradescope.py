"""Gradescope: ``autograder gradescope OUT.zip`` and the runner the bundle starts per submission.

The bundle (Gradescope's documented layout: ``setup.sh`` and ``run_autograder``
at the root of the zip, unpacked into ``/autograder/source``) holds the
instructor's course with its live reference — students never see it — and
the kit. ``setup.sh`` installs Python 3.11 and the pinned stack into
``/autograder/venv`` (the image's own Python, which Gradescope's harness uses,
is left alone) and creates the unprivileged user ``student``.
``run_autograder`` (as root, per submission) makes the source readable by
root only and runs :func:`run`: ``autograder grade``'s pipeline on
``/autograder/submission`` with ``--run-as student`` (the student's code runs
as that user, the trusted verifier as root), then writes
``/autograder/results/results.json``. Whatever fails — the submission, the
grader, the interpreter — a valid ``results.json`` is written (by the shell
script if Python itself cannot).

``results.json`` has one test per function; checks that ``course.toml`` lists
as ``hidden`` are a second test of that function with
``visibility: after_due_date`` (Gradescope then also hides the total until
the due date). ``AUTOGRADER_ROOT`` replaces ``/autograder`` (tests).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
import zipfile
from pathlib import Path

from autograder.core.course import Course, load_course
from autograder.core.outcomes import CheckOutcome, FunctionScore
from autograder.core.status import Status
from autograder.release.record import instructor_seed

USER = "student"
SETTINGS = "gradescope.json"  # in the bundle: {"modules": [...], "seed": N}: what this assignment grades, and its instructor seed
TORCH = "torch==2.13.0"  # first, from PyTorch's CPU index: any other build pulls CUDA
UV = "uv==0.13.8"
FAILED_OUTPUT = (
    "The autograder could not grade this submission: the failure is on the grader's side, not a verdict on your code. "
    "Your instructor sees the log and can regrade it."
)

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Python 3.11 and the pinned stack go into /autograder/venv; the image's own
# python3 (which Gradescope's harness uses) is not changed.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends ca-certificates python3-venv
# uv (a pinned wheel, in a throwaway venv) fetches a standalone CPython 3.11.
python3 -m venv "$ROOT/tools"
"$ROOT/tools/bin/pip" install --quiet --disable-pip-version-check {UV}
export UV_PYTHON_INSTALL_DIR="$ROOT/python"
"$ROOT/tools/bin/uv" python install 3.11
"$ROOT/tools/bin/uv" venv --seed --python 3.11 "$ROOT/venv"
"$ROOT/venv/bin/pip" install --quiet --disable-pip-version-check {TORCH} --index-url https://download.pytorch.org/whl/cpu
"$ROOT/venv/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/source/requirements.txt"
chmod -R a+rX "$ROOT/python" "$ROOT/venv"
# Students' code runs as this user; the reference in $ROOT/source is readable by root only.
id -u {USER} >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin {USER}
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
rm -f "$RESULTS"
chmod -R go-rwx "$ROOT/source"
cd "$ROOT/source"  # the bundle's own kit comes first on the path
timeout --kill-after=30 "$LIMIT" "$PYTHON" -m autograder.platforms.gradescope --root "$ROOT" --run-as "$RUN_AS"
echo "runner exit status: $?"
if ! "$PYTHON" -m autograder.platforms.gradescope --root "$ROOT" --check-results; then
  cat > "$RESULTS" <<'JSON'
{json.dumps({"score": 0.0, "output": FAILED_OUTPUT, "visibility": "visible", "stdout_visibility": "hidden", "tests": []})}
JSON
fi
exit 0
"""


# -- the bundle -----------------------------------------------------------
def bundle_files(course_root: Path, modules: tuple[str, ...]) -> dict[str, bytes]:
    """``{path in the zip: bytes}``: scripts, requirements, the modules this assignment grades, the course
    with its reference, and the kit."""
    course_root = Path(course_root)
    files = {
        SETTINGS: json.dumps({"modules": list(modules), "seed": instructor_seed(_solutions(course_root))}, indent=2).encode() + b"\n",
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": requirements(pyproject_of(course_root)).encode(),
        "course.toml": (course_root / "course.toml").read_bytes(),
    }
    for pattern in ("conftest.py", "exercises/*.py", "solutions/*.py"):
        for path in sorted(course_root.glob(pattern)):
            files[path.relative_to(course_root).as_posix()] = path.read_bytes()
    kit = Path(__file__).resolve().parents[1]
    for path in sorted(kit.rglob("*.py")):
        files[f"autograder/{path.relative_to(kit).as_posix()}"] = path.read_bytes()
    return files


def pyproject_of(course_root: Path) -> Path:
    """The course's ``pyproject.toml``, else the one of the kit's own checkout."""
    for folder in (course_root, Path(__file__).resolve().parents[2]):
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
    raise FileNotFoundError("no pyproject.toml with the pinned dependencies next to course.toml")


def requirements(pyproject: Path) -> str:
    """The pinned stack, from ``pyproject.toml``'s dependencies (the one list)."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    return "".join(f"{d}\n" for d in deps)


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


# -- results.json ---------------------------------------------------------
def _part(fn, outcomes: list[CheckOutcome], total: int, gate_failed: bool) -> FunctionScore:
    passed = sum(o.status == Status.PASSED for o in outcomes)
    if passed == len(outcomes):
        status = Status.PASSED
    elif passed == 0 and any(o.status == Status.NOT_STARTED for o in outcomes):
        status = Status.NOT_STARTED
    else:
        status = Status.FAILED
    share = fn.points * len(outcomes) / total
    points = 0.0 if gate_failed else fn.points * passed / total
    messages = [o.message for o in outcomes if o.status != Status.PASSED and o.message]
    return FunctionScore(fn.module, fn.name, round(points, 2), round(share, 2), status, passed, len(outcomes), messages)


def _test(name: str, part: FunctionScore, visibility: str) -> dict:
    from autograder.grading.class_report import function_output

    return {
        "name": name,
        "score": part.points,
        "max_score": part.max_points,
        "status": "passed" if part.status == Status.PASSED else "failed",
        "output": function_output(part),
        "visibility": visibility,
    }


def results(course: Course, modules: tuple[str, ...], result, seconds: float) -> dict:
    """Gradescope's ``results.json`` for one graded submission (a :class:`StudentResult`)."""
    tests = []
    for fn in course.functions:
        if fn.module not in modules:
            continue
        checks = [o for o in result.outcomes if (o.module, o.function) == (fn.module, fn.name)]
        if not checks:
            continue
        gate_failed = any(o.correctness and o.status != Status.PASSED for o in checks)
        hidden = [o for o in checks if o.check.split("[", 1)[0] in fn.hidden]
        shown = [o for o in checks if o not in hidden]
        tests.append(_test(fn.qualname, _part(fn, shown, len(checks), gate_failed), "visible"))
        if hidden:
            part = _part(fn, hidden, len(checks), gate_failed)
            tests.append(_test(f"{fn.qualname} (checks shown after the due date)", part, "after_due_date"))
    score = round(sum(s.points for s in result.scores if s.module in modules), 2)
    maximum = sum(fn.points for fn in course.functions if fn.module in modules)
    return {
        "score": score,
        "execution_time": int(round(seconds)),
        "output": f"{course.title}: {score:g}/{maximum:g} points",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def failed_results(course: Course, modules: tuple[str, ...], seconds: float, detail: str) -> dict:
    """Valid results when grading itself failed: every function 0, and why."""
    tests = [
        {"name": fn.qualname, "score": 0.0, "max_score": fn.points, "status": "failed", "output": FAILED_OUTPUT, "visibility": "visible"}
        for fn in course.functions
        if fn.module in modules
    ]
    print(f"grading failed: {detail}", file=sys.stderr)
    return {
        "score": 0.0, "execution_time": int(round(seconds)), "output": FAILED_OUTPUT,
        "visibility": "visible", "stdout_visibility": "hidden", "tests": tests,
    }


def check_results(path: Path) -> bool:
    """The written ``results.json`` is there and has Gradescope's required shape (a score, tests)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and type(data.get("score")) in (int, float)
        and isinstance(data.get("tests", []), list)
        and all(isinstance(t, dict) and type(t.get("score")) in (int, float) for t in data.get("tests", []))
    )


def _solutions(course_root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(course_root).glob("solutions/*.py"))}


# -- the runner -----------------------------------------------------------
def run(root: Path, run_as: str | None) -> dict:
    """Grade ``root/submission`` with the course in ``root/source``; the results (always)."""
    from autograder.grading import grader as grading

    started = time.monotonic()
    course = load_course(root / "source")
    try:
        settings = json.loads((root / "source" / SETTINGS).read_text(encoding="utf-8"))
        modules = tuple(settings["modules"])
    except (OSError, ValueError, KeyError):
        settings, modules = {}, tuple(m.name for m in course.modules)
    seed = settings.get("seed") if type(settings.get("seed")) is int else instructor_seed(_solutions(root / "source"))
    try:
        options = grading.Options(
            modules=modules,
            timeout_per_function=course.grading.timeout_per_function,
            memory_mb=course.grading.memory_limit_mb,
            jobs=1,
            run_as=run_as,
            seed=seed,  # the bundle's own instructor seed: never the inputs a release published
        )
        grader = grading.Grader(course, options, workers=1)
        try:
            result = grader.grade_submission("submission", root / "submission")
        finally:
            grader.close()
        return results(course, modules, result, time.monotonic() - started)
    except Exception as err:  # noqa: BLE001 - the student still gets valid results
        return failed_results(course, modules, time.monotonic() - started, f"{type(err).__name__}: {err}")


def write_results(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.platforms.gradescope", description="Gradescope's per-submission runner.")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
    parser.add_argument("--run-as", metavar="USER", help="the unprivileged user that runs the student's code")
    parser.add_argument("--check-results", action="store_true", help="only check that results.json is valid (exit 1 if not)")
    args = parser.parse_args(argv)
    path = args.root / "results" / "results.json"
    if args.check_results:
        return 0 if check_results(path) else 1
    write_results(path, run(args.root, args.run_as))
    return 0


if __name__ == "__main__":
    sys.exit(main())
