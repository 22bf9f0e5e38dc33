"""The desk's work around a grade run: before it, the late policy and each student's submission time read and the
roster checked against the class (so a missing id stops the run before anything is graded); after it, each
student's lateness judged and the LMS import files made from the final scores.

Errors are :class:`~autograder.grading.desk.late.LateError` and :class:`~autograder.grading.desk.lms.ExportError`;
:mod:`autograder.grading.command` says them.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import StudentResult
from autograder.grading.desk import late as late_work
from autograder.grading.desk import lms
from autograder.grading.desk.record import Desk
from autograder.grading.outputs import class_report


def submission_times(
    course_root: Path, desk: Desk, students: list[tuple[str, Path]], modules: tuple[str, ...]
) -> tuple[late_work.Policy, dict[str, datetime], list[str]]:
    """The late policy (``[late]`` of course.toml, overridden by the desk's), each student's submission time and
    the students whose time could not be read. A due date without ``--submitted-at`` is refused."""
    policy = late_work.policy(course_root, desk.due, desk.late_penalty, desk.late_cutoff)
    if policy.active and not desk.submitted_at:
        raise late_work.LateError(
            f"a due date needs the submission times: add --submitted-at SOURCE ({', '.join(late_work.SOURCES)})"
        )
    times, no_time = late_work.submission_times(desk.submitted_at, students, modules) if desk.submitted_at else ({}, [])
    return policy, times, no_time


def keep_recorded_times(
    desk: Desk, record: dict, names: list[str], times: dict[str, datetime], no_time: list[str]
) -> list[str]:
    """``--student``: the others keep the times their recorded grades were judged with (into ``times``); returns
    the students still without a time."""
    if desk.students and record.get("times"):
        for name, text in record["times"].items():
            if name not in desk.students and name in names:
                times[name] = late_work.parse_time(text, "the run's record")
        no_time = [name for name in no_time if name not in times]
    return no_time


def judge_class(
    policy: late_work.Policy, desk: Desk, names: list[str], times: dict[str, datetime]
) -> dict[str, late_work.Lateness] | None:
    """Each student's lateness, when the desk reads submission times (else None: no late columns)."""
    return {name: late_work.judge(policy, times.get(name)) for name in names} if desk.submitted_at else None


def checked_roster(desk: Desk, names: list[str]) -> dict[str, dict[str, str]] | None:
    """The roster, when an LMS file is asked for, with every id its formats need for ``names``."""
    if not (desk.canvas or desk.moodle):
        return None
    if desk.roster is None:
        raise lms.ExportError("--canvas and --moodle need --roster FILE (student folder -> LMS ids)")
    roster = lms.read_roster(desk.roster)
    if desk.canvas:
        lms.check_canvas(roster, names)
    if desk.moodle:
        lms.moodle_identifier(roster, names)
    return roster


def lms_files(
    desk: Desk,
    roster: dict[str, dict[str, str]],
    course: Course,
    modules: tuple[str, ...],
    results: list[StudentResult],
    late: dict[str, late_work.Lateness] | None,
    total: float,
) -> dict[str, str]:
    """The LMS import files (name -> text) of the final scores, after the late policy."""
    exports = {}
    columns = class_report.function_columns(course, modules)
    finals = {
        r.student: (late[r.student].final if late else float)(class_report.student_total(r, columns)) for r in results
    }
    # a roster entry with no folder submitted nothing: 0 in the imports (a blank cell changes nothing there)
    absent = lms.unmatched(roster, [r.student for r in results])
    if desk.canvas:
        ids = [s for s in absent if roster[s].get("canvas_id") or roster[s].get("sis_user_id")]
        exports["canvas_import.csv"] = lms.canvas_csv(
            roster, {**finals, **dict.fromkeys(ids, 0.0)}, total, desk.canvas, desk.canvas_assignment_id
        )
    if desk.moodle:
        key, _ = lms.moodle_identifier(roster, list(finals))
        ids = [s for s in absent if roster[s].get(key)]
        exports["moodle_import.csv"] = lms.moodle_csv(roster, {**finals, **dict.fromkeys(ids, 0.0)}, desk.moodle)
    return exports
