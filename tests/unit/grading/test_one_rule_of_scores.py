"""One scoring rule (``core/outcomes.score_checks``, which Gradescope's parts use too), one points formatter
(``core/outcomes.points_text``) and one atomic write (``runtime/atomic.write_text``)."""

import os
from dataclasses import replace

from support import ROOT

from autograder.core.course import load_course
from autograder.core.outcomes import CheckOutcome, points_text, score_checks, score_functions
from autograder.core.status import Status
from autograder.platforms import gradescope_results
from autograder.runtime import atomic


def _outcomes(fn, statuses, correctness=()):
    return [
        CheckOutcome(
            fn.module,
            fn.name,
            f"test_{fn.name}_{i}",
            status,
            i in correctness,
            "" if status == Status.PASSED else f"m{i}",
        )
        for i, status in enumerate(statuses)
    ]


def test_gradescope_parts_are_scored_by_the_one_rule_and_add_up_to_grades_points():
    course = load_course(ROOT)
    real = course.functions[0]
    for fn in (real, replace(real, points=1.7)):  # the course's, and one worth a fraction that splits unevenly
        _agree(course, fn, real)


def _agree(course, fn, real):
    cases = [
        [Status.PASSED] * 5,
        [Status.PASSED, Status.FAILED, Status.PASSED, Status.PASSED, Status.FAILED],
        [Status.NOT_STARTED] * 5,
        [Status.PASSED, Status.PASSED, Status.NOT_STARTED, Status.FAILED, Status.PASSED],
    ]
    for statuses in cases:
        for correctness in ((), (1,), (0,)):
            checks = _outcomes(fn, statuses, correctness)
            whole = score_checks(fn, checks)
            if fn is real:
                assert score_functions(course, checks) == [whole]
            gate = any(c.correctness and c.status != Status.PASSED for c in checks)
            shown, hidden = checks[:3], checks[3:]
            parts = [gradescope_results._part(fn, part, len(checks), gate) for part in (shown, hidden)]
            assert round(sum(p.points for p in parts), 2) == whole.points, (statuses, correctness)
            assert [p.total for p in parts] == [3, 2]
            if gate:
                assert all(p.points == 0 for p in parts)


def test_points_are_written_one_way():
    assert points_text(1 / 3) == "0.33" and points_text(2.0) == "2" and points_text(1.005) == "1"
    assert points_text(1 / 3, None) == "0.333333" and points_text(1.5, None) == "1.5"
    # the outputs that round (class files, report, feedback, LMS imports, GitHub's summary) and those that do not
    # (pytest's score table, the notebooks' lines) write what they always wrote
    assert f"{round(1 / 3, 2):g}" == points_text(1 / 3) and f"{1 / 3:g}" == points_text(1 / 3, None)


def test_an_atomic_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "grades.csv"
    atomic.write_text(target, "old\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["grades.csv"]

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", broken)
    try:
        atomic.write_text(target, "new\n")
    except OSError:
        pass
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["grades.csv"]


def test_no_module_formats_points_itself():
    """Every f-string of the package that writes points (an expression naming points, a score or a maximum)
    goes through ``points_text``: a ``{...:g}`` of its own would be a second formatter."""
    import ast
    import re

    own = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = "".join(v.value for v in node.format_spec.values if isinstance(v, ast.Constant))
                text = ast.get_source_segment(source, node.value) or ""
                if spec.endswith("g") and (
                    re.search(r"\b(points|max_points|score|maximum)\b", text) or text in ("got", "top")
                ):
                    own.append(f"{path.relative_to(ROOT)}:{node.lineno}: {{{text}:{spec}}}")
    assert own == []
