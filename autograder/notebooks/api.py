"""``autograder nbgrader``: what the command does, for :mod:`autograder.cli` (which only parses)."""

from __future__ import annotations

import sys
from pathlib import Path

from autograder.core.course import CourseError
from autograder.notebooks.builder import build_course
from autograder.notebooks.environment import COURSE_COPY, KERNELS, KIT_DIR, VENV
from autograder.notebooks.runtime import course_root


def build(course_dir: Path | str, kit: Path | str | None = None, modules: list[str] | None = None) -> int:
    """Build or update the nbgrader course in ``course_dir`` from the kit; prints what was written and
    what to run next. The exit status: 0, or 2 when the course is inconsistent."""
    try:
        written = build_course(course_root(kit), course_dir, modules)
    except (CourseError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    course_dir = Path(course_dir).resolve()
    print(f"nbgrader course in {course_dir}:")
    print("  nbgrader_config.py")
    for path in written:
        print(f"  {path.relative_to(course_dir)}")
    print(
        f"  {COURSE_COPY}/ (the course files the check cells read), {KIT_DIR}/ (the kit's wheel), requirements.txt, "
        f"setup.sh, {KERNELS}/ (the kernel: {VENV}/bin/python)"
    )
    first = written[0].parent.name if written else "<module>"
    print(
        f"next: cd {course_dir} && bash setup.sh   # builds {VENV} and proves it (once)\n"
        f"      {VENV}/bin/nbgrader generate_assignment {first}"
    )
    return 0
