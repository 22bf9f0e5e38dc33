"""A class graded by the work (issue 43): the long-lived verifier computes the reference's result for a check's
input once and answers every later student's replay from it (``autograder.grading.trusted.shared``).

One small class of ``grade_fixtures.build_class`` (two correct layouts, a memory blow-up in one function, wrong
values, always-equal results) and one right within the tolerance only, graded twice with two workers, with the sharing on and with it switched off
(``AUTOGRADER_CLASS_SHARING=0``): the verifier answered the reference's calls and whole checks (a transcript it
judged before) from the class's only when on, and kept its compiled programs for the next call (beside the
pre-flight's proofs) only when on; a second call with it on gets the verifier's answers to the very same requests
from the first (``autograder.grading.preflight.confirmations``), never during its pre-flight; every file a class's
grade writes is byte-identical all three ways."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from grade_fixtures import build_class
from support import ROOT, reference_source

from autograder.core.course import load_course
from autograder.grading import preflight
from autograder.grading.grader import Grader, Options
from autograder.grading.outputs import class_files
from autograder.grading.preflight import REUSE_ENV, TRUSTED_COMPILED
from autograder.grading.trusted.shared import SWITCH

pytestmark = pytest.mark.timeout(1800)

MODULE = "at_updates"
STUDENTS = ("correct", "exercises_layout", "faults_memory", "wrong_values", "hostile_always_equal")


def grade(
    course, students: list[tuple[str, Path]], out: Path, kept: list[dict[str, int]] | None = None
) -> tuple[dict[str, int], Path]:
    """Grade ``students`` into ``out`` (every class file); what the verifiers shared, and the trusted side's
    compilation cache. ``kept``: the pre-flight is proven first, and how many verify requests were answered from the
    answers kept by earlier calls is appended to it, after the pre-flight and after the class."""
    options = Options((MODULE,), 15, 4000, 2)
    grader = Grader(course, options, workers=2)
    try:
        if kept is not None:
            preflight.check(grader, stream=io.StringIO(), force=True)
            kept.append(grader.trusted.kept_answers)
        results = grader.grade_class(students)
        shared = grader.trusted.shared_results
        if kept is not None:
            kept.append(grader.trusted.kept_answers)
    finally:
        grader.close()
    class_files.write_all(out, course, options.modules, results)
    return shared, grader.pool.trusted_cache_dir


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_class_graded_with_and_without_sharing_gets_the_same_bytes(tmp_path: Path, monkeypatch):
    built = tmp_path / "built"
    build_class(built, MODULE, out=tmp_path / "unused", course=ROOT)
    for student in STUDENTS:
        shutil.copytree(built / student, tmp_path / "class" / student)
    # right within the tolerance, not bit for bit: its transcript differs, so its checks are replayed, and the
    # reference's results for their inputs are those computed for the students before it
    first = load_course(ROOT).module(MODULE).functions[0].name
    rounding = tmp_path / "class" / "rounding"
    rounding.mkdir()
    (rounding / f"{MODULE}.py").write_text(
        reference_source(MODULE)
        + f"\n\n_{first} = {first}\n\n\ndef {first}(*args, **kwargs):\n    return _{first}(*args, **kwargs) * (1 + 2**-20)\n"
    )
    students = [(s, tmp_path / "class" / s) for s in (*STUDENTS, "rounding")]
    course = load_course(ROOT)
    monkeypatch.setenv(REUSE_ENV, str(tmp_path / "proofs"))
    monkeypatch.setenv(SWITCH, "1")
    shared, kept = grade(course, students, tmp_path / "on")
    monkeypatch.setenv(SWITCH, "0")
    alone, own = grade(course, students, tmp_path / "off")
    # the trusted side's compiled programs: kept beside the proofs for the next call when on, the run's own when off
    assert kept.parent == tmp_path / "proofs" / TRUSTED_COMPILED and any(kept.iterdir())
    assert own != kept and not own.exists()
    # on: the later students' replays were answered from what the first ones' computed; off: nothing shared
    assert shared["hits"] > 0 and shared["misses"] > 0 and shared["verdicts"] > 0, shared
    assert alone == {"hits": 0, "misses": 0, "verdicts": 0}
    # a second call with the sharing on: the verifier's answers to the very same requests are given again
    # (preflight.confirmations); the pre-flight, which proves that the verifier answers now, never takes one
    monkeypatch.setenv(SWITCH, "1")
    answered: list[dict[str, int]] = []
    grade(course, students, tmp_path / "again", kept=answered)
    after_preflight, after_class = answered[0], answered[1]
    assert after_preflight["given"] == 0 and after_preflight["asked"] >= 1, answered  # the reference's request
    given = after_class["given"] - after_preflight["given"]
    asked = after_class["asked"] - after_preflight["asked"]
    # every student whose every claim was confirmed (the correct ones among them) is answered from the first call;
    # a refused claim (always-equal results) is never kept, so it is asked again
    assert given >= 3 and asked >= 1 and given + asked <= len(students), answered
    on, off, again = files(tmp_path / "on"), files(tmp_path / "off"), files(tmp_path / "again")
    assert set(on) == set(off) == set(again) and {"grades.csv", "correct/results.json"} <= set(on)
    assert [name for name in on if on[name] != off[name] or on[name] != again[name]] == []
    rows = dict(line.split(",", 2)[:2] for line in on["grades.csv"].decode().splitlines()[1:])
    assert (
        rows["correct"] == rows["exercises_layout"] == rows["rounding"] != "0"
    )  # the correct ones earned points (their passes confirmed)
    assert rows["wrong_values"] == "0" and rows["hostile_always_equal"] == "0"
