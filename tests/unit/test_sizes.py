"""No module of the package over 400 lines, no function over 60 (issue 45): a file a newcomer can read whole, a
function that fits a screen. Read with ``ast`` (nothing is imported).

``ALLOWED`` would name a file or function still over, with its size when listed, and may only shrink: it is empty,
every module and function of the package is within the limits (an entry back within them, or grown, fails).
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "autograder"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60

# path relative to autograder/ (a file) or "path:function" -> its lines when listed
ALLOWED: dict[str, int] = {}


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines, its decorators and docstring included."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    assert node.end_lineno is not None
    return node.end_lineno - first + 1


def sizes(package: Path = PACKAGE) -> dict[str, int]:
    """Every file over MAX_FILE_LINES and every function (methods and nested ones too) over MAX_FUNCTION_LINES."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_FILE_LINES:
            found[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and function_lines(node) > MAX_FUNCTION_LINES:
                found[f"{name}:{node.name}"] = function_lines(node)
    return found


def test_no_file_or_function_over_the_limits_but_the_listed_ones():
    over = sizes()
    unlisted = {name: lines for name, lines in over.items() if name not in ALLOWED}
    assert unlisted == {}, f"over {MAX_FILE_LINES} lines a file or {MAX_FUNCTION_LINES} a function: split them"
    grown = {name: (ALLOWED[name], lines) for name, lines in over.items() if name in ALLOWED and lines > ALLOWED[name]}
    assert grown == {}, "a listed one grew (listed, now): split it rather than raise the number"


def test_the_list_only_names_what_is_still_over():
    assert sorted(set(ALLOWED) - set(sizes())) == [], "within the limits now: take these off ALLOWED"


def test_the_reading_counts_files_methods_nested_functions_and_decorators(tmp_path):
    package = tmp_path / "autograder"
    (package / "room").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    (package / "room" / "a.py").write_text(
        f"@decorated\ndef long():\n{body}\n\nclass C:\n    def method(self):\n"
        + body.replace("    ", "        ")
        + "\n\ndef outer():\n    def inner():\n"
        + body.replace("    ", "        ")
        + "    return inner\n"
    )
    (package / "b.py").write_text("x = 1\n" * 401)
    (package / "c.py").write_text("x = 1\n" * 340 + "def short():\n" + body)  # 400 lines, a function of 60
    assert sizes(package) == {"room/a.py:long": 61, "room/a.py:outer": 62, "b.py": 401}
