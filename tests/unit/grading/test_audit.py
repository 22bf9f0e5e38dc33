"""The grading process's audit hook (``autograder/grading/untrusted/audit.py``, issue 42): what the student's own
code does that reaches into the process is reported with its line; the same done by a library, or a change to the
student's own classes, is not. The hook cannot be removed: it is installed once here, for a file of this test's."""

import gc
import sys

from autograder.core.screen import COURSE_IMPORTS
from autograder.core.submission import load_module
from autograder.grading.untrusted import audit

STUDENT = """\
import gc
import sys


class Own:
    count = 0


def own():
    return 1


def run():
    Own.count = 1  # its own class and function: not reported
    own.__code__ = own.__code__
    objects = gc.get_objects()  # heap
    frame = sys._getframe()  # frames
    colorsys = __import__("colorsys")  # outside
    colorsys.hls_to_rgb.__code__ = colorsys.hls_to_rgb.__code__  # code
    return len(objects) > 0 and frame is not None
"""


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(STUDENT.splitlines(), 1) if text.endswith(f"# {marker}"))


def test_the_students_own_reach_is_reported_with_its_line_and_nothing_else(tmp_path):
    path = tmp_path / "probe_module.py"
    path.write_text(STUDENT, encoding="utf-8")
    reports: list[tuple[str, int]] = []
    audit.install(str(path), "probe_module", lambda what, line: reports.append((what, line)), COURSE_IMPORTS)
    module = load_module(path, "probe_module")
    gc.get_objects()  # this file's own calls: not the student's
    sys._getframe()
    sys.modules.pop("colorsys", None)
    assert module.run()
    lines = {line: what for what, line in reports}
    assert set(lines) == {line_of(m) for m in ("heap", "frames", "outside", "code")}, reports
    assert "gc.get_objects" in lines[line_of("heap")] and "sys._getframe" in lines[line_of("frames")]
    assert "colorsys" in lines[line_of("outside")] and "code" in lines[line_of("code")]
    module.run()  # once per kind and line
    assert len(reports) == 4


def test_opening_a_process_insides_through_a_library_is_reported_with_the_students_line(tmp_path):
    """Issue 41, door 4: ``/proc/self/fd/N`` and ``/proc/self/mem`` (where handed checks could be read) opened by the
    student's code, even through ``pathlib``, are reported; the same path opened by this file is not."""
    path = tmp_path / "probe_proc.py"
    path.write_text(
        "import pathlib\n\n\ndef run():\n    with pathlib.Path('/proc/self/mem').open('rb'):\n        return 1\n",
        encoding="utf-8",
    )
    reports: list[tuple[str, int]] = []
    audit.install(str(path), "probe_proc", lambda what, line: reports.append((what, line)), COURSE_IMPORTS)
    module = load_module(path, "probe_proc")
    with open("/proc/self/mem", "rb"):
        pass
    assert reports == []
    assert module.run() == 1
    assert reports == [("reads a process's memory or file descriptors (/proc)", 5)], reports
