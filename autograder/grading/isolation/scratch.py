"""Scratch folders and the instructor's files copied into them.

Runs in the grader's process. :class:`Snapshot` reads the course and the kit into memory once; every grading
process gets a fresh private copy in a folder of its own (:func:`scratch_dir`, named after the grader's
process), and :func:`remove_abandoned_scratch` removes the folders of graders that were killed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.isolation.limits import alive


@dataclass
class Snapshot:
    """The instructor's files, read once: ``{relative path: bytes}`` for the course and the kit."""

    course: dict[str, bytes]
    kit: dict[str, bytes]

    @classmethod
    def take(cls, course_root: Path) -> Snapshot:
        course_root = Path(course_root)
        course: dict[str, bytes] = {"course.toml": (course_root / "course.toml").read_bytes()}
        for pattern in ("conftest.py", "exercises/*.py", "solutions/*.py"):
            for path in sorted(course_root.glob(pattern)):
                course[path.relative_to(course_root).as_posix()] = path.read_bytes()
        course["pytest.ini"] = b"[pytest]\n"
        kit_root = Path(__file__).resolve().parents[2]
        kit = {
            f"autograder/{p.relative_to(kit_root).as_posix()}": p.read_bytes() for p in sorted(kit_root.rglob("*.py"))
        }
        return cls(course, kit)

    def materialize(self, scratch: Path, *, solutions: bool = True) -> tuple[Path, Path]:
        """Write the private copy into ``scratch``; returns (course root, kit folder)."""
        for rel, data in self.course.items():
            if not solutions and rel.startswith("solutions/"):
                continue
            _write(scratch / "course" / rel, data)
        for rel, data in self.kit.items():
            _write(scratch / "kit" / rel, data)
        return scratch / "course", scratch / "kit"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


SCRATCH_PREFIX = "autograder-"


def _pid_namespace() -> int | None:
    """This process's pid namespace (Linux), or None where it cannot be known."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def scratch_dir() -> Path:
    """A new private folder in the temporary folder, named after the process that made it
    (``autograder-<pid>x<pid namespace>-…``, see :func:`remove_abandoned_scratch`)."""
    namespace = _pid_namespace()
    owner = f"{os.getpid()}x{namespace}-" if namespace is not None else ""
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX + owner))


def remove_abandoned_scratch() -> list[Path]:
    """Remove the scratch folders of graders that are gone; returns them.

    A grader killed with SIGKILL (or a machine that lost power) cannot clean up: its folders stay,
    among them copies of the course with the references. The next grader that starts with the
    same temporary folder removes every folder named after a process of its own pid namespace
    that no longer exists (a live one, or one of another namespace, is left alone)."""
    namespace = _pid_namespace()
    if namespace is None:
        return []
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*x*-*"):
        pid, _, rest = path.name[len(SCRATCH_PREFIX) :].partition("x")
        if not pid.isdigit() or rest.split("-", 1)[0] != str(namespace) or alive(int(pid)):
            continue
        try:
            if not path.is_dir() or path.is_symlink() or (path.lstat().st_uid != os.getuid() and os.getuid() != 0):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
