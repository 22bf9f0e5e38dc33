"""What the checks vary and compare, judged: from the record of a ``--solutions`` run
(:mod:`autograder.authoring.coverage`), every contract argument never varied, output never compared and graded
function never called is a :class:`Gap` (:func:`coverage_gaps`); one ``course.toml`` lists as deliberate is a note,
any other a problem (:func:`gap_problems`); :func:`coverage_table` is what ``check-course --table`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from autograder.authoring.coverage_read import compared_in_source, used_in_source
from autograder.authoring.problems import Problem
from autograder.core.course import Course


@dataclass(frozen=True)
class Gap:
    function: str  # module.function
    item: str  # an argument's name, "return", "return[i]", or "calls"
    what: str

    def action(self) -> str:
        if self.item == "calls":
            return "calls it"
        if self.item.startswith("return"):
            return f"compares its {self.item} with the reference's"
        return f"gives {self.item} several values (sizes of 1, non-divisible sizes, extremes, zero where allowed)"

    def problem(self) -> Problem:
        return Problem(
            "exercises/test_" + self.function.split(".")[0] + ".py",
            f"{self.function}: {self.what}",
            f"add a check that {self.action()} (or list it in course.toml as [[deliberate_gaps]] "
            f'function = {self.function!r}, item = {self.item!r}, reason = "...")',
        )


def deliberate_gaps(course: Course) -> dict[tuple[str, str], str]:
    """``{(module.function, item): reason}`` from course.toml's ``[[deliberate_gaps]]``."""
    import tomllib

    data = tomllib.loads((course.root / "course.toml").read_text(encoding="utf-8"))
    return {(g["function"], g["item"]): g["reason"] for g in data.get("deliberate_gaps", [])}


def coverage_gaps(
    course: Course, record: dict, contract: dict | None, modules: Iterable[str] | None = None
) -> list[Gap]:
    """Every contract argument a ``--solutions`` run (``record``, see :func:`coverage_read.merge`) never varied,
    every output it never compared, every graded function it never called."""
    gaps = []
    for module in course.modules:
        if modules is not None and module.name not in modules:
            continue
        checks = course.checks_path(module.name)
        source = checks.read_text(encoding="utf-8") if checks.is_file() else ""
        in_source, used = compared_in_source(source), used_in_source(source)
        signatures = (contract or {}).get(module.name, {})
        for fn in module.functions:
            entry = record.get(fn.qualname)
            arguments, outputs = signatures.get(fn.name, (None, []))
            if arguments is None:  # not in the contract's tables with a signature: the solution's own
                arguments = list((entry or {}).get("args", {}))
            if entry is None or entry["calls"] == 0:
                if arguments:
                    gaps.append(
                        Gap(fn.qualname, "calls", "no check calls it with arguments of its own (no call was recorded)")
                    )
                continue
            for name in arguments:
                seen = entry["args"].get(name)
                if seen is None:
                    continue  # a keyword-only extra the reference does not take
                if len(seen) < 2:
                    kinds = ", ".join(entry["kinds"].get(name, [])) or "one value"
                    gaps.append(
                        Gap(
                            fn.qualname,
                            name,
                            f"argument {name!r} is never varied: every call gets the same value ({kinds})",
                        )
                    )
            parts = entry["outputs"]
            for part, out in sorted(parts.items()):
                if out["compared"] or (fn.name, part) in in_source or (fn.name, "return") in in_source:
                    continue
                if out.get("object") and not out["none"] and ((fn.name, part) in used or (fn.name, "return") in used):
                    continue  # an object (a manager): the check uses it, and looks at what it does
                label = part
                if part.startswith("return[") and len(outputs) == len(parts):
                    label = f"{part} ({outputs[int(part[7:-1])]})"
                what = (
                    "is None on every call and never compared with None"
                    if out["none"]
                    else "is never compared with the reference's"
                )
                gaps.append(Gap(fn.qualname, part, f"output {label} {what}"))
    return gaps


def gap_problems(
    course: Course, gaps: list[Gap], listed: dict[tuple[str, str], str]
) -> tuple[list[Problem], list[str]]:
    """The unlisted gaps as problems, and notes: listed gaps found, listed gaps no longer found."""
    problems, notes = [], []
    found = {(g.function, g.item) for g in gaps}
    for gap in gaps:
        if (gap.function, gap.item) in listed:
            notes.append(f"deliberate gap: {gap.function} {gap.item}: {listed[(gap.function, gap.item)]}")
        else:
            problems.append(gap.problem())
    for key in sorted(set(listed) - found):
        notes.append(
            f"note: course.toml lists {key[0]} {key[1]} as a deliberate gap, but the checks cover it now: remove it"
        )
    return problems, notes


def coverage_table(course: Course, record: dict, modules: Iterable[str] | None = None) -> list[str]:
    """One line per argument and output of every graded function: how many values it took (and of what
    kinds: shapes and dtypes), whether it was compared. What the checks' authors read to widen inputs."""
    lines = []
    for module in course.modules:
        if modules is not None and module.name not in modules:
            continue
        for fn in module.functions:
            entry = record.get(fn.qualname)
            if not entry or not entry["calls"]:
                lines.append(f"{fn.qualname}: no call recorded")
                continue
            lines.append(f"{fn.qualname}: {entry['calls']} call(s)")
            for name, seen in entry["args"].items():
                count = f"{len(seen)}+" if len(seen) >= 20 else str(len(seen))
                lines.append(f"  {name}: {count} value(s): {', '.join(entry['kinds'].get(name, []))}")
            for part, outcome in sorted(entry["outputs"].items()):
                lines.append(f"  {part}: {'compared' if outcome['compared'] else 'not compared by a helper'}")
    return lines
