"""Recording the reference's answers: the course's checks in both hypothesis profiles, in one process.

Run as ``python -m autograder.release.record COURSE_DIR ORACLE_DIR`` (``autograder release`` does)
in a copy of the course that still has ``solutions/``; the checks judge the
reference itself, and every concrete call of ``reference.<fn>`` is written to
``ORACLE_DIR``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROFILES = ("student", "grading")


def record(course_dir: str, oracle_dir: str) -> int:
    import pytest

    from autograder.runtime.imports import own_imports

    os.chdir(course_dir)
    os.environ.pop("CI", None)
    for profile in PROFILES:
        flags = ["--grading"] if profile == "grading" else []
        with own_imports(Path(course_dir) / "exercises"):  # each profile's checks, imported under that profile
            code = pytest.main(
                [
                    "exercises/",
                    "--solutions",
                    "--record-oracle",
                    oracle_dir,
                    "-q",
                    "-p",
                    "no:randomly",
                    "-p",
                    "no:cacheprovider",
                    *flags,
                ]
            )
        if code != 0:
            print(
                f"autograder release: the reference does not pass its own checks ({profile} profile)", file=sys.stderr
            )
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(record(sys.argv[1], sys.argv[2]))
