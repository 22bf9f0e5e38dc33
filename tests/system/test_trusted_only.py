"""Modules judged on the trusted side only (issue 11, part 3): their grading processes hold no reference.

- the trusted side decides which modules qualify, from the checks it collected
  (``autograder.grading.trusted.trusted_only``); the rules are tested on their own;
- in ``grade``, the verdicts of those modules' checks agree with the checks run in-process on
  gallery variants (a deterministic subset; ``python scripts/grade_agreement.py`` runs every
  variant), and a wrong function's message is the trusted side's: expected and got, an input;
- a student who looks the reference up in ``sys.modules`` and through ``gc`` (the routes of
  ``tests/system/test_grade_seed.py``'s thieves, tried one after the other) earns nothing in any such module
  (that the references' own files earn full marks in every module under ``grade`` is
  ``tests/system/test_grade_command.py``'s every-module test).
"""

from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import pytest
from support import ROOT, with_function

from autograder.grading.trusted import trusted_only

sys.path.insert(0, str(ROOT / "scripts"))

import grade_agreement  # noqa: E402

pytestmark = pytest.mark.timeout(3600)

# Each module's first correct and first wrong gallery variant.
PER_MODULE = 2
# And variants whose values are right although they fail elsewhere, picked by a line of their source: a
# numpy_collate that empties the dict samples it collates (the stand-in reference is given copies), an
# XORDataset that is not a torch Dataset (recorded by its items all the same).
PICKED = {"data": ("s.pop(k) for s in batch", "class XORDataset:\n")}
# The modules whose fixtures build givens with the reference (tests/system/test_givens.py).
WITH_GIVENS = ("batchnorm", "checkpointing", "dropout_rngs", "training")


@pytest.fixture(scope="module")
def modules():
    """What the trusted side's plan of the whole course says."""
    return grade_agreement.trusted_only_modules()


@pytest.fixture(scope="module")
def grader(modules):
    """A grader of those modules only (the class's students have no file of the others)."""
    from autograder.core.course import load_course
    from autograder.grading.grader import Grader, Options

    grader = Grader(load_course(ROOT), Options(tuple(sorted(modules)), 60, 4000, 2), workers=2)
    assert set(grader.trusted_only_modules) == modules
    assert grader.modules_with_givens == set(WITH_GIVENS)  # only their grading processes get the givens
    yield grader
    grader.close()


@pytest.fixture(scope="module")
def graded(grader, modules, tmp_path_factory):
    """One ``grade`` of a class: a student per gallery variant (one module file each), and a student whose
    every function answers with the reference found in memory, in every module judged on the trusted side
    only but ``at_updates`` (``tests/system/test_grade_seed.py`` attacks that one)."""
    from grade_fixtures import STEAL_FROM_GIVENS, STEAL_FROM_MEMORY, thief_source

    base = tmp_path_factory.mktemp("trusted_only")
    variants = [v for module in sorted(modules) for v in grade_agreement.select(module, PER_MODULE)]
    variants += [
        v
        for module, marks in PICKED.items()
        for v in grade_agreement.select(module, 0)
        if any(m in v.source for m in marks)
    ]
    live = grade_agreement.live_verdicts(variants, base)
    students = grade_agreement.write_class(variants, base / "class")
    attacked = tuple(sorted(modules - {"at_updates"}))
    thief = base / "class" / "steals_from_memory"
    thief.mkdir()
    for module in attacked:
        (thief / f"{module}.py").write_text(thief_source(module, STEAL_FROM_MEMORY), encoding="utf-8")
    students.append((thief.name, thief))
    # A student who looks its inputs up in the givens next to its grading process (the modules that have some).
    givens_thief = base / "class" / "steals_from_givens"
    givens_thief.mkdir()
    for module in WITH_GIVENS:
        (givens_thief / f"{module}.py").write_text(
            thief_source(module, STEAL_FROM_GIVENS.format(module=module)), encoding="utf-8"
        )
    students.append((givens_thief.name, givens_thief))
    # A set_diagonal that answers differently on every other call (right on the first).
    flips = base / "class" / "answers_differently_each_call"
    flips.mkdir()
    reference = (ROOT / "solutions" / "at_updates.py").read_text()
    (flips / "at_updates.py").write_text(
        reference.replace("    return x.at[idx, idx].set(value)\n", FLIPS, 1) + "\n_CALLS = []\n", encoding="utf-8"
    )
    students.append((flips.name, flips))
    # pytrees' fit is judged with the student's own sgd_update, whose calls the verifier replays.
    wrong_step = base / "class" / "wrong_sgd_update"
    wrong_step.mkdir()
    (wrong_step / "pytrees.py").write_text(with_function("pytrees", GRADIENT_ASCENT), encoding="utf-8")
    students.append((wrong_step.name, wrong_step))
    results = {r.student: r for r in grader.grade_class(students)}
    return variants, grade_agreement.agreement(variants, live, results), attacked, results


GRADIENT_ASCENT = """
@jax.jit
def sgd_update(params, learning_rate, x, y):
    return jax.tree.map(lambda p, g: p + learning_rate * g, params, jax.grad(mse)(params, x, y))
"""

FLIPS = """    _CALLS.append(1)
    return x.at[idx, idx].set(value + len(_CALLS) % 2 - 1)
"""


def test_the_modules_that_need_no_reference_next_to_the_students_code_are_judged_on_the_trusted_side(modules):
    # Every module (dropout_rngs, batchnorm, training and checkpointing with givens): no grading process holds
    # a reference.
    assert modules == {
        "at_updates",
        "autodiff",
        "data",
        "jit_static",
        "parallel",
        "prng",
        "pytrees",
        "vmap_linear",
        "dropout_rngs",
        "batchnorm",
        "training",
        "checkpointing",
    }


def test_the_readme_names_the_modules_judged_on_the_trusted_side(modules):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"judged on\s+the trusted side only\**\s*\(([^)]*)\)", readme)
    assert found, "the README's trust section names the modules judged on the trusted side only"
    assert set(re.findall(r"`(\w+)`", found.group(1))) == modules


def test_grade_agrees_with_the_checks_on_gallery_variants(graded):
    variants, counts, _, _ = graded
    assert counts.variants == len(variants) and {v.kind for v in variants} == {"correct", "wrong"}
    assert len(variants) == PER_MODULE * len({v.module for v in variants}) + sum(len(m) for m in PICKED.values())
    assert counts.checks >= 3 * len(variants) and not counts.disagreements, counts.disagreements


def test_a_wrong_function_gets_the_trusted_sides_message(graded):
    """Expected and got, and the input, worked out where the reference is: not "could not confirm"."""
    _, counts, _, _ = graded
    messages = [m for name, found in counts.messages.items() if name.endswith("-wrong") for m in found]
    assert messages, counts.messages
    assert not [m for m in messages if "could not confirm" in m or "could not judge" in m], messages
    assert [m for m in messages if "differs from the reference" in m and "first failing input drawn" in m], messages


def test_answers_that_change_from_call_to_call_are_judged_by_what_the_function_first_returned(graded):
    """The student's process answers the check's stand-in reference with the function's first answer for the
    same input, so it never reports "differs from the reference" for a difference between two of the
    student's own calls: the trusted side judges the recorded answers (and says so), and the purity check
    names the hidden state."""
    *_, results = graded
    outcomes = {o.check: o for o in results["answers_differently_each_call"].outcomes if o.function == "set_diagonal"}
    correctness = outcomes["test_set_diagonal_matches_reference"]
    assert correctness.status == "failed" and "first failing input drawn" in correctness.message, correctness
    assert "expected" in correctness.message and "could not confirm" not in correctness.message
    assert any("module-level" in o.message or "second time" in o.message for o in outcomes.values()), outcomes


def test_the_givens_next_to_the_grading_process_hold_no_answer(graded):
    """The thief finds the givens (its module imports: it opens them) and looks every input up: nothing it
    finds is an answer, so it earns nothing; the trusted side judges what it returns (expected and got)."""
    *_, results = graded
    result = results["steals_from_givens"]
    assert not [s for s in result.scores if s.points], result.scores
    assert not [o for o in result.outcomes if "could not be imported" in o.message], result.outcomes
    judged = {o.module for o in result.outcomes if "first failing input drawn" in o.message}
    assert judged, result.outcomes  # (batchnorm's fail in the grading process: what it returns is no state)


def test_a_function_judged_with_the_students_own_helper_is_replayed_with_its_recorded_answers(graded):
    """fit runs the student's wrong sgd_update n times: right, as in the student's own run (the grading
    process records the helper's answers, the verifier replays them); sgd_update itself earns nothing."""
    *_, results = graded
    scores = {s.function: s for s in results["wrong_sgd_update"].scores}
    assert scores["fit"].points == scores["fit"].max_points > 0, results["wrong_sgd_update"].outcomes
    assert scores["sgd_update"].points == 0


def test_the_reference_in_memory_is_out_of_reach_in_every_such_module(graded):
    _, _, attacked, results = graded
    assert len(attacked) >= 3
    earned = {s.function: s.points for s in results["steals_from_memory"].scores if s.module in attacked and s.points}
    assert not earned, earned
    judged = {o.module for o in results["steals_from_memory"].outcomes if "first failing input drawn" in o.message}
    assert {"prng", "vmap_linear"} <= judged, judged  # judged by the trusted side, not failed for another reason


# -- the rules ---------------------------------------------------------------


def fixture(*argnames):
    return [SimpleNamespace(argnames=argnames)]


def item(fixturenames, definitions=None, module=None, argnames=None):
    """A collected check: ``argnames`` its function's own arguments (by default all of ``fixturenames``)."""
    return SimpleNamespace(
        fixturenames=list(fixturenames),
        _fixtureinfo=SimpleNamespace(
            name2fixturedefs=definitions or {}, argnames=tuple(fixturenames if argnames is None else argnames)
        ),
        module=module,
    )


@pytest.fixture
def check_file(tmp_path):
    def write(source: str):
        path = tmp_path / "test_m.py"
        path.write_text(source, encoding="utf-8")
        return SimpleNamespace(__file__=str(path), __name__="test_m")

    return write


def test_a_correctness_check_that_takes_the_reference_itself_qualifies(check_file):
    plain = check_file("def test_f(student, reference):\n    assert student.f(1) == reference.f(1)\n")
    checks = [
        (item(["student", "reference"], {"student": fixture("request")}, plain), "m", True),
        (item(["student", "inputs"], {"inputs": fixture()}, plain), "m", False),
    ]
    assert trusted_only.modules_judged_on_the_trusted_side(checks) == {"m"}


def test_another_check_that_takes_the_reference_disqualifies_its_module(check_file):
    plain = check_file("")
    checks = [
        (item(["student", "reference"], {}, plain), "m", True),
        (item(["student", "reference"], {}, plain), "m", False),  # e.g. "works under jit" against the reference
        (item(["student", "reference"], {}, plain), "other", True),
    ]
    assert trusted_only.modules_judged_on_the_trusted_side(checks) == {"other"}


def test_a_fixture_built_with_the_reference_is_a_given_its_module_qualifies_and_records(check_file):
    """Any check may use a fixture built with the reference (the trusted side records its calls: givens)."""
    plain = check_file("def start(reference):\n    return oracle.sibling(reference, 'data')\n")
    scenario = {"scenario": fixture("reference", "data"), "data": fixture(), "reference": fixture("request")}
    checks = [
        (
            item(
                ["student", "reference", "scenario", "data"],
                scenario,
                plain,
                argnames=["student", "reference", "scenario"],
            ),
            "m",
            True,
        ),
        (
            item(["student", "reference", "scenario", "data"], scenario, plain, argnames=["student", "scenario"]),
            "m",
            False,
        ),
        (item(["student", "reference"], {"reference": fixture("request")}, plain), "n", True),
    ]
    assert trusted_only.modules_judged_on_the_trusted_side(checks) == {"m", "n"}
    assert trusted_only.modules_with_givens(checks, {"m", "n"}) == {"m"}
    assert trusted_only.modules_with_givens(checks, {"n"}) == set()


def test_another_check_that_takes_the_reference_through_a_fixture_and_itself_disqualifies(check_file):
    plain = check_file("")
    scenario = {"scenario": fixture("reference")}
    checks = [
        (item(["student", "reference", "scenario"], scenario, plain, argnames=["reference", "scenario"]), "m", False)
    ]
    assert trusted_only.modules_judged_on_the_trusted_side(checks) == set()
