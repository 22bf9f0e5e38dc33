"""Each student's folder read once per run (issue 45): :func:`autograder.grading.api.start_run` reads every
submission into a :class:`~autograder.core.submission.Submission` carrying its digest, and the record
(``--resume``), the executor's tasks and the notes on given code take that value, not the folder again."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import ROOT, SOLUTIONS

from autograder.core import reading
from autograder.core.course import load_course
from autograder.core.outcomes import StudentResult
from autograder.core.submission import Submission
from autograder.grading import api, command
from autograder.grading.executor import LocalThreads
from autograder.grading.options import Options

MODULES = ("at_updates", "prng")


@pytest.fixture
def reads(monkeypatch) -> list[Path]:
    """Every folder read (:func:`autograder.core.reading.read_files`), in order."""
    done: list[Path] = []
    real = reading.read_files

    def counted(folder, modules, **kwargs):
        done.append(Path(folder))
        return real(folder, modules, **kwargs)

    monkeypatch.setattr(reading, "read_files", counted)
    return done


class Tasks:
    """A grader (:class:`~autograder.grading.executor.Tasks`) that runs nothing: it records the submissions its
    tasks were given."""

    def __init__(self, options: Options):
        self.stop = threading.Event()
        self.options = options
        self.plan: list = []
        self.given: dict[str, Submission] = {}

    def tasks(self, name: str, submitted: Submission):
        self.given[name] = submitted
        return [lambda: StudentResult(name, [], [])]

    def failed_result(self, name: str, message: str) -> StudentResult:
        raise AssertionError(message)

    def unconfirmable_functions(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


def class_of(tmp_path: Path) -> list[tuple[str, Path]]:
    students = []
    for name in ("ann", "bob", "cy"):
        folder = tmp_path / "class" / name
        folder.mkdir(parents=True)
        (folder / "at_updates.py").write_bytes((SOLUTIONS / "at_updates.py").read_bytes())
        if name != "cy":
            (folder / "prng.py").write_bytes(b"def two_normals(key):\n    return key\n")
        students.append((name, folder))
    return students


def test_a_run_reads_each_student_once_and_passes_the_submission_down(tmp_path, reads, monkeypatch):
    monkeypatch.setattr(api.bubblewrap, "isolation", lambda: SimpleNamespace(describe=lambda: "test"))
    course = load_course(ROOT)
    students = class_of(tmp_path)
    options = Options(MODULES, 10, 1000, 1)
    run = api.start_run(course, students, options, tmp_path / "out", False, (), None, False, None, lambda _n: None)
    assert sorted(reads) == sorted(folder for _, folder in students)
    assert run.state is not None and run.state.digests == {n: s.digest for n, s in run.submissions.items()}
    grader = Tasks(options)
    results = run.grade(LocalThreads(grader), None)
    assert [r.student for r in results] == ["ann", "bob", "cy"]
    assert grader.given == run.submissions  # the very values read, not the folders again
    command.given_code_notes(course, run.submissions, ["ann", "bob", "cy"])
    assert len(reads) == len(students), "a folder was read again"
    assert run.submissions["cy"].missing == {"prng": "prng.py is missing from your submission"}


def test_an_executor_given_no_submissions_reads_each_folder_once(tmp_path, reads):
    """The pre-flight check grades the course's own folders through the executor (no run read them)."""
    students = class_of(tmp_path)
    grader = Tasks(Options(MODULES, 10, 1000, 1))
    LocalThreads(grader).grade_class(students)
    assert sorted(reads) == sorted(folder for _, folder in students)
    assert grader.given["cy"] == Submission.read(students[2][1], MODULES)


def test_a_submission_carries_the_digest_the_resume_record_has_always_kept():
    """The digest is the one ``run_state.submission_digest`` wrote into ``students/<name>.json`` before issue 45
    (a class graded before it resumes without grading everyone again)."""
    submitted = Submission({"m": b"def f():\n    return 1\n", "a": b""}, {"z": "z.py is missing from your submission"})
    assert submitted.digest == "e88919662caa48510ce9dfb6da39362bd63906238560ef9d15121ad261ceece7"
    assert Submission({}, {}).digest == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    again = pickle.loads(pickle.dumps(submitted))  # the cluster ships it to its workers as it was read
    assert again == submitted and again.digest == submitted.digest
    with pytest.raises(AttributeError):
        submitted.digest = "x"  # type: ignore[misc]  # frozen: what was graded cannot change under the record
