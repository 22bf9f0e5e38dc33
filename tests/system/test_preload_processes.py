"""What importing the kit does, in a fresh interpreter (the test process has imported everything already): the
grading preload and the check modules start no JAX backend, the core imports neither JAX nor pytest, and a
grading process sets its libraries aside from garbage collection, and the grading wing imports no JAX and no
orchestrator into a grading process (the list itself: ``tests/unit/runtime/test_preload.py``)."""

import subprocess
import sys

from support import ROOT


def run_python(code: str) -> str:
    env = {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


# jax keeps its started backends in xla_bridge._backends (no public way to ask without starting one).
STARTED = "import jax._src.xla_bridge as xb; print(sorted(xb._backends))"


def test_importing_the_grading_preload_and_the_check_modules_starts_no_jax_backend():
    """A zygote imports the check modules and the course's plugin before it forks (preload.KIT_CHECKS)."""
    code = "from autograder.runtime import preload\n"
    code += "assert set(preload.CHECK_MODULES + ('autograder.plugin',)) <= set(preload.GRADING)\n"
    code += "preload.import_all(preload.GRADING)\n" + STARTED
    assert run_python(code) == "[]"


def test_the_core_imports_neither_jax_nor_pytest():
    modules = [p.stem for p in (ROOT / "autograder" / "core").glob("*.py") if p.stem != "__init__"]
    code = "import sys\n" + "".join(f"import autograder.core.{m}\n" for m in modules)
    code += "print(sorted(m for m in ('jax', 'pytest', 'numpy') if m in sys.modules))"
    assert run_python(code) == "[]"


def test_a_grading_process_sets_its_libraries_aside_from_garbage_collection_and_nothing_after():
    """A forked child's full collections walk only what came after the zygote's imports; what a grading
    process loads later (a reference, a submission) is still found through ``gc`` (the attack tests'
    thieves look there)."""
    code = (
        "import gc\n"
        "from autograder.grading.isolation.zygote import preload\n"
        "preload()\n"
        "class LoadedLater: pass\n"
        "later = LoadedLater()\n"
        "import jax\n"
        "print(gc.get_freeze_count() > 10000, any(o is later for o in gc.get_objects()),"
        " any(o is jax.jit for o in gc.get_objects()))"
    )
    assert run_python(code) == "True True False"


def test_importing_the_grading_wing_imports_no_jax_and_no_orchestrator_into_a_grading_process():
    code = (
        "import sys, autograder.grading, autograder.grading.untrusted.child\n"
        "assert 'jax' not in sys.modules, 'jax'\n"
        "assert 'autograder.grading.api' not in sys.modules and 'autograder.grading.grader' not in sys.modules\n"
        "from autograder.grading import grade_class, ClassGrades\n"
        "assert grade_class.__module__ == 'autograder.grading.api' and 'jax' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})


def test_calling_an_exported_program_imports_nothing_the_preload_did_not():
    """The checks' ``is_jitted`` and retrace certificates call the student's exported program in every grading
    process: what JAX's CPU backend imports for it the first time (SciPy's LAPACK) comes with the preload."""
    code = (
        "import sys\n"
        "from autograder.grading.isolation.zygote import preload\n"
        "preload()\n"
        "import jax, jax.numpy as jnp\n"
        "jnp.zeros(3).block_until_ready()\n"
        "before = set(sys.modules)\n"
        "exported = jax.export.export(jax.jit(lambda x: jnp.sin(x) * 2))(jax.ShapeDtypeStruct((3,), jnp.float32))\n"
        "jax.jit(exported.call)(jnp.ones(3, jnp.float32)).block_until_ready()\n"
        "print(sorted({m.split('.')[0] for m in set(sys.modules) - before} - {'jax', 'jaxlib'}))"
    )
    assert run_python(code) == "[]"
