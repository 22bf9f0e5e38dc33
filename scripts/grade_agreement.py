"""Agreement of ``grade`` with the checks run in-process, on the gallery variants of the modules that
``grade`` judges on the trusted side only (their grading processes hold no reference).

    python scripts/grade_agreement.py [--modules m1,m2] [--limit N] [--jobs J]

Each variant (every wrong and every differently-correct version of a function,
from ``tests/galleries/test_module_*.py``) is judged twice, check by check, in the grading
profile: by its function's checks run in this process with the live
``solutions/`` (as ``pytest exercises/`` judges it), and by a real ``grade``
of the variant as one student's file (a grading process that answers with the
student's own functions, then the trusted verifier with the reference).
Verdicts must agree (passed, or not passed); prints the counts and exits 1 on
any disagreement. Only the checks of the variant's function are compared. A
check that ``grade`` failed because the function ran into its time limit (the
in-process run has none) is listed apart, not as a disagreement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "galleries")]

from oracle_agreement import Variant, judge, select  # noqa: E402


@dataclass
class Counts:
    variants: int = 0
    checks: int = 0
    agree: int = 0
    disagreements: list[str] = field(default_factory=list)
    # grade's time limit stopped the function (the in-process run has none): not a judgement, listed apart
    timed_out: list[str] = field(default_factory=list)
    messages: dict[str, list[str]] = field(default_factory=dict)  # student -> grade's messages of failed checks


def trusted_only_modules(jobs: int = 1) -> set[str]:
    """The modules ``grade`` judges on the trusted side only (from the trusted side's own plan)."""
    from autograder.core.course import load_course
    from autograder.grading import grade_class
    from autograder.grading.options import Options

    course = load_course(ROOT)
    # no student: only the plan (no pre-flight: nothing is graded)
    grades = grade_class(
        course, [], Options(tuple(m.name for m in course.modules), 60, 4000, jobs), workers=1, prove=False
    )
    if grades.failure is not None:
        raise grades.failure
    return set(grades.trusted_only_modules)


def student_name(i: int, variant: Variant) -> str:
    return f"{i:03d}-{variant.module}-{variant.function}-{variant.kind}"


def live_verdicts(variants: list[Variant], scratch: Path) -> dict[str, dict[str, str]]:
    """Each variant's verdicts, check by check, from its function's checks run in this process."""
    verdicts = {}
    for i, variant in enumerate(variants):
        here = scratch / "live" / student_name(i, variant)
        here.mkdir(parents=True)
        verdicts[student_name(i, variant)] = judge(ROOT, variant, here)
    return verdicts


def write_class(variants: list[Variant], folder: Path) -> list[tuple[str, Path]]:
    """One student per variant, holding only the variant's module file."""
    students = []
    for i, variant in enumerate(variants):
        student = folder / student_name(i, variant)
        student.mkdir(parents=True)
        (student / f"{variant.module}.py").write_text(textwrap.dedent(variant.source), encoding="utf-8")
        students.append((student.name, student))
    return students


def agreement(variants: list[Variant], live: dict, results: dict) -> Counts:
    """``live`` verdicts against ``grade``'s ``results`` (student name -> StudentResult)."""
    counts = Counts()
    for i, variant in enumerate(variants):
        name = student_name(i, variant)
        counts.variants += 1
        graded = {o.check: o for o in results[name].outcomes if o.module == variant.module}
        counts.messages[name] = [o.message for o in graded.values() if o.status != "passed"]
        for test, verdict in sorted(live[name].items()):
            counts.checks += 1
            got = graded.get(test)
            got_status = "missing" if got is None else ("passed" if got.status == "passed" else "failed")
            if got_status == ("passed" if verdict == "passed" else "failed"):
                counts.agree += 1
            elif got is not None and "timed out after" in got.message:
                counts.timed_out.append(f"{name} {test}: in-process {verdict}, grade timed out")
            else:
                counts.disagreements.append(f"{name} {test}: in-process {verdict}, grade {got_status}")
    return counts


def compare(variants: list[Variant], jobs: int = 2) -> Counts:
    from autograder.core.course import load_course
    from autograder.grading import grade_class
    from autograder.grading.options import Options

    modules = tuple(sorted({v.module for v in variants}))
    with tempfile.TemporaryDirectory(dir=ROOT.parent) as tmp:
        live = live_verdicts(variants, Path(tmp))
        students = write_class(variants, Path(tmp) / "class")
        # no pre-flight: this compares the verdicts on variants, it grades nobody
        grades = grade_class(load_course(ROOT), students, Options(modules, 60, 4000, jobs), workers=jobs, prove=False)
        if grades.failure is not None:
            raise grades.failure
        results = {r.student: r for r in grades.results}
    return agreement(variants, live, results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", default="", help="default: every module grade judges on the trusted side only")
    parser.add_argument("--limit", type=int, default=0, help="at most N variants per module (0: all)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    modules = args.modules.split(",") if args.modules else sorted(trusted_only_modules())
    variants = [v for module in modules for v in select(module, args.limit)]
    counts = compare(variants, args.jobs)
    print(
        f"modules: {', '.join(modules)}; variants: {counts.variants}, checks: {counts.checks}, "
        f"same verdict: {counts.agree}, disagreements: {len(counts.disagreements)}, timed out in grade: {len(counts.timed_out)}"
    )
    for line in counts.disagreements + counts.timed_out:
        print("  " + line)
    return 1 if counts.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
