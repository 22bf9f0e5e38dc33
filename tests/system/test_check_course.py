"""``autograder check-course``: the real course passes; each broken rule is an error that says how to fix it."""

import io
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import ROOT

from autograder.authoring.check import check_course
from autograder.authoring.contract import parse_contract, parse_contract_signatures

TOML = """
format = 1
title = "T"
welcome = "hello"
[[modules]]
name = "m"
topic = "t"
  [[modules.functions]]
  name = "f"
  points = 1
  hint = "h"
  hidden = HIDDEN
  [[modules.functions]]
  name = "g"
  points = 1
  hint = "h"
"""
STUB = '''
def f(x):
    """Double x."""
    # TODO: return twice x
    raise NotImplementedError


def g(x):
    # TODO: everything
    raise NotImplementedError
'''
SOLUTION = "def f(x):\n    return 2 * x\n\n\ndef g(x):\n    return x\n"
CHECKS = """
import pytest


@pytest.mark.correctness
@pytest.mark.parametrize("x", [0, 3, -2])
def test_f_doubles(student, reference, x):
    assert student.f(x) == reference.f(x)


def test_f_is_pure(student):
    student.f(1)


@pytest.mark.correctness
@pytest.mark.parametrize("x", [1, 5])
def test_g_is_identity(student, reference, x):
    assert student.g(x) == reference.g(x)
"""


# A module with functions g and g_x: the check test_g_x_is_pure could judge either.
TWO_FUNCTIONS = {
    "toml": TOML + '  [[modules.functions]]\n  name = "g_x"\n  points = 1\n  hint = "h"\n',
    "stub": STUB + "\n\ndef g_x(x):\n    # TODO: anything\n    raise NotImplementedError\n",
    "solution": SOLUTION + "\n\ndef g_x(x):\n    return x\n",
    "checks": CHECKS + "\n\n@pytest.mark.correctness\ndef test_g_x_is_pure(student):\n    pass\n",
}


def make(
    tmp_path: Path,
    *,
    toml=TOML,
    stub=STUB,
    solution=SOLUTION,
    checks=CHECKS,
    hidden='["test_f_is_pure"]',
    contract=None,
) -> Path:
    root = tmp_path / "course"
    (root / "exercises").mkdir(parents=True)
    (root / "solutions").mkdir()
    (root / "course.toml").write_text(textwrap.dedent(toml).replace("HIDDEN", hidden))
    (root / "exercises" / "m.py").write_text(stub)
    (root / "solutions" / "m.py").write_text(solution)
    (root / "exercises" / "test_m.py").write_text(checks)
    if contract is not None:
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "curriculum.md").write_text(contract)
    return root


def run(root: Path, **kwargs) -> tuple[int, str]:
    out = io.StringIO()
    code = check_course(root, references=kwargs.pop("references", False), out=out, **kwargs)
    return code, out.getvalue()


def test_the_real_course_passes_the_static_rules_quickly():
    started = time.monotonic()
    code, text = run(ROOT)
    assert code == 0, text
    assert time.monotonic() - started < 10
    assert "contract" in text  # the shared curriculum beside the kit was read


def test_a_good_toy_course_passes_and_its_references_pass(tmp_path):
    code, text = run(make(tmp_path), references=True)
    assert code == 0, text
    assert "references" in text


BROKEN = [
    pytest.param(
        {"stub": STUB.replace("    # TODO: return twice x\n", "")}, r"f has no `# TODO` comment", id="stub-without-todo"
    ),
    pytest.param(
        {"stub": STUB.replace("raise NotImplementedError", "return x", 1)},
        r"f is not a stub.*not started",
        id="stub-already-solved",
    ),
    pytest.param(
        {"checks": CHECKS.replace("test_f_doubles", "test_doubles")},
        r"names none of the functions",
        id="check-names-no-function",
    ),
    pytest.param(
        {"checks": CHECKS.replace("@pytest.mark.correctness\n@pytest.mark.parametrize", "@pytest.mark.parametrize", 1)},
        r"m.f has no @pytest.mark.correctness check",
        id="no-correctness-check",
    ),
    pytest.param(TWO_FUNCTIONS, r"could judge g or g_x", id="check-could-name-two-functions"),
    pytest.param(
        {"hidden": '["test_f_is_gone"]'},
        r"hidden names 'test_f_is_gone', which is not a check",
        id="hidden-check-missing",
    ),
    pytest.param(
        {"hidden": '["test_g_is_identity"]'}, r"a check of another function", id="hidden-check-of-another-function"
    ),
    pytest.param(
        {"hidden": '["test_f_doubles", "test_f_is_pure"]'}, r"every check of m.f is hidden", id="all-checks-hidden"
    ),
    pytest.param(
        {"contract": "## 1. `m` — t\n\n| function | meaning |\n|---|---|\n| `f(x)` | double |\n| `h(x)` | other |\n"},
        r"function m.g is not in the contract(.|\n)*does not define h",
        id="contract-names-differ",
    ),
    pytest.param(
        {"contract": "## 1. `other` — t\n\n| function | meaning |\n|---|---|\n| `f(x)` | double |\n"},
        r"module 'm' is not in the contract",
        id="module-not-in-contract",
    ),
]


@pytest.mark.parametrize("broken, pattern", BROKEN)
def test_a_broken_rule_is_an_error_with_a_fix(tmp_path, broken, pattern):
    code, text = run(make(tmp_path, **broken))
    assert code == 1, text
    import re

    assert re.search(pattern, text), text
    for block in text.split("error: ")[1:]:
        assert "\n  fix: " in block, block


# What the checks vary and compare (autograder.authoring.coverage) ------------------------------

NEVER_VARIED = (
    CHECKS.replace('@pytest.mark.parametrize("x", [0, 3, -2])\n', "")
    .replace("def test_f_doubles(student, reference, x):", "def test_f_doubles(student, reference):\n    x = 3")
    .replace("student.f(1)", "student.f(3)")
)
NEVER_COMPARED = CHECKS.replace("assert student.f(x) == reference.f(x)", "float(student.f(x))")
COMPARED_BY_A_HELPER = CHECKS.replace(
    "assert student.f(x) == reference.f(x)",
    "import numpy as np\n    np.testing.assert_allclose(np.float32(student.f(x)), np.float32(reference.f(x)))",
)
LISTED = '\n[[deliberate_gaps]]\nfunction = "m.f"\nitem = "ITEM"\nreason = "the toy doubles only threes"\n'


def test_an_argument_the_checks_never_vary_is_an_error(tmp_path):
    code, text = run(make(tmp_path, checks=NEVER_VARIED), references=True)
    assert code == 1, text
    assert "m.f: argument 'x' is never varied: every call gets the same value (int 3)" in text, text
    assert "fix: add a check that gives x several values" in text and "[[deliberate_gaps]]" in text, text
    assert "m.g" not in text  # g's argument takes 1 and 5


def test_an_output_the_checks_never_compare_is_an_error(tmp_path):
    code, text = run(make(tmp_path, checks=NEVER_COMPARED), references=True)
    assert code == 1, text
    assert "m.f: output return is never compared with the reference's" in text, text


def test_an_output_compared_by_numpy_testing_is_covered(tmp_path):
    code, text = run(make(tmp_path, checks=COMPARED_BY_A_HELPER), references=True, table=True)
    assert code == 0, text
    assert "coverage of arguments and outputs (0 gap(s)" in text, text
    assert "m.f: 4 call(s)\n  x: 4 value(s): int 0, int 3, int -2, int 1\n  return: compared" in text, text


def test_a_gap_listed_in_course_toml_is_not_an_error_and_is_reported(tmp_path):
    code, text = run(make(tmp_path, checks=NEVER_VARIED, toml=TOML + LISTED.replace("ITEM", "x")), references=True)
    assert code == 0, text
    assert "deliberate gap: m.f x: the toy doubles only threes" in text, text


def test_a_listed_gap_the_checks_cover_is_a_note_to_remove_it(tmp_path):
    code, text = run(make(tmp_path, toml=TOML + LISTED.replace("ITEM", "x")), references=True)
    assert code == 0, text
    assert "lists m.f x as a deliberate gap, but the checks cover it now: remove it" in text, text


def test_plain_comparisons_in_a_check_file_are_found():
    from autograder.authoring.coverage_read import compared_in_source

    source = textwrap.dedent("""
        def test_a(student):
            assert student.save(1) is None
        def test_b(student, reference):
            new, loss = student.step(1)
            other = student.make(2)
            assert loss == reference.step(1)[1]
            student.ignored(3)
    """)
    assert compared_in_source(source) == {("save", "return"), ("step", "return[1]")}


def test_objects_a_check_uses_are_found():
    from autograder.authoring.coverage_read import used_in_source

    source = textwrap.dedent("""
        def test_a(student):
            manager = student.make_manager(1)
            assert manager.all_steps() == []
        def test_b(student):
            loader = student.make_loader(1)
            check(loader)
        def test_c(student):
            other = student.make_other(1)
            other.close()
    """)
    assert used_in_source(source) == {("make_manager", "return"), ("make_loader", "return")}


def test_a_recorded_jit_function_still_is_one():
    import jax

    from autograder.authoring.coverage import Recorder
    from autograder.checks.tracing import is_jitted

    recorder = Recorder(Path("unused"))
    recorder.functions["m.f"] = {"calls": 0, "args": {}, "kinds": {}, "outputs": {}}
    recorder.item = "a check"
    jitted = jax.jit(lambda x: x * 2)
    recorded = recorder.recording("m.f", jitted)
    assert is_jitted(recorded) and recorded.lower(1.0) is not None
    assert recorded.__wrapped__.__code__ is jitted.__wrapped__.__code__  # vmapped.record_calls unwraps one level
    assert float(recorded(3.0)) == 6.0 and float(recorded(x=4.0)) == 8.0
    assert recorder.functions["m.f"]["calls"] == 2 and len(recorder.functions["m.f"]["args"]["x"]) == 2


def test_failing_references_are_an_error(tmp_path):
    root = make(tmp_path)
    (root / "solutions" / "m.py").write_text(SOLUTION.replace("return 2 * x", "raise ValueError('broken')"))
    code, text = run(root, references=True)
    assert code == 1 and "the references do not pass every check" in text and "fix:" in text, text


def test_an_ambiguous_check_stops_pytest_at_collection_with_the_fix(tmp_path):
    root = make(tmp_path, **TWO_FUNCTIONS)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "exercises", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr  # usage error
    assert "could judge g or g_x; fix:" in proc.stdout + proc.stderr


def test_the_command_exits_non_zero_on_an_error(tmp_path):
    root = make(tmp_path, hidden='["test_f_is_gone"]')
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "check-course", "--skip-references", "--course", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1 and "fix:" in proc.stdout, proc.stdout + proc.stderr


def test_the_contract_tables_are_parsed():
    text = "## 1. `a` — x\n\n| function | meaning |\n|---|---|\n| `f(x)` **jit** | y |\n| `K` | z |\n\n## Notes\n| `h(x)` | no |\n"
    assert parse_contract(text) == {"a": ["f", "K"]}


def test_the_contract_signatures_are_parsed():
    text = (
        "## 1. `a` — x\n\n| function | meaning |\n|---|---|\n"
        "| `f(x, n=2)` **jit** | returns `(y, g(x, 1))` |\n| `K` | z |\n| `h(*, k)` | Returns the sum |\n"
    )
    assert parse_contract_signatures(text) == {"a": {"f": (["x", "n"], ["y", "g(x, 1)"]), "h": (["k"], [])}}
