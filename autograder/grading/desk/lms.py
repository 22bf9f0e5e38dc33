"""Grade import files for Canvas and Moodle, from a roster mapping student folders to LMS identities.

The roster is a CSV file with a header row and one row per student: ``student`` (the folder's name,
required) and any of ``name``, ``canvas_id``, ``sis_user_id``, ``sis_login_id``, ``section``,
``email``, ``idnumber``, ``username``. Every graded student must have a row with the identifiers
the chosen format needs (else :class:`ExportError` names them, before anything is graded); roster
rows with no student folder are listed back to the instructor.

Canvas (Gradebook > Import, "Import a CSV file of grades"): the import reads a file shaped like
Canvas's own gradebook export. Its documented required components are the student (the
``Student`` name, the Canvas user ``ID`` or the ``SIS User ID``: one of the three identifies the
student), ``SIS Login ID``, ``Section``, and one column per assignment, headed with the assignment's
name, ``Name (id)`` for an existing assignment (a column without an id creates a new assignment).
Sources: Canvas Instructor Guide, "How do I import grades in the Gradebook?"
(community.canvaslms.com, Instructor Guide) and The Ohio State University's CarmenCanvas guide
"Import a CSV file into Carmen Grades" (teaching.resources.osu.edu), which lists the "four required
components: Student Name OR Student ID OR Student SIS User ID ..., SIS Login ID, Section,
Assignment Name". Canvas's export puts a ``Points Possible`` row first, which the import accepts;
we write it too. CSV rules as in Canvas's SIS import documentation: a mandatory header row,
RFC 4180 quoting, UTF-8.

Moodle (Grades > Import > CSV file): one column that identifies the user, mapped at import time
("Map from" / "Map to": by default first name to userid; the documentation's tip is to map "Email
address" to "useremail", or "ID number" to "useridnumber"; a username column maps to
"username"), and one column per grade item, mapped to the item ("Grade import", docs.moodle.org,
CSV grade import). We write the identifier column (``Email address``, ``ID number`` or
``Username``: the first the roster has for every student) and one grade item column; no feedback
column (Moodle's note 3: importing feedback without its grade column loses grades).

Every text cell goes through :func:`autograder.grading.outputs.inert.csv_text`.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.core.outcomes import points_text
from autograder.grading.outputs.inert import csv_text

ROSTER_COLUMNS = (
    "student",
    "name",
    "canvas_id",
    "sis_user_id",
    "sis_login_id",
    "section",
    "email",
    "idnumber",
    "username",
)
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_IDENTIFIERS = (("email", "Email address"), ("idnumber", "ID number"), ("username", "Username"))


class ExportError(ValueError):
    """An export that cannot be written (the message names the students and what is missing)."""


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """``{student folder: row}`` from the roster CSV."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            rows = list(reader)
    except OSError as err:
        raise ExportError(f"cannot read the roster {path}: {err}") from None
    if "student" not in header:
        raise ExportError(
            f"the roster {path} needs a 'student' column (the student's folder name); it has {', '.join(header) or 'no header'}"
        )
    unknown = [c for c in header if c not in ROSTER_COLUMNS]
    if unknown:
        raise ExportError(f"the roster {path} has unknown column(s) {unknown} (known: {', '.join(ROSTER_COLUMNS)})")
    roster: dict[str, dict[str, str]] = {}
    for row in rows:
        name = (row.get("student") or "").strip()
        if not name:
            continue
        if name in roster:
            raise ExportError(f"the roster {path} lists the student folder {name!r} twice")
        roster[name] = {k: (v or "").strip() for k, v in row.items() if k}
    return roster


def _need(roster: dict, students: list[str], ok, what: str, fmt: str) -> None:
    lacking = [s for s in students if s not in roster or not ok(roster[s])]
    if lacking:
        shown = ", ".join(repr(s) for s in lacking[:10]) + (
            f" and {len(lacking) - 10} more" if len(lacking) > 10 else ""
        )
        raise ExportError(
            f"cannot write the {fmt} import: no roster row with {what} for {shown}; add them to the roster"
        )


def check_canvas(roster: dict, students: list[str]) -> None:
    _need(
        roster, students, lambda r: r.get("canvas_id") or r.get("sis_user_id"), "a canvas_id or sis_user_id", "Canvas"
    )


def moodle_identifier(roster: dict, students: list[str]) -> tuple[str, str]:
    """The roster column and Moodle header used to identify users: the first every student has."""
    for key, header in MOODLE_IDENTIFIERS:
        if students and all(roster.get(s, {}).get(key) for s in students):
            return key, header
    _need(
        roster,
        students,
        lambda r: any(r.get(k) for k, _ in MOODLE_IDENTIFIERS),
        "an email, idnumber or username",
        "Moodle",
    )
    raise ExportError(
        "cannot write the Moodle import: no one of email, idnumber, username is filled in for every student in the roster"
    )


def unmatched(roster: dict, students: list[str]) -> list[str]:
    """Roster entries with no student folder (not graded: absent, or a misspelt folder)."""
    return sorted(set(roster) - set(students))


def canvas_csv(
    roster: dict, scores: dict[str, float], max_score: float, assignment: str, assignment_id: str | None = None
) -> str:
    check_canvas(roster, list(scores))
    column = f"{assignment} ({assignment_id})" if assignment_id else assignment
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CANVAS_COLUMNS, csv_text(column)])
    writer.writerow(["Points Possible", "", "", "", "", points_text(max_score)])
    for student in sorted(scores):
        row = roster[student]
        writer.writerow(
            [
                csv_text(row.get("name", "")),
                csv_text(row.get("canvas_id", "")),
                csv_text(row.get("sis_user_id", "")),
                csv_text(row.get("sis_login_id", "")),
                csv_text(row.get("section", "")),
                points_text(scores[student]),
            ]
        )
    return buffer.getvalue()


def moodle_csv(roster: dict, scores: dict[str, float], item: str) -> str:
    key, header = moodle_identifier(roster, list(scores))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([header, csv_text(item)])
    for student in sorted(scores):
        writer.writerow([csv_text(roster[student][key]), points_text(scores[student])])
    return buffer.getvalue()
