"""What a student sees from `pytest exercises/`: not-started lines, teaching messages, the score table."""

import shutil
from pathlib import Path

import pytest
from support import ROOT

MODULE = "at_updates"


@pytest.fixture(autouse=True)
def a_students_machine(monkeypatch):
    """What a student sees: no CI variable (on CI the plugin grades, and keeps no local progress)."""
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def course_copy(tmp_path) -> Path:
    """A student's checkout: course.toml, exercises/ and solutions/ for at_updates only."""
    copy = tmp_path / "course"
    (copy / "exercises").mkdir(parents=True)
    (copy / "solutions").mkdir()
    toml = (ROOT / "course.toml").read_text()
    first_other = toml.find("[[modules]]", toml.find(f'name = "{MODULE}"'))
    (copy / "course.toml").write_text(toml if first_other < 0 else toml[:first_other])
    for name in (f"{MODULE}.py", f"test_{MODULE}.py"):
        shutil.copy(ROOT / "exercises" / name, copy / "exercises" / name)
    shutil.copy(ROOT / "solutions" / f"{MODULE}.py", copy / "solutions" / f"{MODULE}.py")
    return copy


def run(pytester, course_copy, *args, monkeypatch=None):
    return pytester.runpytest_inprocess(str(course_copy / "exercises"), "-p", "no:cacheprovider", *args)


def test_fresh_exercises_show_not_started_and_a_zero_score(pytester, course_copy, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = run(pytester, course_copy)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*hypothesis profile: student*",
            "*nnnnnnnnn*",
            "*· set_diagonal*0/2*not started",
            "total: 0/10",
            "Welcome!*",
            "*16 not started in*",
        ]
    )
    assert "Traceback" not in result.stdout.str() and "FAILURES" not in result.stdout.str()


def test_copying_the_solution_into_exercises_passes_with_full_marks(pytester, course_copy):
    shutil.copy(course_copy / "solutions" / f"{MODULE}.py", course_copy / "exercises" / f"{MODULE}.py")
    result = run(pytester, course_copy)
    result.assert_outcomes(passed=16)
    result.stdout.fnmatch_lines(["*✓ clamp_at*3/3*", "total: 10/10"])
    assert "needs review" not in result.stdout.str()  # no false flag of the static screen on the reference


def test_code_the_grader_would_withhold_for_review_is_named_before_submitting(pytester, course_copy):
    """Issue 42: ``pytest exercises/`` runs the static screen ``grade`` runs, and warns the same way."""
    source = (course_copy / "solutions" / f"{MODULE}.py").read_text()
    source += "\nimport gc\nimport jax as _jax\n_jax.jit = _jax.jit\n"
    (course_copy / "exercises" / f"{MODULE}.py").write_text(source)
    n = len(source.splitlines())
    result = run(pytester, course_copy, "-k", "set_diagonal")
    result.stdout.fnmatch_lines(
        [
            "*needs review*",
            f"needs review: imports gc (not one of the course's libraries), {MODULE}.py:{n - 2}",
            f"needs review: assigns to _jax.jit, an attribute of an imported module, {MODULE}.py:{n}",
            "*withholds the points of the checks decided in your own grading process*",
        ]
    )


def test_solutions_flag_checks_the_reference(pytester, course_copy):
    result = run(pytester, course_copy, "--solutions")
    result.assert_outcomes(passed=16)
    result.stdout.fnmatch_lines([f"checking: {course_copy / 'solutions'}*"])


WRONG = """
def clamp_at(x, indices, lo, hi):
    return jnp.clip(x, lo, hi)
"""


def test_a_wrong_function_gets_a_teaching_message_not_a_traceback(pytester, course_copy):
    source = (course_copy / "solutions" / f"{MODULE}.py").read_text() + WRONG
    (course_copy / "exercises" / f"{MODULE}.py").write_text(source)
    result = run(pytester, course_copy, "-k", "clamp_at")
    # wrong values are the correctness check's; it is pure. The jit check is decided by the compiled program
    # giving the reference's values (a forged program must be a correct one), so it fails too, but says that
    # jit is not the mistake and points at the values
    result.assert_outcomes(failed=2, passed=2)
    result.stdout.fnmatch_lines(
        [
            "at_updates.clamp_at: result differs from the reference at * entries (float32, shape *)",
            "  checked: clamp_at(...) equals the reference on generated inputs",
            "  first differences, index: expected vs got",
            "  smallest failing input:",
            "    inputs=(*",
            "  hint: Clamping is two bounds*",  # the gentle hint; the direct one only when stuck
            "  still stuck? `autograder hint clamp_at --reveal` shows the direct hint*",
            "*clamp_at works under jax.jit (it gives what it gives without jit), but not the reference's values: *",
            "*✗ clamp_at*0/3*2/4 checks pass",
        ]
    )
    text = result.stdout.str()
    assert "Traceback" not in text and "site-packages" not in text


def test_long_tracebacks_on_request_keep_the_message(pytester, course_copy):
    source = (course_copy / "solutions" / f"{MODULE}.py").read_text() + WRONG
    (course_copy / "exercises" / f"{MODULE}.py").write_text(source)
    result = run(pytester, course_copy, "-k", "clamp_at_matches", "--tb=long")
    result.stdout.fnmatch_lines(["*CheckFailure*", "*what the grader says*", "at_updates.clamp_at: result differs*"])


def test_a_module_that_does_not_import_costs_its_functions_with_one_clear_line(pytester, course_copy):
    path = course_copy / "exercises" / f"{MODULE}.py"
    path.write_text(
        path.read_text().replace("def scatter_add(x, indices, updates):", "def scatter_add(x, indices, updates)")
    )
    result = run(pytester, course_copy, "-k", "set_diagonal", "--setup-show")
    result.assert_outcomes(failed=4)  # failed checks (set_diagonal has 4), not errors of the grader
    result.stdout.fnmatch_lines(["your module could not be imported: SyntaxError line 40: expected ':'", "total: 0/2"])
    # ... each before its fixtures (a training scenario costs seconds, for nothing)
    assert "SETUP" not in result.stdout.str()


def test_ci_selects_the_deterministic_grading_profile(pytester, course_copy, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = run(pytester, course_copy, "--solutions", "-k", "set_diagonal")
    result.stdout.fnmatch_lines(["*hypothesis profile: grading*"])


def test_a_run_is_about_the_kit_of_its_path_not_the_kit_it_runs_in(tmp_path):
    """A check cell or a kit's own tests run from inside one kit may check another kit's file."""
    from autograder.pytest_plugin.hooks import course_root_of

    here, there, loose = tmp_path / "here", tmp_path / "there", tmp_path / "loose"
    for kit in (here, there):
        (kit / "exercises").mkdir(parents=True)
        (kit / "course.toml").write_text("")
        (kit / "exercises" / "test_m.py").write_text("")
    loose.mkdir()
    assert course_root_of(here, [str(there / "exercises" / "test_m.py") + "::test_x"]) == there
    assert course_root_of(here, [str(there / "exercises")]) == there
    assert course_root_of(here, ["exercises/test_m.py"]) == here
    assert course_root_of(here, [str(loose)]) == here  # a path in no kit: the kit it runs in
    assert course_root_of(loose, []) is None


def test_changed_given_code_is_named_once_and_the_checks_use_the_courses_own(pytester, tmp_path):
    """Issue 44, finding 8: pytrees' given make_regression_data changed costs nothing (fit, the reference's code,
    keeps its points), and the run names it once."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "exercises", course / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", course / "solutions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "course.toml", course / "course.toml")
    (tmp_path / "sub").mkdir()
    source = (ROOT / "solutions" / "pytrees.py").read_text()
    changed = source.replace(
        "def make_regression_data(key, n_samples=20, x_dim=10, y_dim=5, noise=0.1):",
        "def make_regression_data(key, n_samples=20, x_dim=10, y_dim=5, noise=3.0):",
    )
    assert changed != source
    (tmp_path / "sub" / "pytrees.py").write_text(changed)
    result = pytester.runpytest_inprocess(
        str(course / "exercises" / "test_pytrees.py"),
        "-p",
        "no:cacheprovider",
        "--submission",
        str(tmp_path / "sub"),
        "-k",
        "fit",
    )
    out = result.stdout.str()
    assert out.count("given code changed: pytrees.make_regression_data differs from the course's given code") == 1, out
    result.assert_outcomes(passed=result.parseoutcomes().get("passed", 0))
    assert "failed" not in result.parseoutcomes(), out
