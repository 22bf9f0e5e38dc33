"""The one list of what grading processes import first covers what the checks import, and imports start no JAX work."""

import ast
import importlib
import subprocess
import sys

from support import ROOT

from autograder.grading import wire as requests
from autograder.runtime import preload

CHECK_SOURCES = sorted((ROOT / "autograder" / "checks").glob("*.py")) + sorted((ROOT / "exercises").glob("test_*.py"))


def imported_modules(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def third_party(name: str) -> bool:
    top = name.split(".")[0]
    return top not in sys.stdlib_module_names and top not in ("autograder", "__future__")


def test_the_preloaded_libraries_cover_every_library_the_checks_import():
    preloaded = {name.split(".")[0] for name in preload.LIBRARIES}
    for path in CHECK_SOURCES:
        missing = {n for n in imported_modules(path) if third_party(n) and n.split(".")[0] not in preloaded}
        assert not missing, f"{path.name} imports {sorted(missing)}: add them to autograder.runtime.preload.LIBRARIES"


def test_the_check_modules_list_is_every_module_of_checks():
    on_disk = {
        f"autograder.checks.{p.stem}" for p in (ROOT / "autograder" / "checks").glob("*.py") if p.stem != "__init__"
    }
    assert set(preload.CHECK_MODULES) == on_disk


def test_every_listed_module_exists():
    for name in preload.FORK_SAFE_KIT + preload.CHECK_MODULES + (requests.CHILD, requests.VERIFIER, requests.ZYGOTE):
        assert importlib.util.find_spec(name), name


def run_python(code: str) -> str:
    env = {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


# jax keeps its started backends in xla_bridge._backends (no public way to ask without starting one).
STARTED = "import jax._src.xla_bridge as xb; print(sorted(xb._backends))"


def test_importing_the_grading_preload_and_the_check_modules_starts_no_jax_backend():
    code = (
        "from autograder.runtime import preload\n"
        "preload.import_all(preload.GRADING + preload.CHECK_MODULES)\n" + STARTED
    )
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
