"""The checks whose verdict the grading process observes (the trusted side cannot confirm them from recorded
values), and their share of the course's points: the list the README gives under "observed in the student's
process".

    python scripts/observed_checks.py        # a Markdown table, one row per function with such checks, and the
                                             # share of the points decided where (values, program, source, observed)

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
        self.items: list[tuple[str, str, str, str]] = []

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        from autograder.pytest_plugin.decided import decided_where
        from autograder.pytest_plugin.session import CourseSession

        for item in items:
            fn = CourseSession.function_of(item)
            if fn is not None:
                name = item.name.split("[", 1)[0]
                self.items.append((fn.module, fn.name, name, decided_where(item)))


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
    decided: dict = defaultdict(lambda: defaultdict(int))  # (module, function) -> where -> checks
    for module, fn, name, where in collect.items:
        counts[(module, fn)] += 1
        if where == "observed" or observed_in_the_students_process(f"{module}::{name}"):
            where = "observed"
            observed[(module, fn)][name] += 1
        decided[(module, fn)][where] += 1
    print("\n| function | checks observed in the student's process (tamper-evident) | points |")
    print("|---|---|---|")
    share = 0.0
    for key in sorted(observed, key=lambda k: list(points).index(k)):
        value = points[key] * sum(observed[key].values()) / counts[key]
        share += value
        names = ", ".join(f"`{n}`" + (f" ×{c}" if c > 1 else "") for n, c in observed[key].items())
        print(f"| `{key[0]}.{key[1]}` | {names} | {value:.2f} of {points[key]:g} |")
    print(f"\nIn all {share:.2f} of the course's {total:g} points ({100 * share / total:.1f} %).")
    # Where each kind of verdict is decided (issue 42, autograder.pytest_plugin.decided): the trusted side from
    # recorded values (the correctness checks and the checks marked decided("values"), replayed against the
    # reference), the trusted side from the program the student's function traces to (decided("program")), the
    # trusted side from the submission's source text (decided("source", analysis): autograder.core.from_source),
    # and the student's own grading process, observed there and tamper-evident.
    by_kind: dict = defaultdict(float)
    for key, kinds in decided.items():
        for where, n in kinds.items():
            by_kind[where] += points[key] * n / counts[key]
    print("\n| where the verdict is decided | points | share |")
    print("|---|---|---|")
    for kind, points_of_kind in (
        ("trusted side, from recorded values", by_kind["values"]),
        ("trusted side, from the program", by_kind["program"]),
        ("trusted side, from the source", by_kind["source"]),
        ("observed in the student's process, tamper-evident", by_kind["observed"]),
    ):
        print(f"| {kind} | {points_of_kind:.2f} | {100 * points_of_kind / total:.1f} % |")


if __name__ == "__main__":
    main()
