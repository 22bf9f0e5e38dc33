"""``autograder mutate``'s runner on a tiny course: each mutant is graded by the module's checks in a pytest run of
its own (the operators are in ``tests/unit/authoring/test_mutate.py``; the real run is ``benchmarks/mutation.py``,
minutes per module, not part of the suite)."""

import io
import json
import textwrap
from pathlib import Path

from autograder.authoring.mutate import KILLED, SURVIVED, Listed, main_mutate, mutate_course, report
from autograder.core.course import load_course

TOML = """
format = 1
title = "T"
welcome = "hello"
[[modules]]
name = "m"
topic = "t"
  [[modules.functions]]
  name = "sign"
  points = 1
  hint = "h"
"""
STUB = 'def sign(x, y=1):\n    """Sign."""\n    # TODO: it\n    raise NotImplementedError\n'
SOLUTION = "def sign(x, y=1):\n    return x if y > 0 else -x\n"
GTE = "m.sign | core/ReplaceComparisonOperator_Gt_GtE | y > 0 -> y >= 0 | 1"
NEGATE = "m.sign | core/ReplaceUnaryOperator_Delete_USub | -x -> x | 1"
CHECKS = """
import pytest


@pytest.mark.correctness
@pytest.mark.parametrize("x", [2, -3])
def test_sign_matches_reference(student, reference, x):
    assert student.sign(x) == reference.sign(x)
"""


def tiny_course(tmp_path: Path) -> Path:
    root = tmp_path / "course"
    (root / "exercises").mkdir(parents=True)
    (root / "solutions").mkdir()
    (root / "course.toml").write_text(TOML)
    (root / "exercises" / "m.py").write_text(STUB)
    (root / "solutions" / "m.py").write_text(SOLUTION)
    (root / "exercises" / "test_m.py").write_text(textwrap.dedent(CHECKS))
    return root


def test_the_runner_kills_what_the_checks_see_and_reports_survivors(tmp_path):
    root = tiny_course(tmp_path)
    course = load_course(root)
    (run,) = mutate_course(course, jobs=1)
    assert not run.problem, run.problem
    outcomes = {r.mutant.id: r.outcome for r in run.results}
    assert len(outcomes) == 14  # cosmic-ray's operators: 5 comparisons, 4 numbers, 4 unary, 1 added not
    # y is always 1: y > 0 and y >= 0 agree there, the checks never vary y
    assert outcomes[GTE] == SURVIVED
    assert outcomes["m.sign | core/NumberReplacer | 0 -> 1 | 1"] == KILLED  # 1 > 1 is False: -x
    assert outcomes[NEGATE] == SURVIVED  # the else branch never runs
    assert outcomes["m.sign | core/NumberReplacer | 1 -> 2 | 1"] == SURVIVED  # the default is never passed
    assert outcomes["m.sign | core/AddNot | y > 0 -> not y > 0 | 1"] == KILLED
    killed = [r for r in run.results if r.outcome == KILLED]
    assert killed and all(
        r.check == "test_sign_matches_reference[2]" or r.check.startswith("test_sign") for r in killed
    )
    listed = Listed({NEGATE: "never reached"}, {GTE: "vary y"})
    text = report([run], listed, seconds=1.0, jobs=1)
    assert "| m | 14 | 6 | 0 | 7 | 1 | 46% |" in text, text
    assert f"`{GTE}` (line 2): killable: vary y" in text
    assert "`m.sign | core/NumberReplacer | 1 -> 2 | 1` (line 1): NOT CLASSIFIED" in text
    assert f"- `{NEGATE}`: never reached" in text
    assert "None: every mutant" not in text


def test_the_command_fails_on_an_unclassified_survivor_and_passes_when_all_are_listed(tmp_path):
    root = tiny_course(tmp_path)
    listed = tmp_path / "equivalent.toml"
    out = io.StringIO()
    assert main_mutate(root, None, jobs=1, listed_path=listed, report_path=None, out=out) == 1
    survivors = [line.split("`")[1] for line in out.getvalue().splitlines() if "NOT CLASSIFIED" in line]
    assert len(survivors) == 8, out.getvalue()
    listed.write_text("".join(f'[[equivalent]]\nid = "{s}"\nreason = "toy"\n' for s in survivors))
    report_path = tmp_path / "report.md"
    assert main_mutate(root, None, jobs=1, listed_path=listed, report_path=report_path, out=io.StringIO()) == 0
    text = report_path.read_text()
    assert "| m | 14 | 6 | 0 | 0 | 8 | 100% |" in text
    assert "## Surviving mutants\n\nNone: every mutant not listed as equivalent was killed.\n" in text, text


def test_a_saved_run_is_reported_again_with_the_list_as_it_is_now(tmp_path):
    from autograder.authoring.mutants import Mutant
    from autograder.authoring.mutate import ModuleRun, Result, runs_from_json, runs_to_json

    mutant = Mutant("m", "f", "arith", "a + b", "a - b", 1, 3, "source")
    runs = [ModuleRun("m", [Result(mutant, SURVIVED, 1.5, "")], 9.0, 2.0)]
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(runs_to_json(runs, 10.0, 2)))
    assert runs_from_json(json.loads(saved.read_text()))[0].results[0].mutant.id == mutant.id
    listed = tmp_path / "equivalent.toml"
    listed.write_text(f'[[equivalent]]\nid = "{mutant.id}"\nreason = "toy"\n')
    out = io.StringIO()
    assert (
        main_mutate(tiny_course(tmp_path), None, jobs=2, listed_path=listed, report_path=None, out=out, from_json=saved)
        == 0
    )
    assert "| m | 1 | 0 | 0 | 0 | 1 | - | 9 |" in out.getvalue() and "Whole run: 10 s" in out.getvalue(), out.getvalue()
