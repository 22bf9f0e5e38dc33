"""The nbgrader pre-flight's verdicts, read from executed notebooks as nbgrader reads grade cells, and its
once-per-process rule (tests/system/test_nbgrader_course.py runs it for real, in the course's own venv)."""

from __future__ import annotations

import logging

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from traitlets.config import Config

from autograder.notebooks import preflight
from autograder.runtime import stores


def cell(grade_id: str, *outputs, points: float | None = None):
    meta = {"grade_id": grade_id, "grade": points is not None, "solution": False, "locked": True}
    if points is not None:
        meta["points"] = points
    return new_code_cell("...", metadata={"nbgrader": meta}, outputs=list(outputs))


def result(value: float):
    return new_output("execute_result", data={"text/plain": repr(value)}, execution_count=1)


def printed(text: str):
    return new_output("stream", name="stdout", text=text)


def raised(ename: str, evalue: str):
    return new_output(
        "error", ename=ename, evalue=evalue, traceback=["\x1b[0;31mTraceback\x1b[0m", f"{ename}: {evalue}"]
    )


def test_the_reference_must_earn_every_point_and_a_cell_that_raised_is_named():
    nb = new_notebook(
        cells=[
            cell("setup", raised("ModuleNotFoundError", "No module named 'jax'")),
            cell("good_checks", printed("all pass\n"), result(2.0), points=2),
            cell(
                "bad_checks",
                printed("at_updates.bad: 1/3 points\n" + "detail\n" * 20 + "last line\n"),
                result(1.0),
                points=3,
            ),
        ]
    )
    problems = preflight.reference_problems(nb)
    assert len(problems) == 2
    assert "the reference's setup raised" in problems[0] and "ModuleNotFoundError: No module named 'jax'" in problems[0]
    assert "\x1b" not in problems[0]  # no terminal colours in the instructor's message
    assert "the reference got 1/3 in bad_checks" in problems[1]
    assert "at_updates.bad: 1/3 points" in problems[1] and "last line" in problems[1] and "..." in problems[1]
    assert not any("good_checks" in p for p in problems)
    stubs = preflight.stub_problems(nb)  # the same cells, had they been the stubs: both earned points
    assert [p.split(" (")[0] for p in stubs] == [
        "  the stubs got 2/2 in good_checks",
        "  the stubs got 1/3 in bad_checks",
    ]


def test_the_stubs_must_earn_nothing():
    nb = new_notebook(
        cells=[
            cell("zero_checks", printed("not started yet\n"), result(0.0), points=2),
            cell("raised_checks", raised("NotImplementedError", ""), points=2),  # an error: nbgrader gives 0
            cell("silent_checks", points=1),  # no output at all: nbgrader gives full marks, so a problem
            cell("partial_checks", result(0.5), points=1),
        ]
    )
    problems = preflight.stub_problems(nb)
    assert [p.split(" (")[0] for p in problems] == [
        "  the stubs got 1/1 in silent_checks",
        "  the stubs got 0.5/1 in partial_checks",
    ]
    assert preflight.grades(nb)[1][1] == 0.0  # as nbgrader.utils.determine_grade reads an error


def test_the_passed_line():
    verdict = preflight.Verdict("nb.ipynb", 10.0, 8.84)
    assert (
        verdict.line() == "pre-flight passed in 8.8 s: the reference got full marks (10 points) and its stubs nothing"
    )


@pytest.fixture
def fresh_verdicts():
    verdicts = stores.registered()["notebooks.preflight.verdicts"]
    verdicts.clear()
    yield verdicts
    verdicts.clear()


def test_a_failed_preflight_fails_every_later_submission_without_running_again(tmp_path, monkeypatch, fresh_verdicts):
    (tmp_path / "source" / "a1").mkdir(parents=True)
    nbformat.write(new_notebook(), str(tmp_path / "source" / "a1" / "a1.ipynb"))
    runs = []

    def fake_prove(source, config, log):
        runs.append(source)
        return preflight.Verdict(str(source), 10.0, 1.0, ["  the reference got 0/3 in clamp_at_checks:\n    | why"])

    monkeypatch.setattr(preflight, "prove", fake_prove)
    step = preflight.Preflight(config=Config({"CourseDirectory": {"root": str(tmp_path)}}))
    resources = {"nbgrader": {"assignment": "a1", "notebook": "a1", "student": "ann"}}
    messages = []
    for _ in range(3):
        with pytest.raises(preflight.NotebookPreflightFailed) as failed:
            step.preprocess(new_notebook(), resources)
        messages.append(str(failed.value))
    assert len(runs) == 1 and runs[0] == tmp_path / "source" / "." / "a1" / "a1.ipynb"
    assert len(set(messages)) == 1 and "clamp_at_checks" in messages[0] and "no submission is graded" in messages[0]


def test_a_passed_preflight_logs_its_line_once_and_lets_submissions_through(
    tmp_path, monkeypatch, fresh_verdicts, caplog
):
    calls = []
    monkeypatch.setattr(preflight, "prove", lambda s, c, log: calls.append(s) or preflight.Verdict(str(s), 4.0, 2.0))
    step = preflight.Preflight(config=Config({"CourseDirectory": {"root": str(tmp_path)}}))
    log = logging.getLogger("test-preflight")
    step.log = log
    nb = new_notebook()
    with caplog.at_level(logging.INFO, logger="test-preflight"):
        for _ in range(2):
            assert step.preprocess(nb, {"nbgrader": {"assignment": "a1", "notebook": "a1"}})[0] is nb
    assert len(calls) == 1
    passed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("pre-flight passed")]
    assert passed == ["pre-flight passed in 2.0 s: the reference got full marks (4 points) and its stubs nothing"]


def test_each_autograde_run_proves_again(tmp_path, monkeypatch, fresh_verdicts):
    """nbgrader makes one exporter per run and a new preprocessor per notebook, parented to it: the notebooks of
    one run share its verdict; a new run (formgrader's next autograde, in the same server process) proves again."""
    from nbconvert.exporters import NotebookExporter

    calls = []
    monkeypatch.setattr(preflight, "prove", lambda s, c, log: calls.append(s) or preflight.Verdict(str(s), 4.0, 2.0))
    config = Config({"CourseDirectory": {"root": str(tmp_path)}})
    resources = {"nbgrader": {"assignment": "a1", "notebook": "a1"}}
    for _ in range(2):  # two runs
        exporter = NotebookExporter(config=config)
        for _ in range(3):  # three submissions each
            step = preflight.Preflight(parent=exporter)  # what exporter.register_preprocessor(Preflight) makes
            step.preprocess(new_notebook(), resources)
    assert len(calls) == 2
    assert not fresh_verdicts  # nothing kept for the process
