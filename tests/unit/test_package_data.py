"""What the kit writes from templates ships with it: every file of the package that is not Python (the templates
of report.html, feedback.html and nbgrader_config.py) is named by ``pyproject.toml``'s package-data, so a wheel
setuptools builds holds it, and the platforms' kit wheel (``autograder.shipped.kit_wheel``) holds it too.
Read from the files (no build runs)."""

from __future__ import annotations

import fnmatch
import tomllib

from support import ROOT

from autograder.shipped import kit_wheel

PACKAGE = ROOT / "autograder"
PYPROJECT = ROOT / "pyproject.toml"
TEMPLATES = {
    "autograder/grading/outputs/templates/report.html.j2",
    "autograder/grading/outputs/templates/feedback.html.j2",
    "autograder/notebooks/templates/nbgrader_config.py.j2",
}


def data_files() -> set[str]:
    """Every file of the package a wheel must carry that is not Python source (bytecode left aside)."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }


def named_by_package_data(path: str) -> bool:
    globs = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["setuptools"].get("package-data", {})
    for package, patterns in globs.items():
        folder = package.replace(".", "/") + "/"
        if path.startswith(folder) and any(fnmatch.fnmatch(path[len(folder) :], p) for p in patterns):
            return True
    return False


def test_the_templates_are_package_data():
    assert TEMPLATES <= data_files()
    assert sorted(p for p in data_files() if not named_by_package_data(p)) == []


def test_the_platforms_kit_wheel_holds_the_templates():
    assert TEMPLATES <= set(kit_wheel.wheel_files(PACKAGE, PYPROJECT))


def test_jinja2_is_a_pinned_dependency():
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    assert [d for d in declared if d.lower().startswith("jinja2")] == ["jinja2==3.1.6"]
