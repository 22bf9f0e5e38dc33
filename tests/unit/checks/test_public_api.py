"""Every name a course's check files import from ``autograder`` is public API that exists.

So moving the autograder's internals cannot break a course's checks: a check file that
reaches for an internal module or a private name fails here, not in a student's run.
"""

import ast
import importlib
from pathlib import Path

import pytest
from support import ROOT

import autograder

CHECK_FILES = sorted((ROOT / "exercises").glob("test_*.py"))


def autograder_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every ``from autograder... import name`` and (module, None) for ``import autograder...``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "autograder":
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "autograder"]
    return found


def is_public(module: str, name: str | None) -> bool:
    if name is None:
        return module in autograder.PUBLIC_MODULES
    if module in autograder.PUBLIC_MODULES:
        return not name.startswith("_")
    return name in autograder.PUBLIC_NAMES.get(module, ())


@pytest.mark.parametrize("path", CHECK_FILES, ids=lambda p: p.name)
def test_check_files_import_only_public_names_that_exist(path):
    imports = autograder_imports(path)
    assert imports, f"{path.name} imports nothing from autograder"
    for module, name in imports:
        assert is_public(module, name), f"{path.name} imports {module}.{name}, which is not in autograder's public API"
        imported = importlib.import_module(module)
        if name is not None:
            assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), f"{module}.{name} is gone"


def test_every_public_name_exists():
    for module in autograder.PUBLIC_MODULES:
        importlib.import_module(module)
    for module, names in autograder.PUBLIC_NAMES.items():
        for name in names:
            imported = importlib.import_module(module)
            assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), f"{module}.{name}"
    assert autograder.Status("not started") is autograder.Status.NOT_STARTED


def test_a_private_or_internal_import_is_caught():
    assert not is_public("autograder.checks.values", "_private")
    assert not is_public("autograder.pytest_plugin.session", "CourseSession")
    assert not is_public("autograder.grading.grader", None)
