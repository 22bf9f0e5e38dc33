"""course.toml is valid, and the loader turns every kind of mistake into a clear error."""

import io
import shutil
import textwrap
from pathlib import Path

import pytest
from support import GOOD, make_course

from autograder.authoring.check import check_course
from autograder.core.course import CourseError, load_course

ROOT = Path(__file__).resolve().parents[3]


def test_the_course_passes_every_static_rule_of_check_course():
    """course.toml, the contract, the stubs, the checks' names and markers, the hidden checks:
    the rules live in `autograder check-course`, not here."""
    out = io.StringIO()
    assert check_course(ROOT, references=False, out=out) == 0, out.getvalue()


def test_the_course_starts_with_at_updates():
    assert load_course(ROOT).modules[0].name == "at_updates"


def test_a_minimal_course_loads(tmp_path):
    course = load_course(make_course(tmp_path, GOOD))
    assert course.module("m").function("f").qualname == "m.f"
    assert course.points == 1


@pytest.mark.parametrize(
    "edit, pattern",
    [
        (
            lambda t: t.replace('title = "T"', 'title = "T"\ncolour = "red"'),
            r"unknown key\(s\) \['colour'\] in the top level",
        ),
        (
            lambda t: t.replace('hint = "h"', 'hint = "h"\nhints = "x"'),
            r"unknown key\(s\) \['hints'\] in module 'm' functions\[0\]",
        ),
        (lambda t: t.replace("format = 1", "format = 2"), r"format 2 is not supported"),
        (lambda t: t.replace('  hint = "h"\n', ""), r"function m.f is missing 'hint'"),
        (lambda t: t.replace("points = 1", "points = 0"), r"m.f.points must be positive"),
        (lambda t: t.replace("points = 1", 'points = "one"'), r"function m.f.points must be a number, got 'one'$"),
        (
            lambda t: t.replace('title = "T"', "title = 3"),
            r"the top level.title must be a string \(in \"quotes\"\), got 3$",
        ),
        (
            lambda t: t.replace("[[modules]]", '[grading]\ntimeout_per_function = "two"\n[[modules]]'),
            r"\[grading\].timeout_per_function must be a number, got 'two'$",
        ),
        (
            lambda t: t.replace("[[modules]]", "[grading]\nmemory_limit_mb = 0\n[[modules]]"),
            r"\[grading\].memory_limit_mb must be a whole number above 0, got 0$",
        ),
        (lambda t: t + t[t.index("[[modules]]") :], r"module 'm' is listed twice"),
        (lambda t: t + t[t.index("  [[modules.functions]]") :], r"function m.f is listed twice"),
        (lambda t: t.replace('name = "f"', 'name = "g"'), r"exercises/m.py does not define g"),
        (lambda t: t.replace('name = "m"', 'name = "n"'), r"module 'n' needs exercises/n.py, which is missing"),
        (lambda t: t.replace("[[modules]]", "[[modules]"), r"not valid TOML"),
    ],
)
def test_mistakes_are_clear_errors(tmp_path, edit, pattern):
    root = make_course(tmp_path, edit(textwrap.dedent(GOOD)))
    with pytest.raises(CourseError, match=pattern):
        load_course(root)


def test_a_function_missing_from_the_solutions_is_an_error(tmp_path):
    root = make_course(tmp_path, GOOD, solution="def other(x):\n    return x\n")
    with pytest.raises(CourseError, match=r"solutions/m.py does not define f"):
        load_course(root)


def test_the_real_course_catches_a_renamed_function(tmp_path):
    copy = tmp_path / "course"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "tests"))
    exercise = copy / "exercises" / "at_updates.py"
    exercise.write_text(exercise.read_text().replace("def clamp_at(", "def clamp(", 1))
    with pytest.raises(CourseError, match=r"exercises/at_updates.py does not define clamp_at"):
        load_course(copy)


def test_readme_module_table_lists_the_course_modules_in_order():
    import re

    from support import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)` \|", readme, flags=re.M)
    assert listed == [m.name for m in load_course(ROOT).modules], "README's module table and course.toml disagree"
