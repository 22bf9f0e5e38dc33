"""The quick tier stays quick: no test of ``tests/unit/`` starts a Python interpreter of its own. A fresh
interpreter that imports JAX, pytest or the kit costs seconds (tens on a loaded machine), and eight such tests
once took most of ``scripts/test.sh --quick``; a test that must prove something in a fresh process belongs in
``tests/system/``. Read with ``ast`` (nothing is imported or run); ``tests/unit/conftest.py`` also fails a unit
test during which the code it calls starts one."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT, UNIT_TESTS_STARTING_PROCESSES

UNIT = ROOT / "tests" / "unit"

# What names a Python interpreter to start: this one's own path, pytester's run in a subprocess, an interpreter by
# name (a tool such as ``git`` starts in milliseconds and is no concern here).
STARTERS = {"sys.executable", "runpytest_subprocess", "python", "python3"}


def process_starts(path: Path) -> list[str]:
    """``line: what`` for each place a test file names a Python interpreter to start."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            name = node.attr if node.attr == "runpytest_subprocess" else ast.unparse(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.rsplit("/", 1)[-1]
        else:
            continue
        if name in STARTERS:
            found.append(f"{node.lineno}: {name}")
    return sorted(set(found))


def unit_tests_starting_processes(unit: Path = UNIT) -> dict[str, list[str]]:
    found = {}
    for path in sorted(unit.rglob("test_*.py")):
        relative = path.relative_to(unit).as_posix()
        starts = process_starts(path)
        if starts and relative not in UNIT_TESTS_STARTING_PROCESSES and path != Path(__file__):  # this file names them
            found[relative] = starts
    return found


def test_no_unit_test_starts_an_interpreter():
    assert unit_tests_starting_processes() == {}, "move these tests to tests/system/ (see this file's docstring)"


def test_the_reading_finds_every_way_to_start_one(tmp_path):
    files = {
        "a/test_exe.py": "import subprocess, sys\ndef test_x():\n    subprocess.run([sys.executable, '-c', ''])\n",
        "a/test_named.py": "import os\ndef test_x():\n    os.system('python3 -c 1')\n    os.execv('/usr/bin/python', [])\n",
        "b/test_cli.py": "from subprocess import run\ndef test_x():\n    run(['.venv/bin/python', '-m', 'autograder'])\n",
        "b/test_pytester.py": "def test_x(pytester):\n    pytester.runpytest_subprocess('-q')\n",
        "c/test_git.py": "import subprocess, sys\ndef test_x():\n    subprocess.run(['git', 'init'])\n    sys.version\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert unit_tests_starting_processes(tmp_path) == {
        "a/test_exe.py": ["3: sys.executable"],
        "a/test_named.py": ["4: python"],
        "b/test_cli.py": ["3: python"],
        "b/test_pytester.py": ["2: runpytest_subprocess"],
    }
