"""What ``check-course`` reports: a :class:`Problem` (where, what, and how to fix it), and :func:`relative`, the
way a problem names a course's file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.core.course import Course


@dataclass(frozen=True)
class Problem:
    where: str
    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}\n  fix: {self.fix}"


def relative(course: Course, path: Path) -> str:
    """``path`` as a problem names it: relative to the course folder when it is inside it."""
    try:
        return str(path.relative_to(course.root))
    except ValueError:
        return str(path)
