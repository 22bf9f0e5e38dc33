"""The student's local progress: ``.autograder/progress.json`` in their checkout.

It remembers, per function, the last result of a local run and in how many
separate runs the function failed, which decides when the direct hint
(``reveal``) is shown. It is git-ignored, never uploaded and never used for
grading: the plugin reads and writes it only for a student's own run on
``exercises/`` outside the grading profile, and ``autograder grade`` never
touches it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core.course import Course, Function
from autograder.runtime import atomic

FOLDER = ".autograder"
FILE = "progress.json"
FORMAT = 1


def progress_path(root: Path) -> Path:
    return Path(root) / FOLDER / FILE


@dataclass
class FunctionProgress:
    failed_runs: int = 0
    revealed: bool = False
    status: str = ""  # the last local result: passed, failed or not started ("" = never checked)
    points: float = 0.0
    max_points: float = 0.0
    checked_at: float = 0.0  # seconds since the epoch
    profile: str = ""  # which run produced the last result: "student" (pytest, watch) or "grading" (status --run)


@dataclass
class Progress:
    functions: dict[str, FunctionProgress] = field(default_factory=dict)

    def of(self, qualname: str) -> FunctionProgress:
        return self.functions.get(qualname, FunctionProgress())

    def should_reveal(self, course: Course, fn: Function) -> bool:
        """The direct hint is shown once asked for, or after enough separate failed runs."""
        entry = self.of(fn.qualname)
        return bool(fn.reveal) and (entry.revealed or entry.failed_runs >= course.hints.reveal_after_failed_runs)


def load(root: Path) -> Progress:
    """The saved progress; an absent or unreadable file is a fresh start (it only steers hints)."""
    try:
        data = json.loads(progress_path(root).read_text(encoding="utf-8"))
        entries = data["functions"] if data.get("format") == FORMAT else {}
        known = set(FunctionProgress.__dataclass_fields__)
        return Progress(
            {
                name: FunctionProgress(**{k: v for k, v in entry.items() if k in known})
                for name, entry in entries.items()
            }
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Progress()


def save(root: Path, progress: Progress) -> None:
    path = progress_path(root)
    path.parent.mkdir(exist_ok=True)
    payload = {"format": FORMAT, "functions": {name: vars(entry) for name, entry in sorted(progress.functions.items())}}
    atomic.write_text(path, json.dumps(payload, indent=1) + "\n")


def record_run(root: Path, scores: Iterable, *, profile: str, count_failures: bool) -> Progress:
    """Remember the result of one run; a function that failed in it counts one more failed run, unless only
    because its module could not be imported (a syntax error, a file not UTF-8): that counts once, for the module.

    ``scores`` are :class:`autograder.core.outcomes.FunctionScore`.
    """
    from autograder.core.status import Status
    from autograder.core.submission import is_import_failure

    progress = load(root)
    now = time.time()
    unimportable = set()
    for score in scores:
        name = f"{score.module}.{score.function}"
        entry = progress.functions.setdefault(name, FunctionProgress())
        entry.status, entry.points, entry.max_points = score.status, score.points, score.max_points
        entry.checked_at, entry.profile = now, profile
        if count_failures and score.status == Status.FAILED:
            if score.messages and all(is_import_failure(m) for m in score.messages):
                unimportable.add(score.module)  # the module failed, not this function's own checks
            else:
                entry.failed_runs += 1
    for module in unimportable:  # counted once, for the module (no function's reveal moves)
        progress.functions.setdefault(module, FunctionProgress()).failed_runs += 1
    save(root, progress)
    return progress


def mark_revealed(root: Path, qualname: str) -> None:
    progress = load(root)
    progress.functions.setdefault(qualname, FunctionProgress()).revealed = True
    save(root, progress)
