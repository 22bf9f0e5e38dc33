"""``autograder gradescope``: the bundle, and its ``run_autograder`` in Gradescope's layout.

The bundle is built for one module (``--only``, as a course with one Gradescope
assignment per module does), unpacked under a temporary root laid out like
Gradescope's ``/autograder`` (``AUTOGRADER_ROOT``), and the bundle's own
``setup.sh`` builds its environment there, once for the file: a fresh venv from
the system's Python 3.11 (``AUTOGRADER_BASE_PYTHON`` stands in for the
standalone CPython that uv fetches on Gradescope; apt is skipped with it), then
exactly the bundle's install commands (torch from PyTorch's CPU index, the
requirements, the kit's wheel) and its proof (reference full marks, stubs 0).
Nothing of the kit's venv reaches it (``platform_envs``). ``run_autograder``
then runs as root, as Gradescope runs it, with that venv and the students'
code dropped to the unprivileged user ``nobody``, and its scores are compared
with ``autograder grade``'s for the same files. Every ``results.json`` is
validated against ``schemas/gradescope_results.schema.json``, written from
Gradescope's documented fields.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from autograder.core.course import load_course
from grade_fixtures import SEGFAULT, replace
from platform_envs import MODULE as CANONICAL_MODULE
from platform_envs import WRONG_FUNCTION, assert_not_the_kit_venv, base_python, canonical_sources, clean_env, timed
from support import ROOT, reference_source

MODULE = "at_updates"
USER = "nobody"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "gradescope_results.schema.json").read_text())
FUNCTIONS = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
HIDDEN_FN = load_course(ROOT).module(MODULE).function(WRONG_FUNCTION)
assert HIDDEN_FN.hidden and MODULE == CANONICAL_MODULE

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="run_autograder runs as root (as on Gradescope) to drop privileges")


def build(out: Path, *only: str) -> Path:
    cmd = [sys.executable, "-m", "autograder", "gradescope", str(out), "--course", str(ROOT)]
    cmd += [a for m in only for a in ("--only", m)]
    proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("bundle") / "autograder.zip", MODULE)


@pytest.fixture(scope="module")
def gradescope_env(bundle):
    """``/autograder`` after the bundle's ``setup.sh``: ``source/`` unpacked, ``venv/`` built and proven there."""
    base = base_python()
    if base is None:
        pytest.skip("no system python3.11 to build Gradescope's venv from")
    root = Path(tempfile.mkdtemp(prefix="gradescope-setup-"))
    root.chmod(0o755)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    env = clean_env(AUTOGRADER_ROOT=str(root), AUTOGRADER_BASE_PYTHON=base, AUTOGRADER_USER=USER)
    proc, seconds = timed(["bash", str(root / "source" / "setup.sh")], cwd=root, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    python = root / "venv" / "bin" / "python"
    assert_not_the_kit_venv(python)
    print(f"\nGradescope setup.sh ({MODULE}): {seconds:.0f} s")
    yield SimpleNamespace(root=root, python=python, log=proc.stdout + proc.stderr)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def unprivileged_python(gradescope_env):
    """The interpreter of the venv ``setup.sh`` built (world-readable, as on Gradescope)."""
    return gradescope_env.python


def lay_out(bundle: Path, submission: dict[str, str]) -> Path:
    """A fresh Gradescope root: source/ (the unpacked zip), run_autograder, submission/, results/."""
    root = Path(tempfile.mkdtemp(prefix="gradescope-root-"))
    root.chmod(0o755)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    for name, text in submission.items():
        (root / "submission" / name).write_text(text, encoding="utf-8")
    return root


def run_autograder(root: Path, python: Path, **env: str) -> tuple[dict, float, str]:
    environ = clean_env(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(python), AUTOGRADER_USER=USER)
    environ.update(env)
    started = time.monotonic()
    proc = subprocess.run(["bash", str(root / "run_autograder")], cwd=root, env=environ, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, SCHEMA)
    return results, seconds, proc.stdout + proc.stderr


UID_PROBE = """
import os
if os.geteuid() == 0 or os.getegid() == 0:
    raise SystemExit("this submission is being run as root")
"""

KILLS_ITSELF = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"

HOSTILE = """
import json as _json, os as _os, pathlib as _pathlib
_root = _pathlib.Path({root!r})
try:  # the live reference is right there, readable by root only
    exec((_root / "source" / "solutions" / "{module}.py").read_text())
except OSError:
    pass
for _path in (_root / "results" / "results.json", _root / "source" / "course.toml"):
    try:
        _path.write_text(_json.dumps({{"score": 1000, "tests": []}}))
    except OSError:
        pass
try:
    _os.setuid(0)
except OSError:
    pass
"""


def submissions(root_of: dict[str, Path]) -> dict[str, dict[str, str]]:
    ref = reference_source(MODULE)
    wrong = {fn: "return args[0] if args else None" for fn in FUNCTIONS}
    return {
        "reference": {f"{MODULE}.py": UID_PROBE + ref},
        "stubs": {f"{MODULE}.py": (ROOT / "exercises" / f"{MODULE}.py").read_text(encoding="utf-8")},
        "crashing": {f"{MODULE}.py": replace(ref, {FUNCTIONS[0]: KILLS_ITSELF, FUNCTIONS[1]: SEGFAULT})},
        # wrong values, still pure: the hidden check (purity) of that function passes and earns nothing
        "wrong": {f"{MODULE}.py": canonical_sources()["wrong"]},
        "hostile": {f"{MODULE}.py": replace(ref, wrong) + HOSTILE.format(root=str(root_of["hostile"]), module=MODULE)},
    }


@pytest.fixture(scope="module")
def graded(bundle, unprivileged_python):
    names = ["reference", "stubs", "crashing", "hostile", "wrong"]
    roots = {name: lay_out(bundle, {}) for name in names}
    for name, files in submissions(roots).items():
        for file, text in files.items():
            (roots[name] / "submission" / file).write_text(text, encoding="utf-8")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(names, pool.map(lambda n: run_autograder(roots[n], unprivileged_python), names)))
    yield {name: (results, seconds, log, roots[name]) for name, (results, seconds, log) in runs.items()}
    for root in roots.values():
        shutil.rmtree(root, ignore_errors=True)


def by_name(results: dict) -> dict[str, dict]:
    return {t["name"]: t for t in results["tests"]}


# -- the bundle -----------------------------------------------------------
def test_bundle_has_gradescope_layout_and_is_reproducible(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        requirements = zf.read("requirements.txt").decode()
        settings = json.loads(zf.read("gradescope.json"))
    assert {"setup.sh", "run_autograder", "course.toml", f"solutions/{MODULE}.py", f"exercises/test_{MODULE}.py"} <= names
    wheels = [n for n in names if n.startswith("kit/") and n.endswith(".whl")]
    assert len(wheels) == 1, names
    with zipfile.ZipFile(bundle) as zf, zipfile.ZipFile(io.BytesIO(zf.read(wheels[0]))) as wheel:
        inside = set(wheel.namelist())
        entry_points = next(wheel.read(n).decode() for n in inside if n.endswith(".dist-info/entry_points.txt"))
    assert "autograder/grading/grader.py" in inside and "autograder/platforms/gradescope.py" in inside
    assert "[pytest11]\njax_course = autograder.plugin" in entry_points, "the checks' plugin is registered by the wheel"
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    pinned = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert requirements.splitlines() == pinned
    # An instructor seed of its own (students never see the bundle): Gradescope grades without a command line,
    # and without one it graded the inputs a release published answers for (issue 32).
    assert set(settings) == {"modules", "seed"} and settings["modules"] == [MODULE]
    assert type(settings["seed"]) is int and settings["seed"] >= 0
    assert build(tmp_path / "again.zip", MODULE).read_bytes() == bundle.read_bytes()
    print(f"\nGradescope bundle ({MODULE}): {bundle.stat().st_size / 2**10:.0f} KiB")


def test_scripts_parse_and_setup_pins_its_own_python_and_torch_first(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(tmp_path)
    for script in ("setup.sh", "run_autograder"):
        proc = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    setup = (tmp_path / "setup.sh").read_text()
    installs = [line for line in setup.splitlines() if " install " in line and "pip" in line]
    assert "torch==2.13.0" in installs[1] and "download.pytorch.org/whl/cpu" in installs[1], installs
    assert "requirements.txt" in installs[2], installs
    assert "--no-deps" in installs[3] and "kit/" in installs[3], "the kit (and its pytest plugin) is installed from its wheel"
    assert "bubblewrap" in setup
    assert setup.rstrip().splitlines()[-1].endswith("--prove"), "setup.sh ends by proving the environment it built"
    assert all(line.lstrip().startswith(('"$ROOT/tools/bin/pip"', '"$ROOT/venv/bin/pip"')) for line in installs), (
        "every pip install goes into the bundle's own environments, never the image's Python"
    )
    assert "python install 3.11" in setup and "useradd" in setup


# -- run_autograder -------------------------------------------------------
def test_every_results_json_validates(graded):
    for name, (results, _, log, _) in graded.items():
        assert results["tests"], f"{name}: {log[-2000:]}"
        assert results["execution_time"] >= 0


def test_reference_gets_full_marks_with_its_code_run_unprivileged(graded):
    results, seconds, log, _ = graded["reference"]
    maximum = sum(fn.points for fn in load_course(ROOT).module(MODULE).functions)
    assert results["score"] == maximum, json.dumps(results, indent=1)
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] for t in results["tests"])
    print(f"\nGradescope run_autograder, reference {MODULE}: {seconds:.0f} s")


def test_hidden_checks_are_their_own_tests_shown_after_the_due_date(graded):
    course = load_course(ROOT)
    results = graded["reference"][0]
    tests = by_name(results)
    for fn in course.module(MODULE).functions:
        visible = tests[fn.qualname]
        assert visible["visibility"] == "visible"
        later = [t for name, t in tests.items() if name.startswith(f"{fn.qualname} (") ]
        if fn.hidden:
            assert [t["visibility"] for t in later] == ["after_due_date"]
            assert visible["max_score"] + later[0]["max_score"] == pytest.approx(fn.points, abs=0.011)
            assert not any(h in visible["output"] for h in fn.hidden)
        else:
            assert not later and visible["max_score"] == fn.points


def test_stubs_get_zero_and_not_started(graded):
    results = graded["stubs"][0]
    assert results["score"] == 0
    assert all(t["score"] == 0 and t["output"].startswith("not started") for t in results["tests"]), results


def test_a_crashing_submission_costs_only_what_crashed(graded):
    tests = by_name(graded["crashing"][0])
    assert tests[f"{MODULE}.{FUNCTIONS[0]}"]["score"] == 0
    assert re.search(r"stopped while checking this function: it crashed the Python interpreter \(SIGKILL\)", tests[f"{MODULE}.{FUNCTIONS[0]}"]["output"])
    assert re.search(r"SIGSEGV", tests[f"{MODULE}.{FUNCTIONS[1]}"]["output"])
    for fn in FUNCTIONS[2:]:
        assert tests[f"{MODULE}.{fn}"]["status"] == "passed", tests[f"{MODULE}.{fn}"]


def test_a_hostile_submission_cannot_read_the_reference_or_write_results(graded):
    results, _, _, root = graded["hostile"]
    assert results["score"] == 0, json.dumps(results, indent=1)
    assert (root / "source" / "course.toml").read_text().startswith("# The one source of truth")
    mode = (root / "source").stat().st_mode
    assert mode & 0o077 == 0, "run_autograder makes the bundle readable by root only"


# -- whatever fails, results.json is valid ----------------------------------
def test_a_grader_failure_in_python_still_writes_a_row_per_function(bundle, unprivileged_python):
    root = lay_out(bundle, {f"{MODULE}.py": reference_source(MODULE)})
    try:
        results, _, log = run_autograder(root, unprivileged_python, AUTOGRADER_USER="no_such_user_for_grading")
        assert results["score"] == 0 and "grader's side" in results["output"]
        assert [t["name"] for t in results["tests"]] == [f"{MODULE}.{fn}" for fn in FUNCTIONS]
        assert "no_such_user_for_grading" in log
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("breakage", ["no interpreter", "course without its reference", "time limit"])
def test_when_python_cannot_grade_the_shell_writes_valid_results(bundle, unprivileged_python, breakage):
    root = lay_out(bundle, {f"{MODULE}.py": reference_source(MODULE)})
    env = {}
    try:
        if breakage == "no interpreter":
            env["AUTOGRADER_PYTHON"] = str(root / "venv" / "bin" / "python")  # setup.sh never ran
        elif breakage == "course without its reference":
            (root / "source" / "solutions" / f"{MODULE}.py").unlink()
        else:
            env["AUTOGRADER_TIME_LIMIT"] = "3"
        results, _, _ = run_autograder(root, unprivileged_python, **env)
        assert results["score"] == 0 and results["tests"] == [] and "grader's side" in results["output"]
    finally:
        shutil.rmtree(root)


def test_only_ships_the_modules_it_names(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        course_toml = zf.read("course.toml").decode()
    course = [n for n in names if n.startswith(("exercises/", "solutions/"))]
    assert sorted(course) == sorted([f"exercises/{MODULE}.py", f"exercises/test_{MODULE}.py", f"solutions/{MODULE}.py"]), course
    assert not any(n.startswith("autograder/") for n in names), "the kit is shipped once, as its wheel"
    modules = [m["name"] for m in tomllib.loads(course_toml)["modules"]]
    assert modules == [MODULE]


def test_a_revealed_hidden_check_that_earned_nothing_does_not_say_passed(graded):
    results = graded["wrong"][0]
    tests = by_name(results)
    hidden = tests[f"{HIDDEN_FN.qualname} (checks shown after the due date)"]
    assert hidden["score"] == 0 and hidden["max_score"] > 0
    assert hidden["status"] == "failed" and "passed" not in hidden["output"].splitlines()[0], hidden
    assert "no points" in hidden["output"]


def test_setup_proves_the_environment_and_fails_loudly_when_it_cannot_grade(gradescope_env, tmp_path):
    """The proof setup.sh ends with: it passes in the venv setup.sh built (the fixture), and fails, saying
    why, when the checks' plugin is missing (today's bug) or the reference does not earn full marks."""
    root = tmp_path / "root"
    shutil.copytree(gradescope_env.root / "source", root / "source")
    prove = [str(gradescope_env.python), "-m", "autograder.platforms.gradescope", "--root", str(root), "--prove"]
    no_plugin = subprocess.run(prove, env=clean_env(PYTEST_ADDOPTS="-p no:jax_course"), capture_output=True, text=True, timeout=900)
    assert no_plugin.returncode == 1 and "the checks did not run" in no_plugin.stderr, no_plugin.stderr[-3000:]
    assert "unrecognized arguments: --grading" in no_plugin.stderr
    shutil.copyfile(root / "source" / "exercises" / f"{MODULE}.py", root / "source" / "solutions" / f"{MODULE}.py")
    broken = subprocess.run(prove, env=clean_env(), capture_output=True, text=True, timeout=900)
    assert broken.returncode == 1 and "the reference earned 0/" in broken.stderr, broken.stderr[-3000:]


def test_scores_agree_with_grade_for_the_same_files(graded, canonical_grades):
    """The correct, the wrong and the untouched submission: the points of each function in results.json
    (its visible and its after-the-due-date test together) are ``autograder grade``'s for the same file
    (the reference here also carries UID_PROBE, which only checks it runs unprivileged)."""
    course = load_course(ROOT)
    for name in ("reference", "wrong", "stubs"):
        tests = graded[name][0]["tests"]
        got = {fn.name: round(sum(t["score"] for t in tests if t["name"].split(" ", 1)[0] == fn.qualname), 2)
               for fn in course.module(MODULE).functions}
        assert got == pytest.approx(canonical_grades[name], abs=0.011), (name, got, canonical_grades[name])
    print("\nGradescope run_autograder per submission: " + ", ".join(f"{n} {graded[n][1]:.0f} s" for n in graded))
