"""The plugin's first and last words on the terminal: the run's header (the course, what is checked, the
profile) and its summary (the score table, slow compilations, changed given code, what ``grade`` would withhold
for review, the local progress, ``--results-json``). Hooks of :mod:`autograder.pytest_plugin.hooks`' plugin."""

from __future__ import annotations

import json

import pytest

from autograder.core import progress as local_progress
from autograder.core.outcomes import results_payload, score_functions
from autograder.core.screen import needs_review
from autograder.core.status import Status
from autograder.pytest_plugin import parallel, report
from autograder.pytest_plugin.compile_time import slow_compile_lines
from autograder.pytest_plugin.session import session_of


def _needs_review(course_session, modules: set[str]) -> list[str]:
    """The static screen's findings (:mod:`autograder.core.screen`) in the files of ``modules`` that were checked:
    the student is warned before submitting, as ``grade`` will list them."""
    found = []
    for module in sorted(modules, key=lambda m: [x.name for x in course_session.course.modules].index(m)):
        try:
            source = course_session.student_file(module).read_bytes()
        except (OSError, ValueError):
            continue
        found += needs_review(module, source)
    return found


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    course_session = session_of(config)
    if course_session is None:
        return None
    course, settings = course_session.course, course_session.settings
    lines = [
        f"course: {course.title} ({len(course.modules)} modules)",
        f"checking: {settings.source} (hypothesis profile: {settings.profile})",
    ]
    if parallel.is_controller(config):
        lines.append("the modules are checked side by side, one process per core (-n 0: in this one process)")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    course_session = session_of(config)
    if course_session is None or parallel.is_worker(config):  # a worker's reports are summed up where they arrive
        return
    course, outcomes = course_session.course, course_session.outcomes_in_course_order()
    scores = score_functions(course, outcomes)
    table = report.score_table(course, scores)
    if table:
        terminalreporter.write_sep("=", "score")
        terminalreporter.write_line(table)
        if all(score.status == Status.NOT_STARTED for score in scores):
            terminalreporter.write_line("")
            terminalreporter.write_line(course.welcome.strip())
    for line in slow_compile_lines(course_session.slow_compiles):
        terminalreporter.write_line(f"slow: {line}")
    for line in course_session.given_notes(list(dict.fromkeys(score.module for score in scores))):
        terminalreporter.write_line(line)
    review = _needs_review(course_session, {o.module for o in outcomes})
    if review:
        terminalreporter.write_sep("=", "needs review")
        for line in review:
            terminalreporter.write_line(f"needs review: {line}")
        terminalreporter.write_line(
            "`autograder grade` withholds the points of the checks decided in your own grading process for a module "
            "that does this, until your instructor has looked at it: an answer to this course never needs it."
        )
    for name, count in sorted(course_session.partly_judged.items()):
        terminalreporter.write_line(
            f"partly judged: {name} passed, but {count} of its generated inputs have no recorded answer in this release"
        )
    if course_session.progress is not None and scores:
        local_progress.record_run(course.root, scores, profile="student", count_failures=True)
    path = course_session.settings.results_json
    if path:
        payload = {
            **results_payload(scores, outcomes),
            "slow_compiles": course_session.slow_compiles,
            "skipped": course_session.skipped,
        }
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
