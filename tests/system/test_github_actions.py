"""The release's ``.github/workflows/grade.yml``, run without GitHub.

The workflow's ``run:`` steps are executed in order, as the runner would (``bash -e``,
``GITHUB_STEP_SUMMARY`` and ``GITHUB_OUTPUT`` files, ``if:`` conditions), in a fresh
copy of a student tree; the ``uses:`` steps are what they stand for here: the
checkout is the copy, the cached environment is the ``.venv`` that the release's
own ``scripts/setup.sh`` built once for the run of the suite (conftest.py's
``release_env``: a fresh venv from the system's Python 3.11, nothing of the kit's
venv; restored as a cache hit), and the artifact is ``results.json`` where the
upload step looks for it. The steps run with nothing of the kit's venv on their
path (tests/platform_envs.py).

The tree is a real student release (the session's ``release`` fixture,
conftest.py, with its workflow and recorded oracle and no ``solutions/``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from platform_envs import MODULE, WRONG_FUNCTION, canonical_sources, clean_env
from support import ROOT

from autograder.core.course import load_course
from autograder.platforms import github_actions


@pytest.fixture(scope="module")
def course(release):
    return load_course(release)


NOTICE = re.compile(r"^::notice title=Autograding report::(\{.*\})$", re.M)


def student_tree(release: Path, dest: Path, solved: list[str], release_env: Path) -> Path:
    """A student's clone of the release, with the modules ``solved`` filled in with the reference, and the
    environment the release's setup.sh built (``release_env``) restored as a cache hit."""
    shutil.copytree(release, dest, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    assert (dest / ".github" / "workflows" / "grade.yml").read_text() == github_actions.WORKFLOW
    assert not (dest / "solutions").exists()
    for module in solved:
        shutil.copy(ROOT / "solutions" / f"{module}.py", dest / "exercises" / f"{module}.py")
    os.symlink(release_env / ".venv", dest / ".venv")  # the cache hit: what the release's setup.sh built
    return dest


class Run:
    def __init__(self, tree: Path, cache_hit: bool = True, **env: str):
        self.tree = tree
        self.env = env
        self.summary = tree.parent / "summary.md"
        self.outputs = tree.parent / "outputs.txt"
        self.summary.touch()
        self.outputs.touch()
        self.log = ""
        self.failed_step: str | None = None
        self.artifact: Path | None = None
        self.seconds = 0.0
        self.context = {"steps.cache.outputs.cache-hit != 'true'": not cache_hit, "always()": True}

    def execute(self) -> Run:
        workflow = yaml.safe_load((self.tree / ".github" / "workflows" / "grade.yml").read_text())
        env = clean_env()
        env.update(GITHUB_STEP_SUMMARY=str(self.summary), GITHUB_OUTPUT=str(self.outputs), **self.env)
        started = time.monotonic()
        for step in workflow["jobs"]["grade"]["steps"]:
            condition = step.get("if")
            if condition is not None and not self.context[condition]:
                continue
            if self.failed_step is not None and condition != "always()":
                continue
            if "run" in step:
                proc = subprocess.run(
                    ["bash", "-e", "-c", step["run"]],
                    cwd=self.tree,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=3600,
                )
                self.log += proc.stdout + proc.stderr
                if proc.returncode != 0:
                    self.failed_step = step["name"]
            elif step["uses"].startswith("actions/upload-artifact"):
                path = self.tree / step["with"]["path"]
                self.artifact = path if path.is_file() else None
        self.seconds = time.monotonic() - started
        return self

    @property
    def notice(self) -> dict:
        found = NOTICE.findall(self.log)
        assert len(found) == 1, self.log[-3000:]
        return json.loads(found[0])


def test_the_workflow_passes_grading_explicitly_caches_and_uploads():
    workflow = yaml.safe_load(github_actions.WORKFLOW)
    steps = workflow["jobs"]["grade"]["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "pytest exercises/ --grading --results-json results.json" in runs
    assert any(s.get("uses", "").startswith("actions/cache") and ".venv" in s["with"]["path"] for s in steps)
    assert "hashFiles('pyproject.toml', 'scripts/setup.sh')" in github_actions.WORKFLOW
    assert any(s.get("uses", "").startswith("actions/upload-artifact") and s.get("if") == "always()" for s in steps)
    actionlint = shutil.which("actionlint")
    if actionlint:  # where it can be installed (not from a package registry: see pyproject.toml)
        proc = subprocess.run([actionlint, "-"], input=github_actions.WORKFLOW, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def validate_workflow(path: Path) -> subprocess.CompletedProcess:
    checker = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", str(path)], capture_output=True, text=True
    )


def test_the_workflow_validates_against_the_github_workflow_schema(tmp_path):
    path = tmp_path / "grade.yml"
    path.write_text(github_actions.WORKFLOW)
    done = validate_workflow(path)
    assert done.returncode == 0 and "validation done" in done.stdout, done.stdout + done.stderr
    path.write_text(github_actions.WORKFLOW.replace("runs-on:", "runs_on:"))  # the validator does catch a typo
    assert validate_workflow(path).returncode != 0


def judged(course, unjudged: dict) -> float:
    return course.points - sum(fn.points for fn in course.functions if fn.qualname in unjudged)


# What the release cannot answer: every check of these would skip. Since its checks judge files as data
# (checks.files), the release answers every function; the path stays tested with a result that skips one.
UNJUDGED: set[str] = set()


def test_the_reference_gets_full_marks(release, release_env, course, tmp_path, canonical_grades):
    """Full marks: the release judges every function of the course."""
    run = Run(student_tree(release, tmp_path / "repo", [m.name for m in course.modules], release_env)).execute()
    assert run.failed_step is None, run.log[-3000:]
    results = json.loads(run.artifact.read_text())
    unjudged = github_actions.not_judged(course, results)
    assert set(unjudged) == UNJUDGED, unjudged
    full = judged(course, unjudged)
    assert full == course.points and results["score"] == full
    assert run.notice == {"totalPoints": full, "maxPoints": full}
    assert "Not judged here" not in run.log
    summary = run.summary.read_text()
    assert f": {full:g}/{full:g} points" in summary
    for fn in course.functions:
        status = (
            "passed" if fn.qualname not in unjudged else r"not judged here \(the release cannot answer its checks\)"
        )
        earned = fn.points if fn.qualname not in unjudged else 0
        assert re.search(rf"^\| {fn.qualname} \| {earned:g}/{fn.points:g} \| [^|]+ \| {status} \|$", summary, re.M), (
            fn.qualname
        )
    assert f"points={full:g}\nmax-points={full:g}" in run.outputs.read_text()
    assert re.search(r"^pre-flight passed in [\d.]+ s: the release's untouched stubs got nothing", run.log, re.M), (
        run.log
    )
    assert (ROOT / "solutions" / f"{MODULE}.py").read_text() == canonical_sources()["reference"]
    agrees_with_grade(results, canonical_grades, "reference")
    print(
        f"\nActions-style run (cached set-up, checks and report), reference: {run.seconds:.0f} s; "
        f"the release's setup.sh (the cache miss) took {(release_env.parent / 'seconds').read_text()} s"
    )


def test_a_function_the_release_cannot_answer_is_named_and_not_counted(course, tmp_path, capsys):
    """Every check of a function skipped (the release lists why): a warning, 0 of 0, and the maximum without it."""
    fn = course.functions[-1]
    results = {
        "score": course.points - fn.points,
        "functions": [
            {"module": f.module, "function": f.name, "points": f.points, "passed": 1, "total": 1, "status": "passed"}
            for f in course.functions
            if f is not fn
        ],
        "skipped": {fn.qualname: "not judged: the release cannot record reference.x of a file path"},
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "outputs.txt")}
    assert github_actions.report(course, path, env) == 0
    printed = capsys.readouterr().out
    assert f"::warning title=Not judged here::{fn.qualname}" in printed
    full = course.points - fn.points
    notice = next(line for line in printed.splitlines() if line.startswith("::notice title=Autograding report::"))
    assert json.loads(notice.split("::", 2)[2]) == {"totalPoints": full, "maxPoints": full}
    summary = (tmp_path / "summary.md").read_text()
    assert re.search(
        rf"^\| {fn.qualname} \| 0/{fn.points:g} \| — \| not judged here \(the release cannot answer its checks\) \|$",
        summary,
        re.M,
    ), summary
    assert f"points={full:g}\nmax-points={full:g}" in (tmp_path / "outputs.txt").read_text()


def test_the_stubs_get_zero_all_not_started(release, release_env, course, tmp_path, canonical_grades):
    tree = student_tree(release, tmp_path / "repo", [], release_env)
    assert (tree / "exercises" / f"{MODULE}.py").read_text() == canonical_sources()["stubs"]
    run = Run(tree).execute()
    assert run.failed_step is None, run.log[-3000:]
    agrees_with_grade(json.loads(run.artifact.read_text()), canonical_grades, "stubs")
    unjudged = github_actions.not_judged(course, json.loads(run.artifact.read_text()))
    assert set(unjudged) <= UNJUDGED
    assert run.notice == {"totalPoints": 0, "maxPoints": judged(course, unjudged)}
    summary = run.summary.read_text()
    for fn in course.functions:
        if fn.qualname not in unjudged:
            assert re.search(rf"^\| {fn.qualname} \| 0/{fn.points:g} \| 0/\d+ \| not started \|$", summary, re.M), (
                summary
            )


def test_a_wrong_submission_shows_its_failures_with_hints(release, release_env, course, tmp_path, canonical_grades):
    """tests/platform_envs.py's wrong submission of its module, the other modules untouched."""
    tree = student_tree(release, tmp_path / "repo", [], release_env)
    module = course.module(MODULE)
    broken = module.function(WRONG_FUNCTION)
    (tree / "exercises" / f"{MODULE}.py").write_text(canonical_sources()["wrong"])
    run = Run(tree).execute()
    assert run.failed_step is None, run.log[-3000:]
    expected = sum(fn.points for fn in module.functions if fn is not broken)
    unjudged = github_actions.not_judged(course, json.loads(run.artifact.read_text()))
    assert run.notice == {"totalPoints": expected, "maxPoints": judged(course, unjudged)}
    summary = run.summary.read_text()
    assert re.search(rf"^\| {broken.qualname} \| 0/{broken.points:g} \| \d+/\d+ \| failed \|$", summary, re.M), summary
    assert f"### {broken.qualname}" in summary and f"Hint: {broken.hint}" in summary
    assert json.loads(run.artifact.read_text())["score"] == expected
    agrees_with_grade(json.loads(run.artifact.read_text()), canonical_grades, "wrong")


def agrees_with_grade(results: dict, canonical_grades: dict, name: str) -> None:
    """The workflow's points for tests/platform_envs.py's submission ``name`` of its module are ``autograder
    grade``'s for the same file."""
    got = {f["function"]: f["points"] for f in results["functions"] if f["module"] == MODULE}
    assert got == pytest.approx(canonical_grades[name], abs=0.011), (name, got, canonical_grades[name])


@pytest.mark.parametrize("breakage", ["all checks deleted", "one module's checks deleted", "set-up broken"])
def test_a_broken_run_is_red_and_says_why(release, release_env, course, tmp_path, breakage):
    tree = student_tree(release, tmp_path / "repo", [], release_env)
    cache_hit = True
    if breakage == "all checks deleted":
        for checks in (tree / "exercises").glob("test_*.py"):
            checks.unlink()
        why = f"exercises/test_{course.modules[0].name}.py, which is missing"  # the pre-flight's words
    elif breakage == "one module's checks deleted":
        (tree / "exercises" / f"test_{course.modules[-1].name}.py").unlink()
        why = f"exercises/test_{course.modules[-1].name}.py, which is missing"
    else:
        setup = tree / "scripts" / "setup.sh"
        setup.write_text(setup.read_text().replace("set -euo pipefail", "set -euo pipefail\nno_such_command_in_setup"))
        (tree / ".venv").unlink()
        cache_hit = False  # setup.sh changed: a new cache key
        why = "no_such_command_in_setup"
    run = Run(tree, cache_hit=cache_hit).execute()
    assert run.failed_step is not None, run.log[-3000:]
    assert why in run.log, run.log[-3000:]


def test_the_environment_is_proven_before_the_checks(release, release_env, course, tmp_path):
    """The workflow's pre-flight runs before the checks: a job whose JAX aborts (an XLA flag it does not know)
    is red with the grading environment blamed and XLA's own fatal line, and no score is reported."""
    tree = student_tree(release, tmp_path / "repo", [m.name for m in course.modules], release_env)
    steps = [step.get("name") for step in yaml.safe_load(github_actions.WORKFLOW)["jobs"]["grade"]["steps"]]
    assert steps.index("Prove the environment") == steps.index("Run the checks") - 1, steps
    run = Run(tree, XLA_FLAGS="--xla_no_such_flag_in_any_xla=true").execute()
    assert run.failed_step == "Prove the environment", run.log[-3000:]
    assert "::error title=The grading environment is broken::" in run.log, run.log[-3000:]
    assert "Unknown flag in XLA_FLAGS: --xla_no_such_flag_in_any_xla" in run.log, run.log[-3000:]
    assert not NOTICE.search(run.log) and run.artifact is None, run.log[-3000:]


def test_stubs_that_score_are_a_broken_environment(release, release_env, course, tmp_path):
    """The proof grades the release's untouched stubs (oracle/given/): if they earn anything or stop being
    "not started", the job is red before the student's checks run."""
    tree = student_tree(release, tmp_path / "repo", [], release_env)
    given = tree / "oracle" / "given" / f"{MODULE}.py"
    given.write_text(canonical_sources()["wrong"])  # a stub that is not one: the reference, one function wrong
    run = Run(tree).execute()
    assert run.failed_step == "Prove the environment", run.log[-3000:]
    assert "untouched stubs did not get 0 with every function not started" in run.log, run.log[-3000:]
    assert f"{MODULE}.set_diagonal: passed" in run.log, run.log[-3000:]
