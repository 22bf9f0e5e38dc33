"""The one list of what grading processes import first covers what the checks import (that imports start no JAX
work is proven in fresh interpreters: ``tests/system/test_preload_processes.py``)."""

import ast
import importlib
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
