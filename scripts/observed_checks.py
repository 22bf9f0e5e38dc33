"""The checks whose verdict the grading process observes (the trusted side cannot confirm them from recorded
values), and their share of the course's points: the list the README gives under "observed in the student's
process".

    python scripts/observed_checks.py        # a Markdown table, one row per function with such checks, and the
                                             # share of the points decided where (values, program, observed)

A function earns ``points x passed checks / checks`` (nothing while a correctness check fails), so a check's
share of the points is its function's points divided by its number of checks. Correctness checks are replayed
on the trusted side (``autograder/grading/trusted/verifier.py``); the others, and the correctness checks listed in
``autograder.grading.trusted.trusted_only.OBSERVED_CORRECTNESS``, are observed in the student's process.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Collect:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str, bool]] = []

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        from autograder.pytest_plugin.session import CourseSession

        for item in items:
            fn = CourseSession.function_of(item)
            if fn is not None:
                name = item.name.split("[", 1)[0]
                self.items.append((fn.module, fn.name, name, item.get_closest_marker("correctness") is not None))


def main() -> None:
    from autograder.core.course import load_course
    from autograder.grading.trusted.trusted_only import observed_in_the_students_process

    collect = Collect()
    code = pytest.main(
        [str(ROOT / "exercises"), "--solutions", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
        plugins=[collect],
    )
    if code != 0:
        sys.exit(f"collecting the course failed ({code})")
    course = load_course(ROOT)
    points = {(m.name, f.name): f.points for m in course.modules for f in m.functions}
    total = sum(points.values())
    counts: dict = defaultdict(int)
    observed: dict = defaultdict(lambda: defaultdict(int))
    for module, fn, name, correctness in collect.items:
        counts[(module, fn)] += 1
        if not correctness or observed_in_the_students_process(f"{module}::{name}"):
            observed[(module, fn)][name] += 1
    print("\n| function | checks observed in the student's process (tamper-evident) | points |")
    print("|---|---|---|")
    share = 0.0
    for key in sorted(observed, key=lambda k: list(points).index(k)):
        value = points[key] * sum(observed[key].values()) / counts[key]
        share += value
        names = ", ".join(f"`{n}`" + (f" ×{c}" if c > 1 else "") for n, c in observed[key].items())
        print(f"| `{key[0]}.{key[1]}` | {names} | {value:.2f} of {points[key]:g} |")
    print(f"\nIn all {share:.2f} of the course's {total:g} points ({100 * share / total:.1f} %).")
    # Where each kind of verdict is decided (issue 42): the trusted side from recorded values (the correctness checks
    # the verifier replays against the reference), the trusted side from the program the student's function traces
    # to (none yet), and the student's own grading process, observed there and tamper-evident.
    values = total - share
    print("\n| where the verdict is decided | points | share |")
    print("|---|---|---|")
    for kind, points_of_kind in (
        ("trusted side, from recorded values", values),
        ("trusted side, from the program", 0.0),
        ("observed in the student's process, tamper-evident", share),
    ):
        print(f"| {kind} | {points_of_kind:.2f} | {100 * points_of_kind / total:.1f} % |")


if __name__ == "__main__":
    main()
