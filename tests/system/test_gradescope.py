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

The hostile class (issues 31 and 32) runs on the same venv and bundle
(``grade_fixtures.build_gradescope_class``): a thief of the bundle's reference
and seed (by path, ``..``, ``/proc``, the verifier's scratch copies) that also
forges results.json, leaves a process behind to rewrite it, leaves marks and
rewrites the kit; a snooper next to correct answers; a forged report; four
kinds of link. Each earns only what its own code earns, results.json is the
runner's, nothing outlives ``run_autograder`` (its own control group is empty
after it), the honest reference graded after the thief in its root keeps full
marks, and the thief is graded once more with ``bwrap`` missing from ``PATH``
(the fallback: the unprivileged user and the control group).
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
from grade_fixtures import SEGFAULT, build_gradescope_class, hidden_check_lines, replace
from platform_envs import MODULE as CANONICAL_MODULE
from platform_envs import WRONG_FUNCTION, assert_not_the_kit_venv, base_python, canonical_sources, clean_env, timed
from support import ROOT, reference_source
from test_grade_files_forgery import FORGER

from autograder.core.course import load_course
from autograder.grading import preflight
from autograder.grading.isolation.janitor import group_pids
from autograder.grading.isolation.scratch import squeeze

MODULE = "at_updates"
USER = "nobody"
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "gradescope_results.schema.json").read_text())
FUNCTIONS = [fn.name for fn in load_course(ROOT).module(MODULE).functions]
HIDDEN_FN = load_course(ROOT).module(MODULE).function(WRONG_FUNCTION)
assert HIDDEN_FN.hidden and MODULE == CANONICAL_MODULE

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="run_autograder runs as root (as on Gradescope) to drop privileges"
)


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
    proc = subprocess.run(
        ["bash", str(root / "run_autograder")], cwd=root, env=environ, capture_output=True, text=True, timeout=1800
    )
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
    pythons = {name: _logged(unprivileged_python, roots[name] / "interpreters.log") for name in names}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(names, pool.map(lambda n: run_autograder(roots[n], pythons[n]), names)))
    yield {name: (results, seconds, log, roots[name]) for name, (results, seconds, log) in runs.items()}
    for root in roots.values():
        shutil.rmtree(root, ignore_errors=True)


def _logged(python: Path, log: Path) -> Path:
    """``python``, each start by ``run_autograder`` written to ``log`` (its arguments, one line)."""
    wrapper = log.with_name("python-logged")
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {python} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def test_a_graded_submission_costs_run_autograder_one_interpreter(graded):
    """The runner checks the results.json it wrote and says so with exit status 0: the shell starts no second
    interpreter to check it again (it does where the runner did not end well: ``test_when_python_cannot_grade``)."""
    for name, (_results, _seconds, log, root) in graded.items():
        starts = (root / "interpreters.log").read_text(encoding="utf-8").splitlines()
        assert len(starts) == 1 and "--run-as" in starts[0], (name, starts, log[-2000:])
        assert "runner exit status: 0" in log, (name, log[-2000:])


def by_name(results: dict) -> dict[str, dict]:
    return {t["name"]: t for t in results["tests"]}


# -- the bundle -----------------------------------------------------------
def test_bundle_has_gradescope_layout_and_is_reproducible(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        requirements = zf.read("requirements.txt").decode()
        settings = json.loads(zf.read("gradescope.json"))
    assert {
        "setup.sh",
        "run_autograder",
        "course.toml",
        f"solutions/{MODULE}.py",
        f"exercises/test_{MODULE}.py",
    } <= names
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
    assert "--no-deps" in installs[3] and "kit/" in installs[3], (
        "the kit (and its pytest plugin) is installed from its wheel"
    )
    assert "bubblewrap" in setup
    lines = [line for line in setup.rstrip().splitlines() if not line.lstrip().startswith("#")]
    assert lines[-2].endswith("--prove"), "setup.sh proves the environment it built"
    assert lines[-1].endswith('--preflight --run-as "$RUN_AS"'), "then the grader's own pre-flight, kept for the runs"
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
    assert all(t["status"] == "passed" for t in results["tests"])
    for fn in load_course(ROOT).module(MODULE).functions:  # a function's tests add up to its points
        earned = sum(t["score"] for t in results["tests"] if t["name"].split(" ", 1)[0] == fn.qualname)
        assert earned == pytest.approx(fn.points, abs=0.011), (fn.qualname, earned)
    print(f"\nGradescope run_autograder, reference {MODULE}: {seconds:.0f} s")


def test_hidden_checks_are_their_own_tests_shown_after_the_due_date(graded):
    course = load_course(ROOT)
    results = graded["reference"][0]
    tests = by_name(results)
    for fn in course.module(MODULE).functions:
        visible = tests[fn.qualname]
        assert visible["visibility"] == "visible"
        later = [t for name, t in tests.items() if name.startswith(f"{fn.qualname} (")]
        if fn.hidden:
            assert [t["visibility"] for t in later] == ["after_due_date"]
            assert visible["max_score"] + later[0]["max_score"] == pytest.approx(fn.points, abs=0.011)
            assert not any(h in visible["output"] for h in fn.hidden)
        else:
            assert not later and visible["max_score"] == fn.points


def test_stubs_get_zero_and_not_started(graded):
    results = graded["stubs"][0]
    assert results["score"] == 0
    assert all(t["score"] == 0 and "not started" in t["output"] for t in results["tests"]), results
    assert all(t["output"].startswith("not started") for t in results["tests"] if t["visibility"] == "visible")


def test_a_crashing_submission_costs_only_what_crashed(graded):
    tests = by_name(graded["crashing"][0])
    assert tests[f"{MODULE}.{FUNCTIONS[0]}"]["score"] == 0
    assert re.search(
        r"stopped while checking this function: it crashed the Python interpreter \(SIGKILL\)",
        tests[f"{MODULE}.{FUNCTIONS[0]}"]["output"],
    )
    assert re.search(r"SIGSEGV", tests[f"{MODULE}.{FUNCTIONS[1]}"]["output"])
    module = load_course(ROOT).module(MODULE)
    for fn in FUNCTIONS[2:]:  # right values, kept; its os.kill and ctypes withhold the checks its process witnessed
        test = tests[f"{MODULE}.{fn}"]
        assert test["score"] > 0, test
        # (every check of at_updates is decided on the trusted side: a function may keep all of its points)
        if test["score"] < module.function(fn).points:
            assert "needs review" in test["output"], test
    assert "needs review" in graded["crashing"][0]["output"], graded["crashing"][0]["output"]  # the submission's


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
    assert sorted(course) == sorted(
        [f"exercises/{MODULE}.py", f"exercises/test_{MODULE}.py", f"solutions/{MODULE}.py"]
    ), course
    assert not any(n.startswith("autograder/") for n in names), "the kit is shipped once, as its wheel"
    modules = [m["name"] for m in tomllib.loads(course_toml)["modules"]]
    assert modules == [MODULE]


def test_a_revealed_hidden_check_that_earned_nothing_does_not_say_passed(graded):
    results = graded["wrong"][0]
    tests = by_name(results)
    hidden = tests[f"{HIDDEN_FN.qualname} (checks shown after the due date)"]
    assert hidden["score"] == 0 and hidden["max_score"] == 0, "its points are the function's, counted there"
    assert hidden["status"] == "failed" and "passed" not in hidden["output"].splitlines()[0], hidden
    assert "no points" in hidden["output"]


def test_setup_proves_the_environment_and_fails_loudly_when_it_cannot_grade(gradescope_env, tmp_path):
    """The proof setup.sh ends with: it passes in the venv setup.sh built (the fixture), and fails, saying
    why, when the checks' plugin is missing (today's bug) or the reference does not earn full marks."""
    root = tmp_path / "root"
    shutil.copytree(gradescope_env.root / "source", root / "source")
    prove = [str(gradescope_env.python), "-m", "autograder.platforms.gradescope", "--root", str(root), "--prove"]
    no_plugin = subprocess.run(
        prove, env=clean_env(PYTEST_ADDOPTS="-p no:jax_course"), capture_output=True, text=True, timeout=900
    )
    assert no_plugin.returncode == 1 and "the checks did not run" in no_plugin.stderr, no_plugin.stderr[-3000:]
    assert "unrecognized arguments: --grading" in no_plugin.stderr
    shutil.copyfile(root / "source" / "exercises" / f"{MODULE}.py", root / "source" / "solutions" / f"{MODULE}.py")
    broken = subprocess.run(prove, env=clean_env(), capture_output=True, text=True, timeout=900)
    assert broken.returncode == 1 and "the reference earned 0/" in broken.stderr, broken.stderr[-3000:]


def test_each_submission_reuses_the_proof_setup_made(gradescope_env, graded):
    """setup.sh proves the environment through the grader itself (sandbox, limits, the student's user); every
    submission's run_autograder then reuses that proof instead of grading the reference and stubs again."""
    assert "pre-flight passed in" in gradescope_env.log, gradescope_env.log[-3000:]
    for name, (_results, _seconds, log, _root) in graded.items():
        assert preflight.REUSED in log, (name, log[-3000:])


def test_scores_agree_with_grade_for_the_same_files(graded, canonical_grades):
    """The correct, the wrong and the untouched submission: the points of each function in results.json
    (its visible and its after-the-due-date test together) are ``autograder grade``'s for the same file
    (the reference here also carries UID_PROBE, which only checks it runs unprivileged)."""
    course = load_course(ROOT)
    for name in ("reference", "wrong", "stubs"):
        tests = graded[name][0]["tests"]
        got = {
            fn.name: round(sum(t["score"] for t in tests if t["name"].split(" ", 1)[0] == fn.qualname), 2)
            for fn in course.module(MODULE).functions
        }
        assert got == pytest.approx(canonical_grades[name], abs=0.011), (name, got, canonical_grades[name])
    print("\nGradescope run_autograder per submission: " + ", ".join(f"{n} {graded[n][1]:.0f} s" for n in graded))


# -- the hostile class on the runner (issues 31 and 32) ------------------------
# Each student's submission in a Gradescope root of its own, graded by the bundle's real run_autograder in the venv
# setup.sh built (the shared module fixtures); the students are grade_fixtures.build_gradescope_class's. The runs
# share one pre-flight pass per isolation (AUTOGRADER_PREFLIGHT_CACHE: the first run of each proves it for real).
# run_autograder runs in a control group of the test's own (cgroup v1 ``pids``, where there is one), so that
# whatever it or the student started is found after it returned.
HOSTILE_STUDENTS = (
    "steals_and_forges",
    "snoops_next_to_answers",
    "forges_reports",
    "reads_own_hidden_checks",
    "stops_zygote_and_crashes",
    "fills_its_disk",
    "links_exercises",
    "links_module",
    "hard_links_module",
    "links_submission",
)
FILES_MODULE = "checkpointing"  # whose functions' files are recorded and put back by the trusted verifier
WAIT_AFTER_RUN = 3.0  # seconds a process left behind would have to rewrite results.json
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")


def _pids_below(group: Path) -> set[int]:
    return group_pids([group])


def _with_marker(marker: str) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.add(int(entry))
            except OSError:
                pass
    return found


def _kill_and_remove(group: Path | None, pids: set[int]) -> None:
    """(Only where isolation failed) the test's own leftovers, then its control group."""
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    if group is not None:
        for sub in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [group]:
            for _ in range(200):
                try:
                    sub.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def run_watched(root: Path, python: Path, marker: str, **env: str) -> SimpleNamespace:
    """``run_autograder`` in a control group of its own; what it wrote, and what was left running
    ``WAIT_AFTER_RUN`` s after it returned (the processes of its group, those carrying ``marker``)."""
    group = None
    cmd = ["bash", str(root / "run_autograder")]
    if (PIDS_CGROUP / "cgroup.procs").is_file():
        group = PIDS_CGROUP / f"gradescope-test-{os.getpid()}-{root.name}"
        group.mkdir()
        cmd = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs"), *cmd]
    environ = clean_env(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(python), AUTOGRADER_USER=USER)
    environ.update(env)
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, env=environ, capture_output=True, text=True, timeout=1800)
    seconds = time.monotonic() - started
    path = root / "results" / "results.json"
    written = path.read_text(encoding="utf-8")
    time.sleep(WAIT_AFTER_RUN)
    later = path.read_text(encoding="utf-8")
    left = _pids_below(group) if group is not None else set()
    survivors = _with_marker(marker)
    _kill_and_remove(group, left | survivors)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(written)
    jsonschema.validate(results, SCHEMA)
    return SimpleNamespace(
        results=results,
        seconds=seconds,
        log=proc.stdout + proc.stderr,
        written=written,
        later=later,
        left=left,
        survivors=survivors,
        watched=group is not None,
    )


def _without_bwrap(folder: Path) -> str:
    """A ``PATH`` like this machine's with every program but ``bwrap``: a Gradescope image without bubblewrap."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not os.path.isdir(directory) or directory.startswith(sys.prefix):
            continue
        for name in os.listdir(directory):
            if name != "bwrap" and not (folder / name).exists() and os.access(os.path.join(directory, name), os.X_OK):
                (folder / name).symlink_to(os.path.join(directory, name))
    assert shutil.which("bwrap", path=str(folder)) is None
    return str(folder)


@pytest.fixture(scope="module")
def hostile(bundle, unprivileged_python, tmp_path_factory):
    """The hostile class graded by run_autograder (two at a time): each student in its root; the honest reference
    graded again in the root of ``steals_and_forges`` after it; ``steals_and_forges`` once more with bubblewrap
    unavailable (the fallback: the unprivileged user and the control group)."""
    started = time.monotonic()
    token = os.urandom(6).hex()
    marker, fallback_marker = f"GRADESCOPE-LEFT-{token}", f"GRADESCOPE-LEFT-FALLBACK-{token}"
    leak, fallback_leak = (
        Path("/tmp") / f"autograder-test-gradescope-{which}-{token}" for which in ("leak", "fallback-leak")
    )
    cache = tmp_path_factory.mktemp("preflight-cache")
    roots = {student: lay_out(bundle, {}) for student in HOSTILE_STUDENTS}
    fallback_root = lay_out(bundle, {})
    # a results folder every user may write (a harness may leave it so): the runner closes it before any student code
    (fallback_root / "results").mkdir(mode=0o777)
    (fallback_root / "results").chmod(0o777)
    expected = build_gradescope_class(MODULE, roots=roots, leak=leak, marker=marker)
    build_gradescope_class(
        MODULE, roots={"steals_and_forges": fallback_root}, leak=fallback_leak, marker=fallback_marker
    )
    roots_too = {**roots, "fallback": fallback_root}
    course_toml = {s: (r / "source" / "course.toml").read_bytes() for s, r in roots_too.items()}
    env = {"AUTOGRADER_PREFLIGHT_CACHE": str(cache)}
    no_bwrap = _without_bwrap(tmp_path_factory.mktemp("no-bwrap") / "bin")
    # issue 32's files route on the runner: a checkpointing bundle (it ships training's and data's references, which
    # its scenario is built with), whose forger renames the files its process recorded to names in the venv's
    # site-packages (absolute and ../): a .pth there ran as root in the next Python process and rewrote results.json
    site_packages = Path(unprivileged_python).parent.parent / "lib" / "python3.11" / "site-packages"
    planted = f"planted-{token}"
    files_root = lay_out(
        build(tmp_path_factory.mktemp("bundle-files") / "autograder.zip", FILES_MODULE),
        {f"{FILES_MODULE}.py": reference_source(FILES_MODULE) + FORGER.format(outside=site_packages, mark=planted)},
    )

    def grade(task: str):
        if task == "files":
            return run_watched(files_root, unprivileged_python, planted, **env)
        if task == "fallback":
            return run_watched(
                fallback_root, unprivileged_python, f"{fallback_marker}-steals_and_forges", PATH=no_bwrap, **env
            )
        run = run_watched(roots[task], unprivileged_python, f"{marker}-{task}", **env)
        if task != "steals_and_forges":
            return run
        submission = roots[task] / "submission"
        shutil.rmtree(submission)
        submission.mkdir()
        (submission / f"{MODULE}.py").write_text(reference_source(MODULE), encoding="utf-8")
        return run, run_watched(roots[task], unprivileged_python, f"{marker}-{task}", **env)

    # the two that prove their isolation's pre-flight first, then the rest on the bubblewrap pass
    order = ["files", "steals_and_forges", "fallback", *HOSTILE_STUDENTS[1:]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(order, pool.map(grade, order)))
    runs = {s: done[s] for s in HOSTILE_STUDENTS[1:]}
    runs["steals_and_forges"], honest_after = done["steals_and_forges"]
    seconds = time.monotonic() - started
    print(f"\nGradescope hostile class: {len(order) + 1} runs of run_autograder in {seconds:.0f} s")
    yield SimpleNamespace(
        runs=runs,
        honest_after=honest_after,
        fallback=done["fallback"],
        files=done["files"],
        files_root=files_root,
        site_packages=site_packages,
        planted=planted,
        expected=expected,
        roots=roots_too,
        course_toml=course_toml,
        leak=leak,
        fallback_leak=fallback_leak,
        marker=marker,
        seconds=seconds,
    )
    shutil.rmtree(leak, ignore_errors=True)
    shutil.rmtree(fallback_leak, ignore_errors=True)
    for root in [*roots_too.values(), files_root]:
        shutil.rmtree(root, ignore_errors=True)


def _function_points(results: dict) -> dict[str, float]:
    return {
        fn: round(sum(t["score"] for t in results["tests"] if t["name"].split(" ", 1)[0] == f"{MODULE}.{fn}"), 2)
        for fn in FUNCTIONS
    }


def _assert_earns(results: dict, expected: dict, who: str) -> None:
    course = load_course(ROOT).module(MODULE)
    points = _function_points(results)
    tests = by_name(results)
    for fn, (expect, pattern) in expected.items():
        if expect == "full":
            assert points[fn] == course.function(fn).points, f"{who}.{fn}: {tests[f'{MODULE}.{fn}']}"
        elif expect == "withheld":  # right values kept; the checks witnessed in its process withheld for review
            # (a function whose every check is decided on the trusted side, as at_updates' are since its
            # module-state checks are decided from the source, keeps all of its points)
            assert 0 < points[fn] <= course.function(fn).points, f"{who}.{fn}: {tests[f'{MODULE}.{fn}']}"
            # the submission is listed as needing review where the student reads it (results.json's output), whatever
            # it kept; a function that lost points says why in its own tests (the withheld checks, or a check decided
            # on the trusted side: its source writing module state, say)
            assert re.search(pattern, results["output"]), f"{who}: {pattern!r} not in {results['output']!r}"
        else:
            assert points[fn] == 0, f"{who}.{fn} should earn nothing: {tests[f'{MODULE}.{fn}']}"
            assert re.search(pattern, tests[f"{MODULE}.{fn}"]["output"]), (
                f"{who}.{fn}: {pattern!r} not in {tests[f'{MODULE}.{fn}']}"
            )
    assert results["score"] == round(sum(points.values()), 2), f"{who}: results.json's total is not its tests'"


@pytest.mark.parametrize("student", HOSTILE_STUDENTS)
def test_gradescope_hostile_student_earns_only_what_its_own_code_earns(hostile, student):
    _assert_earns(hostile.runs[student].results, hostile.expected[student], student)


@pytest.mark.parametrize("student", [*HOSTILE_STUDENTS, "honest_after", "fallback"])
def test_gradescope_results_json_is_the_graders_and_nothing_outlives_the_run(hostile, student):
    run = {"honest_after": hostile.honest_after, "fallback": hostile.fallback}.get(student) or hostile.runs[student]
    assert run.later == run.written, f"{student}: results.json changed after run_autograder returned"
    assert "GRADESCOPE-LEFT-" not in run.written and run.results["score"] < 1000, run.written[:500]
    assert [t["name"].split(" ", 1)[0] for t in run.results["tests"][:1]] == [f"{MODULE}.{FUNCTIONS[0]}"]
    assert run.survivors == set(), f"{student}: a process the student left outlived run_autograder"
    assert run.left == set(), f"{student}: processes of run_autograder's control group outlived it"
    if os.path.isdir(PIDS_CGROUP):
        assert run.watched


def test_gradescope_no_hidden_check_reaches_a_students_results(hostile):
    """Issue 41, door 4: no line of a hidden check is in any results.json the runner wrote (a visible test's output is
    shown at once; ``reads_own_hidden_checks`` tried every route to their text)."""
    squeezed = [squeeze(line) for line in hidden_check_lines(MODULE)]
    assert squeezed
    for student, run in [*hostile.runs.items(), ("fallback", hostile.fallback)]:
        written = squeeze(
            run.results.get("output", "") + "".join(str(t.get("output", "")) for t in run.results["tests"])
        )
        assert not [line for line in squeezed if line in written], student


def test_gradescope_honest_student_after_the_hostile_one_keeps_full_marks(hostile):
    results = hostile.honest_after.results
    _assert_earns(results, {fn: ("full", "") for fn in FUNCTIONS}, "honest_after")
    assert all(t["status"] == "passed" for t in results["tests"])


def test_gradescope_bundle_is_unchanged_and_nothing_leaked(hostile):
    for student, root in hostile.roots.items():
        assert (root / "source" / "course.toml").read_bytes() == hostile.course_toml[student], student
        assert (root / "source").stat().st_mode & 0o077 == 0
        results = root / "results"
        assert not (results / "results.json").is_symlink() and (results / "results.json").is_file(), student
        assert sorted(p.name for p in results.iterdir()) == ["results.json"], student
        assert results.stat().st_uid == 0 and results.stat().st_mode & 0o022 == 0, (
            f"{student}: {oct(results.stat().st_mode)}"
        )
    leaked = [p.name for p in hostile.leak.rglob("*")] if hostile.leak.exists() else []
    assert not hostile.leak.exists(), f"a student's process wrote outside its sandbox: {leaked[:10]}"
    # Without bubblewrap the student's user may write the container's /tmp (its own files only): nothing of the bundle.
    secrets = [(ROOT / "solutions" / f"{MODULE}.py").read_bytes().strip(), b'"seed"']
    for path in (p for p in hostile.fallback_leak.rglob("*") if p.is_file()) if hostile.fallback_leak.exists() else []:
        assert not any(secret in path.read_bytes() for secret in secrets), f"the bundle leaked into {path}"


def test_gradescope_runner_says_which_isolation_is_in_force(hostile):
    line = next((line for line in hostile.runs["steals_and_forges"].log.splitlines() if "isolation: " in line), None)
    assert line is not None and line.startswith("autograder gradescope: isolation: "), hostile.runs[
        "steals_and_forges"
    ].log[-2000:]
    assert "bubblewrap sandbox" in line and "cgroup v" in line, line
    print(f"\n{line}")


def test_gradescope_fallback_without_bubblewrap_holds_the_thief(hostile):
    """Bubblewrap unavailable (not on PATH, as on an image without it): the runner says it grades with the
    unprivileged user and the control group, and the same thief reads nothing, earns nothing, leaves nothing."""
    run = hostile.fallback
    _assert_earns(run.results, hostile.expected["steals_and_forges"], "fallback steals_and_forges")
    line = next((line for line in run.log.splitlines() if "isolation: " in line), "")
    assert "no bubblewrap" in line and "bwrap is not installed" in line and "cgroup v" in line, run.log[-3000:]
    print(f"\n{line}")


def test_write_results_never_writes_through_a_link_left_in_the_results_folder(tmp_path):
    """The runner (root) writes results.json through a file of its own: a link planted where it writes next
    (``results.json.tmp``) is not followed (it made root write the grader's results into the bundle)."""
    from autograder.platforms.gradescope import write_results

    victim = tmp_path / "course.toml"
    victim.write_text("# the bundle\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "results.json.tmp").symlink_to(victim)
    (tmp_path / "results" / "results.json").symlink_to(victim)
    write_results(tmp_path / "results" / "results.json", {"score": 2.0, "tests": []})
    assert victim.read_text() == "# the bundle\n"
    assert not (tmp_path / "results" / "results.json").is_symlink()
    assert json.loads((tmp_path / "results" / "results.json").read_text())["score"] == 2.0
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["results.json"]


def test_a_bundle_of_a_module_whose_scenario_uses_other_references_grades_its_reference_full(gradescope_env, tmp_path):
    """``--only checkpointing``: its scenario is built with training's reference, whose own is built with data's.
    The bundle ships those references and their stubs (not their checks), and the proof setup.sh ends with passes
    in the venv setup.sh built (before, the reference got 0: 'training.py is missing', for every student). The
    runner's real grading of such a bundle: test_gradescope_forged_file_names_write_nothing_as_root_and_earn_nothing."""
    bundle = build(tmp_path / "checkpointing.zip", "checkpointing")
    with zipfile.ZipFile(bundle) as zf:
        course = sorted(n for n in zf.namelist() if n.startswith(("exercises/", "solutions/")))
        zf.extractall(tmp_path / "root" / "source")
    assert course == [
        "exercises/checkpointing.py",
        "exercises/data.py",
        "exercises/test_checkpointing.py",
        "exercises/training.py",
        "solutions/checkpointing.py",
        "solutions/data.py",
        "solutions/training.py",
    ], course
    prove = [
        str(gradescope_env.python),
        "-m",
        "autograder.platforms.gradescope",
        "--root",
        str(tmp_path / "root"),
        "--prove",
    ]
    proc = subprocess.run(prove, env=clean_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


def test_gradescope_forged_file_names_write_nothing_as_root_and_earn_nothing(hostile):
    """Issue 32 on the runner: the checkpointing forger's renamed files are not written by the root verifier (not
    in the venv's site-packages, not in results/), its save_checkpoint earns nothing, results.json is the grader's."""
    run = hostile.files
    assert "grader's side" not in json.dumps(run.results), run.log[-4000:]  # graded, not a grader's failure
    assert list(hostile.site_packages.glob(hostile.planted + "*")) == [], (
        "the root verifier wrote where the student said"
    )
    results = hostile.files_root / "results"
    assert sorted(p.name for p in results.iterdir()) == ["results.json"] and run.later == run.written
    course = load_course(ROOT).module(FILES_MODULE)
    points = {
        fn.name: round(sum(t["score"] for t in run.results["tests"] if t["name"].split(" ", 1)[0] == fn.qualname), 2)
        for fn in course.functions
    }
    assert points["save_checkpoint"] == 0, run.results
    print(
        f"\nGradescope files forger: {points}; save_checkpoint: "
        + " | ".join(
            t["output"][:300] for t in run.results["tests"] if t["name"].startswith(f"{FILES_MODULE}.save_checkpoint")
        )
    )
    assert run.results["score"] == round(sum(points.values()), 2) and run.left == set()
