"""The desk's options of ``grade`` (:class:`Desk`) and what OUT's record keeps of them beside the fingerprint
(:func:`desk_record`): ``--student`` and ``--resume`` reuse what the run they continue was graded with
(:func:`reuse_recorded`), and refuse a different one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.options import Options
from autograder.grading.outputs import run_state


@dataclass
class Desk:
    """The instructor's options of ``grade`` beyond grading itself (see ``autograder grade --help``)."""

    students: list[str] = field(default_factory=list)  # --student: regrade only these into an existing OUT
    due: str | None = None  # --due (else [late] of course.toml)
    late_penalty: float | None = None  # --late-penalty: percent per started day
    late_cutoff: float | None = None  # --late-cutoff: days
    submitted_at: str | None = None  # --submitted-at SOURCE (autograder.grading.desk.late)
    roster: Path | None = None  # --roster: student folder -> LMS ids
    canvas: str | None = None  # --canvas ASSIGNMENT: write OUT/canvas_import.csv
    canvas_assignment_id: str | None = None
    moodle: str | None = None  # --moodle ITEM: write OUT/moodle_import.csv
    force: bool = False  # --force: clear an OUT that holds another class's grades first
    # the grading options given on the command line (None: not given), which --student and --resume take from
    # OUT's record instead: modules (--only), timeout_per_function (--timeout), memory_mb (--memory), seed (--seed)
    given: dict = field(default_factory=dict)


# The options a run's record keeps (autograder.grading.outputs.run_state's desk), with their flags.
DESK_FLAGS = {
    "due": "--due",
    "late_penalty": "--late-penalty",
    "late_cutoff": "--late-cutoff",
    "submitted_at": "--submitted-at",
    "roster": "--roster",
    "canvas": "--canvas",
    "canvas_assignment_id": "--canvas-assignment-id",
    "moodle": "--moodle",
}
OPTION_FLAGS = {"modules": "--only", "timeout_per_function": "--timeout", "memory_mb": "--memory", "seed": "--seed"}


def _desk_value(key: str, value):
    """A desk option as the record keeps it: paths absolute (a regrade may run from another folder)."""
    if value is None:
        return None
    if key == "roster":
        return str(Path(value).resolve())
    if key == "submitted_at" and str(value).startswith("csv:"):
        return "csv:" + str(Path(str(value)[4:]).resolve())
    return value


def _option_value(key: str, value):
    return list(value) if key == "modules" and value is not None else value


def _shown(flag: str, value) -> str:
    values = value if isinstance(value, list) else [value]
    return " ".join(f"{flag} {v}" for v in values)


def desk_record(submissions: Path, desk: Desk, times: dict | None = None) -> dict:
    """What OUT's record keeps beside the fingerprint: the class graded, the export options, the times read."""
    return {
        "class": str(submissions.resolve()),
        **{key: _desk_value(key, getattr(desk, key)) for key in DESK_FLAGS},
        "times": {name: value.isoformat() for name, value in sorted((times or {}).items())},
    }


class DeskError(ValueError):
    """A run that cannot continue OUT's: another class's, or other options than it was graded with."""


@dataclass
class Reused:
    """What :func:`reuse_recorded` found: the options to grade with, the record's desk, and the options it took
    from the record (as the command line would give them), for the console."""

    options: Options
    record: dict
    reused: list[str]


def reuse_recorded(out: Path, submissions: Path, options: Options, desk: Desk, how: str) -> Reused:
    """``--student``/``--resume``: the options ``out`` was graded with, for every one not given now (``desk`` takes
    the desk's); a given one that differs is refused (:class:`DeskError`)."""
    saved = run_state.read_run(out)
    if saved is None:
        return Reused(options, {}, [])  # nothing to continue: RunState.start says so
    record: dict[str, Any] = saved["desk"] if isinstance(saved.get("desk"), dict) else {}
    here = str(submissions.resolve())
    if record.get("class") not in (None, here):
        raise DeskError(
            f"{how}: {out} holds the grades of another class ({record['class']}), not of "
            f"{here}; regrade into the OUT of {here}'s class, or grade {here} into a new folder"
        )
    conflicts, reused = [], []
    for key, flag in DESK_FLAGS.items():
        given, old = _desk_value(key, getattr(desk, key)), record.get(key)
        if given is None and old is not None:
            setattr(desk, key, Path(old) if key == "roster" else old)
            reused.append(_shown(flag, old))
        elif given is not None and given != old:
            conflicts.append(f"{_shown(flag, given)} (graded with {_shown(flag, old) if old is not None else 'none'})")
    recorded = run_state.recorded_options(saved)
    for key, flag in OPTION_FLAGS.items():
        if key not in recorded:
            continue
        given, old = _option_value(key, desk.given.get(key)), recorded[key]
        if given is None:
            if old != _option_value(key, getattr(options, key)):
                reused.append(_shown(flag, old))
            changed: dict[str, Any] = {key: tuple(old) if key == "modules" else old}
            options = dataclasses.replace(options, **changed)
        elif given != old:
            conflicts.append(f"{_shown(flag, given)} (graded with {_shown(flag, old) if old is not None else 'none'})")
    if conflicts:
        verb = "resume" if how == "--resume" else "regrade a student"
        raise DeskError(
            f"cannot {verb} into {out} with other options than it was graded with: "
            f"{'; '.join(conflicts)}; leave them out to reuse them, or grade the whole class again "
            "(without --student or --resume) to change them"
        )
    return Reused(options, record, reused)
