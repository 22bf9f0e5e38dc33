"""Issue 42: verdicts witnessed in the student's grading process are out of the student's reach.

One ``grade`` run of ``at_updates`` over a class built on issue 42's three routes, each with a ``replace_negatives``
that is right in value but cannot be jitted (the honest control earns 3/4 of its points: it fails 1 of its 4 checks): a library function replaced at
import (``jax.jit``, by name, through ``__dict__``, through ``importlib``, and other functions the checks call), a
pytest plugin of the submission's own (at import, and at call time taking itself off again once it edited the
report), and claims written straight onto the event channel (at import, at call time, and at call time followed by
an exit). Each hostile student earns no more than the honest control for any function, is listed as "needs review"
in ``grades.csv``, ``report.html``, its ``feedback.html`` and ``results.json``, and where the grading process's own
tripwires or the channel's order caught it, its results say "tampering detected"; the classmates keep their grades
(the reference at full marks, the control at 3/4 for ``replace_negatives``) with nothing flagged.
"""

from __future__ import annotations

import csv
import json

import pytest
from grade_fixtures import replace
from support import reference_source
from test_grade_command import copy_course, run_grade

MODULE = "at_updates"
JIT_BREAKING = "import numpy as _np\ny = _np.array(args[0])\ny[y < 0] = args[1]\nreturn jnp.asarray(y)"

# Appended to the honest control: runs at import.
REPLACES_JIT = {
    "patches_jit": "import jax as _jax\n_jax.jit = lambda f, **k: f\n",
    "patches_jit_by_computed_name": "import jax as _jax\nsetattr(_jax, 'ji' + 't', lambda f, **k: f)\n",
    "patches_jit_through_dict": "import jax as _jax\n_jax.__dict__['jit'] = lambda f, **k: f\n",
    "patches_jit_through_importlib": "import importlib as _il\n_il.import_module('jax').jit = lambda f, **k: f\n",
    "patches_other_library_functions": (
        "import jax as _jax\nimport jax.numpy as _jnp\n_jax.make_jaxpr = lambda f, *a, **k: f\n"
        "_jax.vmap = lambda f, *a, **k: f\n_jnp.array_equal = lambda *a, **k: True\n"
    ),
}

FIND_CONFIG = """
import gc as _gc
import pytest as _pytest


def _plugin_manager():
    for _o in _gc.get_objects():
        if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
            return _o.pluginmanager


class _Passes:
    @_pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        report.outcome, report.longrepr = "passed", None
        if getattr(self, "leave", False) and report.when == "teardown":
            _plugin_manager().unregister(self)
"""
REGISTERS_PLUGIN = FIND_CONFIG + "\n_plugin_manager().register(_Passes())\n"
# At call time, once: a plugin that edits this check's reports and takes itself off after the last one.
PLUGIN_AT_CALL = (
    FIND_CONFIG
    + """
_registered = []


def _register_once():
    if not _registered:
        _registered.append(_Passes())
        _registered[0].leave = True
        _plugin_manager().register(_registered[0])
"""
)

WRITES_CHANNEL = """
import gc as _gc
import json as _json
import os as _os


def _reporter():
    for _o in _gc.get_objects():
        if type(_o).__name__ == "ChildReporter":
            return _o


def _claim(event, **fields):
    _r = _reporter()
    _os.write(_r.fd, (_json.dumps({"event": event, **fields, "nonce": _r.nonce}) + "\\n").encode())


def _all_passed():
    for _cid, _fn in list(_reporter().ids.values()):
        _claim("end", check=_cid, outcome="passed", message="")
"""
# At call time, under jit (where boolean indexing fails): claim the running check passed, and leave at once so the
# reporter's own claim never follows.
CLAIM_AND_EXIT = (
    "if 'Tracer' in type(args[0]).__name__:\n"
    "    _claim('end', check='at_updates::test_replace_negatives_works_under_jit', outcome='passed', message='')\n"
    "    _os._exit(0)\n"
)


def sources() -> dict[str, str]:
    ref = reference_source(MODULE)
    control = replace(ref, {"replace_negatives": JIT_BREAKING})
    found = {"classmate": ref, "honest_control": control}
    for name, code in REPLACES_JIT.items():
        found[name] = control + "\n" + code
    found["registers_plugin_at_import"] = control + REGISTERS_PLUGIN
    found["registers_plugin_at_call"] = (
        replace(ref, {"replace_negatives": "_register_once()\n" + JIT_BREAKING}) + PLUGIN_AT_CALL
    )
    found["writes_channel_at_import"] = control + WRITES_CHANNEL + "\n_all_passed()\n"
    found["writes_channel_at_call"] = (
        replace(ref, {"replace_negatives": "_all_passed()\n" + JIT_BREAKING}) + WRITES_CHANNEL
    )
    found["writes_channel_and_exits"] = (
        replace(ref, {"replace_negatives": CLAIM_AND_EXIT + JIT_BREAKING}) + WRITES_CHANNEL
    )
    return found


# Caught in the grading process itself (a tripwire, the channel's order), not only by the static screen.
TAMPERING_DETECTED = {
    "patches_jit",
    "patches_jit_by_computed_name",
    "patches_jit_through_dict",
    "patches_jit_through_importlib",
    "patches_other_library_functions",
    "registers_plugin_at_import",
    "registers_plugin_at_call",
    "writes_channel_at_import",
    "writes_channel_at_call",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("tamper_evidence")
    course = copy_course(base / "course")
    for student, source in sources().items():
        (base / "class" / student).mkdir(parents=True)
        (base / "class" / student / f"{MODULE}.py").write_text(source, encoding="utf-8")
    out = base / "out"
    run_grade(base / "class", out, course, "--jobs", "2")
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    return out, rows


def functions(row: dict) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if k.startswith(f"{MODULE}.")}


def test_the_classmates_keep_their_grades_with_nothing_flagged(graded):
    out, rows = graded
    assert rows["classmate"]["score"] == rows["classmate"]["max_score"]
    control = functions(rows["honest_control"])
    assert control.pop(f"{MODULE}.replace_negatives") == 2.25  # 3 points, 1 of 4 checks failed
    assert control == {k: v for k, v in functions(rows["classmate"]).items() if k in control}
    for student in ("classmate", "honest_control"):
        assert rows[student]["needs_review"] == ""
        assert "needs review" not in (out / student / "feedback.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("student", sorted(set(sources()) - {"classmate", "honest_control"}))
def test_a_hostile_student_earns_no_more_than_the_control_and_is_flagged(graded, student):
    out, rows = graded
    control, hostile = functions(rows["honest_control"]), functions(rows[student])
    assert all(hostile[fn] <= control[fn] for fn in control), (hostile, control)
    assert hostile[f"{MODULE}.replace_negatives"] < 3.0
    review = rows[student]["needs_review"]
    assert f"{MODULE}.py" in review, review
    assert "needs review" in (out / student / "feedback.html").read_text(encoding="utf-8")
    assert "needs review" in json.loads((out / student / "results.json").read_text(encoding="utf-8"))["output"]
    outputs = " ".join(t["output"] for t in json.loads((out / student / "results.json").read_text())["tests"])
    if student in TAMPERING_DETECTED:
        assert "tampering detected" in outputs, outputs
        assert "tampering detected" in review


def test_the_class_report_tags_who_needs_review(graded):
    out, rows = graded
    page = (out / "report.html").read_text(encoding="utf-8")
    flagged = [s for s, row in rows.items() if row["needs_review"]]
    assert page.count('class="tag review"') == len(flagged) == len(sources()) - 2
