"""The whole course, module by module: every stub is "not started", every reference passes in grading mode.

The rules themselves (stubs, names, markers, hidden checks, references) live in
`autograder check-course`; these tests run it on the real course, and run the
plugin on every stub to see what a student sees. The per-module galleries
(tests/galleries/test_module_<module>.py) rely on these and do not repeat them.
"""

import io

import pytest
from support import EXERCISES, ROOT, grade_folder

from autograder.authoring.check import check_course
from autograder.core.course import load_course
from autograder.core.status import Status

COURSE = load_course(ROOT)
MODULES = [m.name for m in COURSE.modules]


@pytest.mark.parametrize("module", MODULES)
def test_every_stub_is_reported_not_started(pytester, module):
    results = grade_folder(pytester, module, EXERCISES)
    assert set(results) == {fn.name for fn in COURSE.module(module).functions}
    for name, result in results.items():
        assert result.status == Status.NOT_STARTED, (name, result.message)
        assert result.points == 0
        assert all("is not started yet" in m for m in result.messages), result.messages


@pytest.mark.parametrize("module", MODULES)
def test_check_course_passes_including_the_references_in_the_grading_profile(module):
    out = io.StringIO()
    assert check_course(ROOT, [module], references=True, out=out) == 0, out.getvalue()
    assert "references" in out.getvalue() and "not run" not in out.getvalue()
