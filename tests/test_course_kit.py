"""The whole course, module by module: every stub is "not started", every reference passes in grading mode.

The per-module galleries (tests/test_module_<module>.py) rely on these two and do not repeat them.
"""

import pytest

from autograder.core.course import load_course
from support import EXERCISES, ROOT, SOLUTIONS, grade_folder

COURSE = load_course(ROOT)
MODULES = [m.name for m in COURSE.modules]


@pytest.mark.parametrize("module", MODULES)
def test_every_stub_is_reported_not_started(pytester, module):
    results = grade_folder(pytester, module, EXERCISES)
    assert set(results) == {fn.name for fn in COURSE.module(module).functions}
    for name, result in results.items():
        assert result.status == "not started", (name, result.message)
        assert result.points == 0
        assert all("is not started yet" in m for m in result.messages), result.messages


@pytest.mark.parametrize("module", MODULES)
def test_every_solution_passes_every_check_in_the_grading_profile(pytester, module):
    results = grade_folder(pytester, module, SOLUTIONS)
    assert set(results) == {fn.name for fn in COURSE.module(module).functions}
    for name, result in results.items():
        assert result.status == "passed", (name, result.message)
        assert result.points == result.max_points
