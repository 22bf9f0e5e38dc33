"""The maps a newcomer reads first stay true to the tree: the package's docstring names every subpackage and
top-level module, and the command line's docstring names every command the parser has (with the function it
calls). Read from the files and the parser (no command runs)."""

from __future__ import annotations

import re
from pathlib import Path

from support import ROOT

import autograder
from autograder import cli

PACKAGE = ROOT / "autograder"


def parts_of(package: Path) -> set[str]:
    """``autograder.<name>`` for every subpackage and top-level module (``__init__`` aside)."""
    names = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    names |= {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    return {f"autograder.{name}" for name in names}


def mapped(doc: str) -> set[str]:
    return set(re.findall(r":mod:`(autograder\.\w+)`", doc)) | {
        f"autograder.{name}" for name in re.findall(r"``(__\w+__)``", doc)
    }


def commands() -> set[str]:
    (verbs,) = [a for a in cli.build_parser()._actions if a.dest == "command"]  # argparse keeps them here only
    return set(verbs.choices)


def listed_commands(doc: str) -> dict[str, str]:
    """``{verb: the function it calls}`` from the docstring's ``- ``verb`` -> :func:`...``` lines."""
    return dict(re.findall(r"^- ``([\w-]+)``\s+-> :func:`([\w.]+)`", doc, flags=re.MULTILINE))


def test_the_package_map_names_every_part_of_the_tree():
    assert parts_of(PACKAGE) - mapped(autograder.__doc__) == set()
    assert mapped(autograder.__doc__) - parts_of(PACKAGE) == set()  # nothing gone still listed


def test_the_command_lines_docstring_names_every_command_and_what_it_calls():
    listed = listed_commands(cli.__doc__)
    assert set(listed) == commands()
    for verb, target in listed.items():
        module, _, name = target.rpartition(".")
        path = ROOT / Path(*module.split(".")).with_suffix(".py")
        assert re.search(rf"^def {name}\(", path.read_text(encoding="utf-8"), flags=re.MULTILINE), (verb, target)


def test_the_readings_see_what_is_missing(tmp_path):
    package = tmp_path / "autograder"
    for folder in ("core", "grading", "notes"):
        (package / folder).mkdir(parents=True)
    (package / "core" / "__init__.py").write_text("")
    (package / "grading" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("")
    doc = "- :mod:`autograder.core` the model\n- :mod:`autograder.gone` was here\n- ``__main__``\n"
    assert parts_of(package) == {"autograder.core", "autograder.grading", "autograder.cli"}
    assert parts_of(package) - mapped(doc) == {"autograder.grading", "autograder.cli"}
    assert mapped(doc) - parts_of(package) == {"autograder.gone", "autograder.__main__"}
    assert listed_commands("- ``grade``  -> :func:`a.b.grade`\n  - ``x`` -> nothing\n") == {"grade": "a.b.grade"}
