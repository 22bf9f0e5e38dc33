"""The student's loop: hints in steps with local progress, status, reset, hint, slow-compile lines.

Real pytest runs of the course's checks on a copy of the course (in-process,
like tests/system/test_plugin.py); progress, stubs and backups are real files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support import ROOT

from autograder import cli
from autograder.core import progress as local_progress
from autograder.core.course import load_course
from autograder.core.submission import stub_functions
from autograder.pytest_plugin import compile_time
from autograder.student import reset, status

MODULE = "at_updates"

WRONG_CLAMP = """def clamp_at(x, indices, lo, hi):
    return jnp.clip(x, lo, hi)
"""


@pytest.fixture
def course_copy(tmp_path) -> Path:
    """A student's checkout of the whole course (course.toml, exercises/), without solutions/ beyond at_updates."""
    copy = tmp_path / "course"
    shutil.copytree(ROOT / "exercises", copy / "exercises", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "solutions").mkdir()
    shutil.copy(ROOT / "solutions" / f"{MODULE}.py", copy / "solutions" / f"{MODULE}.py")
    shutil.copy(ROOT / "course.toml", copy / "course.toml")
    return copy


def with_reveal_after(copy: Path, runs: int) -> None:
    path = copy / "course.toml"
    text = path.read_text()
    path.write_text(re.sub(r"reveal_after_failed_runs = \d+", f"reveal_after_failed_runs = {runs}", text))


def solution_function(name: str) -> str:
    import ast

    source = (ROOT / "solutions" / f"{MODULE}.py").read_text()
    node = next(n for n in ast.parse(source).body if getattr(n, "name", None) == name)
    return "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno]) + "\n"


def student_file(copy: Path, *, solved: tuple[str, ...] = (), wrong: str = "", extra: str = "") -> Path:
    """The released stub file with some functions replaced by the reference's, one by ``wrong``, plus ``extra``."""
    path = copy / "exercises" / f"{MODULE}.py"
    text = path.read_text()
    for name in solved:
        text = _replace(text, name, solution_function(name))
    if wrong:
        text = _replace(text, re.match(r"def (\w+)", wrong).group(1), wrong)
    path.write_text(text + extra)
    return path


def _replace(text: str, name: str, definition: str) -> str:
    import ast

    node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
    lines = text.splitlines()
    lines[node.lineno - 1 : node.end_lineno] = definition.splitlines()
    return "\n".join(lines) + "\n"


def run_checks(pytester, copy: Path, *args: str):
    return pytester.runpytest_inprocess(str(copy / "exercises" / f"test_{MODULE}.py"), "-p", "no:cacheprovider", *args)


# course.toml: every hint in two steps ----------------------------------------------------------

CODE = re.compile(r"[\w\]\)]\(|\s=\s|\.at\[\w")  # a call, an assignment, an index expression


@pytest.mark.parametrize("fn", load_course(ROOT).functions, ids=lambda fn: fn.qualname)
def test_every_function_has_a_gentle_hint_without_code_and_a_direct_reveal(fn):
    assert fn.reveal.strip(), f"{fn.qualname} has no reveal (the direct hint)"
    assert fn.hint.strip() != fn.reveal.strip()
    assert not CODE.search(fn.hint), (
        f"{fn.qualname}'s gentle hint shows code: {CODE.search(fn.hint).group()!r} in {fn.hint!r}"
    )


@pytest.mark.parametrize("hint", ["x.at[idx].set(v)", "use jnp.where(x < 0, 0, x)", "keys = split"])
def test_the_code_detector_sees_code(hint):
    assert CODE.search(hint)


# hints in steps ------------------------------------------------------------------------------


def test_the_reveal_comes_only_after_separate_failed_runs(pytester, course_copy, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with_reveal_after(course_copy, 2)
    student_file(course_copy, solved=("set_diagonal",), wrong=WRONG_CLAMP)
    fn = load_course(course_copy, verify_files=False).module(MODULE).function("clamp_at")
    reveal_start = fn.reveal[:30]

    first = run_checks(pytester, course_copy, "-k", "clamp_at_matches").stdout.str()
    assert "hint: Clamping is two bounds" in first and reveal_start not in first
    assert "after 2 more failed runs" in first
    second = run_checks(pytester, course_copy, "-k", "clamp_at_matches").stdout.str()
    assert reveal_start not in second and "after 1 more failed run)" in second
    third = run_checks(pytester, course_copy, "-k", "clamp_at_matches").stdout.str()
    assert "reveal (clamp_at failed in 2 runs): " + reveal_start in third

    saved = json.loads((course_copy / ".autograder" / "progress.json").read_text())
    assert saved["functions"]["at_updates.clamp_at"]["failed_runs"] == 3
    assert "at_updates.set_diagonal" not in saved["functions"]  # -k: only what was checked


def test_a_run_that_cannot_import_counts_once_for_the_module_not_for_each_function(pytester, course_copy, monkeypatch):
    """Issue 44, finding 4: a syntax error or a file saved in cp1252 is no failure of replace_negatives's checks,
    so it brings no reveal nearer; the cp1252 file gets one line naming it and its encoding."""
    monkeypatch.delenv("CI", raising=False)
    with_reveal_after(course_copy, 3)
    fn = load_course(course_copy, verify_files=False).module(MODULE).function("replace_negatives")
    wrong = "def replace_negatives(x, value):\n    return x\n"
    path = student_file(course_copy, wrong=wrong)
    good = path.read_text()
    for _ in range(2):
        run_checks(pytester, course_copy, "-k", "replace_negatives")
    path.write_text(good.replace("def replace_negatives(x, value):", "def replace_negatives(x, value)"))
    assert "SyntaxError" in run_checks(pytester, course_copy, "-k", "replace_negatives").stdout.str()
    path.write_bytes(("# caf\u00e9 \u2014 by Ren\u00e9e\n" + good).encode("cp1252"))
    out = run_checks(pytester, course_copy, "-k", "replace_negatives").stdout.str()
    assert f"{MODULE}.py is not UTF-8 text (it looks like Windows-1252 (cp1252)" in out, out
    assert "UnicodeDecodeError" not in out and fn.hint.strip()[:30] not in out and fn.reveal[:30] not in out
    saved = json.loads((course_copy / ".autograder" / "progress.json").read_text())
    assert saved["functions"][fn.qualname]["failed_runs"] == 2, "the two runs that could not import do not count"
    assert saved["functions"][MODULE]["failed_runs"] == 2, "they count once each, for the module"
    path.write_text(good)
    out = run_checks(pytester, course_copy, "-k", "replace_negatives").stdout.str()
    assert fn.reveal[:30] not in out and "after 1 more failed run)" in out, out


def test_grading_neither_reads_nor_writes_the_local_progress(pytester, course_copy, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with_reveal_after(course_copy, 1)
    student_file(course_copy, wrong=WRONG_CLAMP)
    path = course_copy / ".autograder" / "progress.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps({"format": 1, "functions": {"at_updates.clamp_at": {"failed_runs": 9, "revealed": True}}})
    )
    before = path.read_bytes()
    fn = load_course(course_copy, verify_files=False).module(MODULE).function("clamp_at")
    for args in (["--grading"], ["--submission", str(course_copy / "exercises")]):
        text = run_checks(pytester, course_copy, "-k", "clamp_at_matches", *args).stdout.str()
        assert "hint: Clamping is two bounds" in text
        assert fn.reveal[:30] not in text and "autograder hint" not in text
    monkeypatch.setenv("CI", "true")
    assert fn.reveal[:30] not in run_checks(pytester, course_copy, "-k", "clamp_at_matches").stdout.str()
    assert path.read_bytes() == before


def test_hint_command_shows_the_gentle_hint_and_the_reveal_on_request(course_copy, capsys):
    assert cli.main(["hint", "clamp_at", "--course", str(course_copy)]) == 0
    out = capsys.readouterr().out
    fn = load_course(course_copy, verify_files=False).module(MODULE).function("clamp_at")
    assert fn.hint in out and fn.reveal not in out and "--reveal" in out
    assert cli.main(["hint", "at_updates.clamp_at", "--reveal", "--course", str(course_copy)]) == 0
    assert f"reveal: {fn.reveal}" in capsys.readouterr().out
    assert local_progress.load(course_copy).of("at_updates.clamp_at").revealed
    with pytest.raises(SystemExit, match="not a function of this course"):
        cli.main(["hint", "no_such_function", "--course", str(course_copy)])


# status --------------------------------------------------------------------------------------


def test_status_reports_done_started_and_not_started_from_the_last_runs(pytester, course_copy, monkeypatch, capsys):
    monkeypatch.delenv("CI", raising=False)
    student_file(course_copy, solved=("set_diagonal",), wrong=WRONG_CLAMP)
    run_checks(pytester, course_copy, "-k", "set_diagonal or clamp_at")
    course = load_course(course_copy, verify_files=False)
    table = {row.function.name: row for row in status.rows(course, local_progress.load(course_copy))}
    assert table["set_diagonal"].state == status.DONE and table["set_diagonal"].points == 2
    assert table["clamp_at"].state == status.STARTED and "failing" in table["clamp_at"].note
    assert table["scatter_add"].state == status.NOT_YET and table["two_normals"].state == status.NOT_YET
    assert status.next_function(list(table.values())).function.name == "scatter_add"

    capsys.readouterr()
    assert cli.main(["status", "--course", str(course_copy)]) == 0
    out = capsys.readouterr().out
    assert "from your last local runs" in out
    assert re.search(r"✓ set_diagonal +2/2 +done", out)
    assert re.search(r"✗ clamp_at +0/3 +started +failing", out)
    assert re.search(r"· two_normals +0/2 +not started", out)
    assert "total: 2/" in out and "next: at_updates.scatter_add" in out


def test_status_says_a_changed_file_was_not_checked_since(course_copy):
    course = load_course(course_copy, verify_files=False)
    student_file(course_copy, solved=("set_diagonal",))
    table = {row.function.name: row for row in status.rows(course, local_progress.Progress())}
    assert table["set_diagonal"].state == status.STARTED and table["set_diagonal"].note == "not checked yet"


# reset ---------------------------------------------------------------------------------------


def test_reset_one_function_from_the_pristine_copy_keeps_the_others_and_a_backup(course_copy, capsys):
    course = load_course(course_copy, verify_files=False)
    reset.keep_pristine_copies(course)  # what every student command does on a fresh checkout
    path = student_file(course_copy, solved=("set_diagonal", "clamp_at"))
    mine = path.read_text()
    assert cli.main(["reset", "at_updates.clamp_at", "--yes", "--course", str(course_copy)]) == 0
    assert "clamp_at" in stub_functions(path) and "set_diagonal" not in stub_functions(path)
    backups = list((course_copy / ".autograder" / "backups").iterdir())
    assert [b.read_text() for b in backups] == [mine]
    assert "from .autograder/pristine/at_updates.py" in capsys.readouterr().out

    assert cli.main(["reset", "at_updates", "--yes", "--course", str(course_copy)]) == 0
    assert path.read_text() == (ROOT / "exercises" / f"{MODULE}.py").read_text()
    assert len(list((course_copy / ".autograder" / "backups").iterdir())) == 2


def test_reset_without_a_pristine_copy_takes_the_last_released_version_from_git(course_copy):
    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=s", "-c", "user.email=s@x", *args],
            cwd=course_copy,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "release")
    path = student_file(course_copy, solved=("set_diagonal", "scatter_add"))
    git("commit", "-qam", "my work")
    student_file(course_copy, extra="\n# more work\n")
    assert not (course_copy / ".autograder").exists()
    assert cli.main(["reset", "at_updates.scatter_add", "--yes", "--course", str(course_copy)]) == 0
    assert stub_functions(path) == {"scatter_add", "clamp_at", "replace_negatives"}
    assert "# more work" in path.read_text()


def test_reset_asks_first_and_refuses_without_a_terminal(course_copy, monkeypatch):
    path = student_file(course_copy, solved=("set_diagonal",))
    mine = path.read_text()
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    with pytest.raises(SystemExit, match="--yes"):
        cli.main(["reset", "at_updates", "--course", str(course_copy)])
    assert path.read_text() == mine
    with pytest.raises(SystemExit, match="no released version"):
        cli.main(["reset", "at_updates.set_diagonal", "--yes", "--course", str(course_copy)])
    with pytest.raises(SystemExit, match="has no function"):
        cli.main(["reset", "at_updates.nope", "--yes", "--course", str(course_copy)])


# slow compiles -------------------------------------------------------------------------------


def test_a_check_that_waits_for_compilation_says_so_in_one_line(pytester, course_copy, monkeypatch):
    monkeypatch.setattr(compile_time, "SLOW_COMPILE_SECONDS", 0.0)  # every real compile counts as slow
    result = run_checks(pytester, course_copy, "--solutions", "-k", "set_diagonal_works_under_jit")
    result.stdout.re_match_lines([r"slow: test_set_diagonal_works_under_jit: waited \d+\.\d s for JAX to compile .*"])
    monkeypatch.setattr(compile_time, "SLOW_COMPILE_SECONDS", 1e9)
    result = run_checks(pytester, course_copy, "--solutions", "-k", "set_diagonal_works_under_jit")
    assert "slow:" not in result.stdout.str()


def test_status_run_checks_now_with_the_grading_profile_and_counts_no_attempt(course_copy, capsys):
    toml = (course_copy / "course.toml").read_text()
    (course_copy / "course.toml").write_text(toml[: toml.find("[[modules]]", toml.find(f'name = "{MODULE}"'))])
    student_file(course_copy, solved=("set_diagonal",), wrong=WRONG_CLAMP)
    assert cli.main(["status", "--run", "--course", str(course_copy)]) == 0
    out = capsys.readouterr().out
    assert "checked just now: every module's checks, grading profile" in out
    assert re.search(r"✓ set_diagonal +2/2 +done", out) and re.search(r"✗ clamp_at +0/3 +started +failing", out)
    saved = local_progress.load(course_copy)
    assert saved.of("at_updates.clamp_at").status == "failed" and saved.of("at_updates.clamp_at").failed_runs == 0
    assert saved.of("at_updates.clamp_at").profile == "grading"


def test_status_run_checks_the_modules_side_by_side_and_reports_them_in_course_order(monkeypatch):
    """Each module still runs in its own process (run_module); two run at once, and the results come back in
    the order asked, whichever ends first."""
    from autograder.student import runs

    both_running = threading.Barrier(2, timeout=20)
    ended = []

    def module_run(course, module, *, grading=False):
        if module in ("a", "b"):
            both_running.wait()  # broken (and the test fails) unless a and b run at the same time
        time.sleep(0.3 if module == "a" else 0.0)
        ended.append(module)
        return module

    monkeypatch.setattr(runs, "run_module", module_run)
    assert list(runs.run_modules(None, ["a", "b", "c"], grading=True, jobs=2)) == ["a", "b", "c"]
    assert ended.index("b") < ended.index("a")


@pytest.mark.parametrize(
    "paths, module",
    [
        (["/c/exercises/prng.py"], "prng"),
        (["/c/exercises/test_data.py"], "data"),
        (["/c/exercises/notes.py", "/c/exercises/at_updates.py"], "at_updates"),
        (["/c/exercises/helpers.py"], None),
    ],
)
def test_watch_follows_the_module_of_the_saved_file(paths, module):
    from autograder.student.watch import module_of_change

    assert module_of_change(load_course(ROOT), paths) == module
