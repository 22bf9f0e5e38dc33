"""A malformed ``course.toml`` reads as one line in ``pytest exercises/`` and ``check-course`` (issue 44, finding 6).

Starts pytest in a fresh interpreter: the system tier (the unit tier starts none)."""

from support import GOOD, make_course


def test_a_malformed_course_toml_is_one_line_in_pytest_and_check_course(tmp_path):
    """Issue 44, finding 6: no traceback from the plugin, the same words as ``grade`` and ``check-course``."""
    import io
    import os
    import subprocess
    import sys

    from autograder.authoring.check import check_course

    root = make_course(tmp_path, GOOD.replace("points = 1", 'points = "two"'))
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "exercises/", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = (proc.stdout + proc.stderr).strip()
    assert proc.returncode != 0 and "Traceback" not in said, said
    assert "course.toml: function m.f.points must be a number, got 'two'" in said and len(said.splitlines()) <= 3
    out = io.StringIO()
    assert check_course(root, out=out) == 1
    assert "course.toml: function m.f.points must be a number, got 'two'" in out.getvalue()
