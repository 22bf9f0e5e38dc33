"""Due dates, late policies and submission times.

The policy comes from ``[late]`` in ``course.toml`` and may be overridden on the command line
(``grade --due``, ``--late-penalty``, ``--late-cutoff``)::

    [late]
    due = "2026-03-01T23:59:00+00:00"   # ISO 8601; a time without a zone is UTC
    penalty_per_day = 10                # percent of the score lost per started day late
    cutoff_days = 3                     # later than this: the score is 0 (optional)

A submission's time comes from a source the instructor names (``grade --submitted-at``):

- ``git``: the committer time of ``HEAD`` in the student's folder (a cloned repository), read by
  ``git log`` with the repository's hooks, pager and fsmonitor disabled. The student's machine
  wrote that time: it is as trustworthy as the repository host's record of the push, no more;
- ``gradescope``: ``created_at`` of ``submission_metadata.json`` in the student's folder (Gradescope's
  "Submission Metadata" documentation, gradescope-autograders.readthedocs.io: ``created_at`` is the
  submission time, ISO 8601 with an offset; an autograder finds the file at
  ``/autograder/submission_metadata.json``, copy it into the student's folder);
- ``mtime``: the newest modification time of the course's ``<module>.py`` files in the folder
  (what an upload or a ``cp -p`` preserved);
- ``csv:PATH``: a CSV file with columns ``student`` and ``submitted_at`` (ISO 8601), e.g. exported
  from an LMS or Classroom 50's submissions list.

A student whose time cannot be read gets no ``submitted_at`` and no penalty, and ``grade`` says so.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SOURCES = ("git", "gradescope", "mtime", "csv:PATH")


class LateError(ValueError):
    """A policy or a source that cannot be used (the message says why)."""


@dataclass(frozen=True)
class Policy:
    due: datetime | None = None
    penalty_per_day: float = 0.0  # percent of the score per started day
    cutoff_days: float | None = None

    @property
    def active(self) -> bool:
        return self.due is not None


@dataclass(frozen=True)
class Lateness:
    """One student's submission time and what the policy makes of it."""

    submitted_at: datetime | None
    late_by: timedelta | None  # None: on time or unknown
    penalty: float  # fraction of the score lost, 0..1
    rule: str = ""  # which rule of the policy took what, in words ("" when on time)

    def final(self, score: float) -> float:
        return score * (1.0 - self.penalty)


def parse_time(text: str, where: str) -> datetime:
    try:
        value = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise LateError(
            f"{where}: {text!r} is not an ISO 8601 date and time (e.g. 2026-03-01T23:59:00+00:00)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def policy(
    course_root: Path, due: str | None = None, penalty: float | None = None, cutoff: float | None = None
) -> Policy:
    """``[late]`` of ``course_root/course.toml``, each value overridden by the command line's when given."""
    try:
        table = tomllib.loads((Path(course_root) / "course.toml").read_text(encoding="utf-8")).get("late", {})
    except (OSError, tomllib.TOMLDecodeError):
        table = {}
    unknown = sorted(set(table) - {"due", "penalty_per_day", "cutoff_days"})
    if unknown:
        raise LateError(f"course.toml: unknown key(s) {unknown} in [late] (allowed: due, penalty_per_day, cutoff_days)")
    due_text = due if due is not None else table.get("due")
    due_value: datetime | None
    if isinstance(due_text, datetime):  # TOML's own date-time
        due_value = due_text if due_text.tzinfo else due_text.replace(tzinfo=UTC)
    else:
        due_value = parse_time(due_text, "the due date") if due_text else None
    per_day = float(penalty if penalty is not None else table.get("penalty_per_day", 0.0))
    cut = cutoff if cutoff is not None else table.get("cutoff_days")
    if not 0 <= per_day <= 100:
        raise LateError(f"the late penalty must be a percentage per day between 0 and 100, got {per_day:g}")
    if cut is not None and float(cut) < 0:
        raise LateError(f"the late cut-off must be a number of days >= 0, got {cut}")
    if due_value is None and (per_day or cut is not None):
        raise LateError("a late penalty or cut-off needs a due date (--due or due in [late] of course.toml)")
    return Policy(due_value, per_day, None if cut is None else float(cut))


def judge(policy: Policy, submitted_at: datetime | None) -> Lateness:
    if policy.due is None or submitted_at is None or submitted_at <= policy.due:  # not policy.active, or on time
        return Lateness(submitted_at, None, 0.0)
    late_by = submitted_at - policy.due
    days = late_by.total_seconds() / 86400
    if policy.cutoff_days is not None and days > policy.cutoff_days:
        return Lateness(submitted_at, late_by, 1.0, f"the cut-off: more than {policy.cutoff_days:g} days late scores 0")
    started = math.ceil(days)
    penalty = min(1.0, started * policy.penalty_per_day / 100)
    rule = (
        f"the late penalty: {policy.penalty_per_day:g}% per started day late, {started} "
        f"day{'s' if started != 1 else ''} started"
    )
    return Lateness(submitted_at, late_by, penalty, rule)


def format_time(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def format_late_by(value: timedelta | None) -> str:
    """``2d 03:04:05`` (days, then hours:minutes:seconds); empty when on time."""
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86400)
    return f"{days}d {rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"


# -- submission times ------------------------------------------------------------------------------


def submission_times(
    source: str, students: list[tuple[str, Path]], modules: tuple[str, ...]
) -> tuple[dict[str, datetime], list[str]]:
    """Each student's submission time from ``source`` (see the module docstring), and the students it had none for."""
    if source.startswith("csv:"):
        table = _csv_times(Path(source[4:]))
        read = lambda name, folder: table.get(name)  # noqa: E731
    elif source == "git":
        read = lambda name, folder: _git_time(folder)  # noqa: E731
    elif source == "gradescope":
        read = lambda name, folder: _gradescope_time(folder)  # noqa: E731
    elif source == "mtime":
        read = lambda name, folder: _mtime(folder, modules)  # noqa: E731
    else:
        raise LateError(f"unknown submission time source {source!r} (one of: {', '.join(SOURCES)})")
    times, unknown = {}, []
    for name, folder in students:
        value = read(name, folder)
        if value is None:
            unknown.append(name)
        else:
            times[name] = value
    return times, unknown


def _git_time(folder: Path) -> datetime | None:
    if not (folder / ".git").exists():
        return None
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }
    cmd = [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=" + os.devnull,
        "-c",
        "safe.directory=*",
        "-C",
        str(folder),
        "log",
        "-1",
        "--format=%cI",
        "HEAD",
    ]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
        return parse_time(proc.stdout.strip(), "git") if proc.returncode == 0 and proc.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired, LateError):
        return None


def _gradescope_time(folder: Path) -> datetime | None:
    path = folder / "submission_metadata.json"
    try:
        if path.is_symlink() or path.stat().st_size > 1_000_000:
            return None
        return parse_time(json.loads(path.read_text(encoding="utf-8"))["created_at"], "submission_metadata.json")
    except (OSError, ValueError, KeyError, TypeError, LateError):
        return None


def _mtime(folder: Path, modules: tuple[str, ...]) -> datetime | None:
    """The newest of the files a submission is read from: ``<module>.py`` or ``<module>.ipynb`` (in ``exercises/``,
    or one folder down), or an archive in the folder (see :func:`autograder.core.submission.read_submission`)."""
    from autograder.core.submission import ARCHIVE_SUFFIXES

    def newest(base: Path) -> list[float]:
        found = []
        for where in (base / "exercises", base):
            for m in modules:
                for suffix in (".py", ".ipynb"):
                    p = where / f"{m}{suffix}"
                    if p.is_file() and not p.is_symlink():
                        found.append(p.lstat().st_mtime)
            if found:
                return found
        return found

    times = newest(folder)
    if not times and folder.is_dir():
        archives = [p for p in folder.iterdir() if p.name.lower().endswith(ARCHIVE_SUFFIXES) and not p.is_symlink()]
        times = [p.lstat().st_mtime for p in archives if p.is_file()]
        nested = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]
        if not times and len(nested) == 1:
            times = newest(nested[0])
    return datetime.fromtimestamp(max(times), UTC) if times else None


def _csv_times(path: Path) -> dict[str, datetime]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except OSError as err:
        raise LateError(f"cannot read the submission times file {path}: {err}") from None
    if rows and not {"student", "submitted_at"} <= set(rows[0]):
        raise LateError(f"{path}: needs the columns student and submitted_at (has {', '.join(rows[0])})")
    return {
        row["student"]: parse_time(row["submitted_at"], f"{path}, student {row['student']!r}")
        for row in rows
        if row.get("submitted_at")
    }
