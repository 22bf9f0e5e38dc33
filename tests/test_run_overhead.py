"""What a course run does not spend its time on: work pytest does by default that the checks do not need.

A student's run of one module is a few seconds, so fixed costs count: pytest's assertion rewriting
re-compiles every module of every pytest plugin's distribution (hypothesis, anyio, ...) on every run
where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, as here and in grading sandboxes), and its
``unraisableexception`` plugin walks the whole heap once more at exit. Measured on this machine, the two
together were about 1.1 s of a 5 s ``pytest exercises/test_training.py``.
"""

import os
import subprocess
import sys

from support import ROOT

PROBE = '''
import sys

def pytest_unconfigure(config):
    from _pytest.unraisableexception import gc_collect_iterations_key
    rewritten = sorted(
        name for name, module in list(sys.modules.items())
        if type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook"
    )
    print("PROBE", config.getoption("assertmode"), config.stash.get(gc_collect_iterations_key, None), rewritten)
'''


def test_a_course_run_rewrites_no_module_and_skips_the_final_heap_walk(tmp_path):
    (tmp_path / "overhead_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    env.pop("CI", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "exercises/test_at_updates.py", "--solutions", "-q", "-p", "overhead_probe",
         "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=ROOT, env={**env, "JAX_COURSE_CACHE_DIR": ""}, capture_output=True, text=True, timeout=600,
    )
    line = next((line for line in proc.stdout.splitlines() if line.startswith("PROBE")), None)
    assert line is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert line == "PROBE plain 0 []", line
