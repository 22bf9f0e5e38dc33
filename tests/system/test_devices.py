"""The course's 8 CPU devices (and its quick-compilation XLA flags) are in effect wherever checks run: this
pytest session (set by the plugin before tests/conftest.py imported JAX), a fresh interpreter, and a notebook kernel. The sandboxed grading processes
(zygote, child and trusted verifier) are proven by ``test_grade_command``'s every-module run, started without
the variable: the parallel and checkpointing references get full marks there under the grader's limits."""

import os
import subprocess
import sys

import jax
from support import ROOT

from autograder.runtime.devices import COURSE_CPU_DEVICES, QUICK_COMPILE_FLAGS, with_quick_compile

PROBE = """
import sys
from autograder.runtime.devices import use_course_devices
{before}
ok = use_course_devices()
import jax
print(ok, jax.device_count())
"""

BACKEND_PROBE = """
import os
from autograder.runtime.devices import use_course_backend
{before}
ok = use_course_backend()
import jax
print(ok, jax.device_count(), os.environ["XLA_FLAGS"])
"""


def probe(before: str = "") -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("JAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_this_pytest_session_runs_with_the_course_devices():
    assert jax.device_count() == COURSE_CPU_DEVICES == 8


def test_use_course_devices_works_before_and_after_importing_jax():
    assert probe() == "True 8"
    assert probe("import jax") == "True 8"


def test_use_course_devices_reports_a_backend_that_already_started():
    assert probe("import jax.numpy as jnp; jnp.zeros(1)") == "False 1"


def test_quick_compilation_is_on_in_this_session_and_in_grading_processes():
    from autograder.grading.isolation import processes

    for flags in (os.environ["XLA_FLAGS"], processes.child_env()["XLA_FLAGS"]):
        assert set(QUICK_COMPILE_FLAGS) <= set(flags.split())
    # a grading process keeps its own flags beside them
    assert "--xla_cpu_multi_thread_eigen=false" in processes.child_env()["XLA_FLAGS"].split()


def test_use_course_backend_adds_the_flags_and_keeps_the_users():
    env = dict(os.environ, PYTHONPATH=str(ROOT), XLA_FLAGS="--xla_backend_optimization_level=2 --xla_dump_to=/nowhere")
    env.pop("JAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", BACKEND_PROBE.format(before="")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    ok, count, *flags = proc.stdout.split()
    assert (ok, count) == ("True", "8")
    assert flags == [
        "--xla_backend_optimization_level=2",
        "--xla_dump_to=/nowhere",
        "--xla_cpu_use_fusion_emitters=false",
        "--xla_cpu_parallel_codegen_split_count=1",
    ]
    assert with_quick_compile("") == " ".join(QUICK_COMPILE_FLAGS)


NOTEBOOK_RUN = """
import json, sys
nb = json.load(open(sys.argv[1]))
ns = {}
for cell in nb["cells"]:
    meta = cell["metadata"]["nbgrader"]
    if cell["cell_type"] == "code" and (meta["grade_id"] == "setup" or meta["solution"]):
        exec(cell["source"], ns)
import jax
print(jax.device_count())
exec("from autograder.notebook import check\\npoints = check('parallel', 'all_device_mean', globals())", ns)
print(ns["points"])
"""


def test_a_notebook_kernel_gets_the_course_devices_from_its_setup_cell(tmp_path):
    """The generated notebook's setup cell runs first in a fresh interpreter, as in a kernel: JAX then has
    8 devices, and a parallel check cell gives the reference full points."""
    from autograder.notebooks.builder import build_course

    (notebook,) = build_course(ROOT, tmp_path / "course", modules=["parallel"])
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_COURSE_ROOT=str(ROOT))
    env.pop("JAX_NUM_CPU_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", NOTEBOOK_RUN, str(notebook)], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "8" and lines[-1] == "2.0", proc.stdout[-2000:]


def test_the_course_runs_on_cpu_when_jax_is_told_to_use_an_accelerator(tmp_path):
    """``JAX_PLATFORMS=cuda`` on this CPU-only machine (as on a GPU box, where JAX's default backend has one
    device): the course sets its own backend, the parallel module's reference gets full marks, and the run's
    first line says the accelerator was set aside."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cuda")
    env.pop("JAX_NUM_CPU_DEVICES", None)
    for name in [k for k in env if k.startswith("PYTEST_")]:  # a student's run, not an xdist worker of the kit's suite
        env.pop(name)
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "exercises/test_parallel.py",
            "--solutions",
            "-p",
            "no:cacheprovider",
            "--results-json",
            str(results),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    import json

    data = json.loads(results.read_text())
    assert data["score"] == data["max_score"] > 0
    assert proc.stderr.splitlines()[0].startswith("autograder: the course's checks run on JAX's CPU backend")
    assert "JAX_PLATFORMS=cuda" in proc.stderr.splitlines()[0]


def test_the_too_few_devices_message_names_the_platform_and_count():
    from autograder.runtime.devices import wrong_device_count_advice

    assert wrong_device_count_advice(1, "gpu").startswith("JAX is running on its gpu backend with 1 device(s)")
    assert "JAX_PLATFORMS=cpu" in wrong_device_count_advice(1, "gpu")
    assert wrong_device_count_advice(2, "cpu").startswith("JAX is running on its CPU backend with 2 device(s)")
    assert wrong_device_count_advice(8).startswith("JAX is running on its CPU backend")  # asks JAX: cpu here


FLAG_PROBE = """
import json, os, sys
from autograder.runtime import devices
bogus = sys.argv[1]
kept = devices.accepted_flags(["--xla_backend_optimization_level=0", bogus])
again = devices.accepted_flags([bogus])
print(json.dumps([kept, again, os.environ[devices.CHECKED_VAR]]))
"""


def test_a_flag_xla_does_not_know_is_dropped_once_probed_and_remembered(tmp_path):
    bogus = "--xla_no_such_flag_in_any_xla=1"
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path))
    env.pop("AUTOGRADER_XLA_FLAGS_CHECKED", None)
    for _ in range(2):  # probed, then read from the cache: the same answer, the same one warning
        proc = subprocess.run([sys.executable, "-c", FLAG_PROBE, bogus], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        import json

        kept, again, checked = json.loads(proc.stdout)
        assert kept == ["--xla_backend_optimization_level=0"] and again == []
        assert proc.stderr.count(bogus) == 1 and "does not know the flag" in proc.stderr
        assert json.loads(checked)["flags"][bogus] is False
        assert (tmp_path / "autograder" / "xla-flags.json").is_file()
    # a process started with the answer in its environment neither probes nor warns again
    proc = subprocess.run(
        [sys.executable, "-c", FLAG_PROBE, bogus],
        env=dict(env, AUTOGRADER_XLA_FLAGS_CHECKED=checked, XDG_CACHE_HOME=str(tmp_path / "empty")),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and bogus not in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "empty").exists()


def test_an_installed_accelerator_plugin_is_set_aside_and_said(tmp_path):
    """A machine with JAX's GPU plugin installed (a stand-in package of JAX's plugin namespace here): the
    course still asks for the CPU backend, and says so."""
    (tmp_path / "jax_plugins" / "xla_cuda12").mkdir(parents=True)
    (tmp_path / "jax_plugins" / "xla_cuda12" / "__init__.py").write_text("raise ImportError('not for this test')\n")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}")
    env.pop("JAX_PLATFORMS", None)
    code = "import os; from autograder.runtime import devices; print(devices.use_cpu_backend(), os.environ['JAX_PLATFORMS']); print(devices.backend_note())"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    first, note = proc.stdout.splitlines()
    assert first == "jax_plugins.xla_cuda12 cpu"
    assert "CPU backend with 8 devices" in note and "(jax_plugins.xla_cuda12) is set aside" in note
