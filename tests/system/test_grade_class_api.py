"""``autograder.grading.grade_class``: the one library entry every caller grades a class with. It returns
what it found (results, the run's fingerprint, the isolation in force, who was kept), says what a person
should be told through ``on_notice`` and never prints, exits or installs a signal handler."""

import io
import signal
import threading

from support import ROOT, reference_source

from autograder.core.course import load_course
from autograder.grading import ClassGrades, grade_class, preflight
from autograder.grading.api import IsolationInForce, Resuming
from autograder.grading.options import Options

MODULE = "at_updates"


def test_grade_class_returns_results_and_says_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(
        "AUTOGRADER_PREFLIGHT_CACHE", str(tmp_path / "preflight")
    )  # the second run reuses the first's pass
    course = load_course(ROOT)
    for name, source in (("ada", reference_source(MODULE)), ("bob", None)):
        (tmp_path / "class" / name).mkdir(parents=True)
        if source:
            (tmp_path / "class" / name / f"{MODULE}.py").write_text(source)
    students = [(n, tmp_path / "class" / n) for n in ("ada", "bob")]
    options = Options((MODULE,), 60, course.grading.memory_limit_mb, 2)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    notices = []
    grades = grade_class(course, students, options, out=tmp_path / "out", on_notice=notices.append)
    assert isinstance(grades, ClassGrades) and grades.failure is None and not grades.interrupted
    assert [r.student for r in grades.results] == ["ada", "bob"] and grades.total == 2 and grades.kept == []
    ada, bob = grades.results
    assert sum(s.points for s in ada.scores) == sum(s.max_points for s in ada.scores) > 0
    assert sum(s.points for s in bob.scores) == 0
    assert set(grades.fingerprint) >= {"kit", "course", "options"} and grades.isolation
    assert notices == [IsolationInForce(grades.isolation, False)]
    assert (tmp_path / "out" / "ada" / "results.json").is_file()  # written as soon as ada was graded
    assert capsys.readouterr() == ("", "")
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers

    # resumed: nobody changed, so both are kept and nothing is graded again
    stop = threading.Event()
    log = io.StringIO()
    again = grade_class(
        course,
        students,
        options,
        out=tmp_path / "out",
        resume=True,
        stop=stop,
        on_notice=notices.append,
        log=log,
    )
    assert preflight.REUSED in log.getvalue()  # the pre-flight line goes where the caller said
    assert again.kept == ["ada", "bob"] and again.graded == [] and again.fingerprint == grades.fingerprint
    assert [r.scores for r in again.results] == [r.scores for r in grades.results]
    assert isinstance(notices[-1], Resuming) and notices[-1].kept == 2
    assert capsys.readouterr() == ("", "")
