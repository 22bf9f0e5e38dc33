"""What a course run does not spend its time on: work Python and pytest do by default that the checks
do not need (:mod:`autograder.pytest_plugin.garbage`, and ``addopts`` in ``pyproject.toml``).

A student's run of one module is a few seconds, so fixed costs count: pytest's assertion rewriting
re-compiles every module of every pytest plugin's distribution (hypothesis, anyio, ...) on every run
where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, as here and in grading sandboxes), and
Python walks the whole heap of JAX, Flax and torch at every full garbage collection. Measured on this
machine, they were about 1.6 s of a 5 s ``pytest exercises/test_training.py`` re-run. And pytest
formats the traceback of every failed test, parsing the source of each frame, although the student's
message replaces it: about 70 ms a failed check (an nbgrader check cell of a stub: 0.28 -> 0.13 s).
"""

import os
import shutil
import subprocess
import sys

import pytest
from support import ROOT

# The modules of the probed process that pytest's assertion rewriting hook loaded (a probe's expression).
REWRITTEN = (
    "sorted(name for name, module in list(sys.modules.items()) "
    'if type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook")'
)

PROBE = """
import atexit, gc, sys

seen = {}

def pytest_runtest_call(item):
    seen.setdefault("during", gc.get_freeze_count() > 0)

def pytest_unconfigure(config):
    from _pytest.unraisableexception import gc_collect_iterations_key
    seen["rewritten"] = {REWRITTEN}
    seen["assert"], seen["final_gc"] = config.getoption("assertmode"), config.stash.get(gc_collect_iterations_key, None)

atexit.register(lambda: print("PROBE", seen["assert"], seen["final_gc"], seen["rewritten"], seen["during"], gc.get_freeze_count() > 0))
""".replace("{REWRITTEN}", REWRITTEN)


def probe_line(cmd: list[str], cwd, env: dict) -> str:
    """The line the probe printed (``PROBE ...``) when ``cmd`` ran."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("PROBE")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return line


@pytest.mark.parametrize("grading", [False, True], ids=["student", "grading"])
def test_a_course_run_rewrites_no_module_and_walks_the_imported_heap_rarely(tmp_path, grading):
    """No module is rewritten, no heap walk at exit; in a student's run (not in grading, whose processes
    the attack tests examine through ``gc``) what the imports left is frozen while the checks run, and
    given back at the end."""
    (tmp_path / "overhead_probe.py").write_text(PROBE)
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "JAX_COURSE_CACHE_DIR": "",
    }
    env.pop("CI", None)
    line = probe_line(
        [
            sys.executable,
            "-m",
            "pytest",
            "exercises/test_at_updates.py",
            "--solutions",
            "-q",
            "-p",
            "overhead_probe",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            *(["--grading"] if grading else []),
        ],
        ROOT,
        env,
    )
    assert line == f"PROBE plain 0 [] {not grading} False", line


GRADING_PROBE = """
import sys

import pytest

from autograder.grading.wire import pytest_args


class Probe:
    def pytest_unconfigure(self, config):
        rewritten = {REWRITTEN}
        unused = [name for name in ("xdist", "anyio", "unraisableexception") if config.pluginmanager.has_plugin(name)]
        print("PROBE", rewritten, unused, sorted(m for m in ("xdist", "anyio") if m in sys.modules))


root = sys.argv[1]
pytest.main([f"{root}/exercises/test_at_updates.py", "--solutions", "--collect-only", *pytest_args(root)], plugins=[Probe()])
""".replace("{REWRITTEN}", REWRITTEN)


def test_grading_processes_rewrite_no_module_and_load_no_unused_plugin(tmp_path):
    """The options of every grading process (child and verifier): no module through pytest's rewriting
    hook, neither xdist nor anyio imported (each process would import them again)."""
    course = tmp_path / "course"  # what the sandbox holds: the course, its checks, a pytest.ini of its own
    for folder in ("exercises", "solutions"):
        (course / folder).mkdir(parents=True)
        for name in ("at_updates.py", "test_at_updates.py"):
            if (ROOT / folder / name).is_file():
                shutil.copy(ROOT / folder / name, course / folder / name)
    shutil.copy(ROOT / "course.toml", course / "course.toml")
    (course / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT), "JAX_COURSE_CACHE_DIR": ""}
    line = probe_line([sys.executable, "-c", GRADING_PROBE, str(course)], tmp_path, env)
    assert line == "PROBE [] [] []", line


WRONG_AT_UPDATES = """import jax.numpy as jnp


def set_diagonal(x, value):
    return x


def scatter_add(x, indices, updates):
    return x


def clamp_at(x, indices, lo, hi):
    return x


def replace_negatives(x, value):
    return x
"""


@pytest.mark.parametrize("flags", [(), ("--tb=long",)], ids=["student messages", "--tb=long"])
def test_a_failed_check_formats_no_traceback_it_will_not_show(pytester, flags, monkeypatch):
    """pytest formats a failed test's traceback by parsing the source of every frame (about 70 ms a
    failure through JAX's frames); the student's message replaces it, so the course's checks skip it.
    With ``--tb=long`` (or ``-v``) the traceback is shown, so it is formatted."""
    from _pytest._code.code import ExceptionInfo

    formatted = []
    getrepr = ExceptionInfo.getrepr
    monkeypatch.setattr(ExceptionInfo, "getrepr", lambda self, *a, **k: formatted.append(1) or getrepr(self, *a, **k))
    folder = pytester.mkdir("submission")
    (folder / "at_updates.py").write_text(WRONG_AT_UPDATES)
    result = pytester.runpytest_inprocess(
        str(ROOT / "exercises" / "test_at_updates.py"),
        "--submission",
        str(folder),
        "-p",
        "no:cacheprovider",
        "-k",
        "matches_reference",
        *flags,
    )
    assert result.parseoutcomes()["failed"] == 4
    assert "at_updates.clamp_at" in result.stdout.str() and "hint:" in result.stdout.str()
    assert (len(formatted) == 0) == (not flags), len(formatted)
