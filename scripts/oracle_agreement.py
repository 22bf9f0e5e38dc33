"""Agreement of the recorded oracle with the live reference, on every gallery variant of tests/galleries/test_module_*.py.

    python scripts/oracle_agreement.py RELEASE_DIR [--modules m1,m2] [--limit N]

Each variant (every wrong and every differently-correct version of a function)
is judged twice by its function's checks in the grading profile: in this kit
(live ``solutions/``) and in RELEASE_DIR (``autograder release`` output, the
recorded oracle). Verdicts must agree check by check; a check skipped in the
release is counted apart, and a variant judged only by skips in the release
counts as a disagreement. Prints the counts; exits 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "galleries")]


@dataclass
class Variant:
    module: str
    function: str
    kind: str  # "correct" or "wrong"
    source: str


def gallery(module: str) -> list[Variant]:
    """Every variant of ``tests/galleries/test_module_<module>.py``, whatever shape its tables have.

    Correct variants come from ``CORRECT`` (or ``CORRECT_VARIANTS``: a list of
    rows, or ``{function: source(s)}``), wrong ones from ``WRONG``; a row is a
    tuple or a ``pytest.param`` holding, in some order, labels, the function's
    name and its source (the first multi-line string after the name).
    """
    from support import with_function

    g = importlib.import_module(f"test_module_{module}")
    prelude = getattr(g, "IMPORTS", None) or getattr(g, "PRELUDE", None) or "import jax\n"
    correct = getattr(g, "CORRECT", None) or g.CORRECT_VARIANTS
    if isinstance(correct, dict):
        pairs = [
            (fn, s)
            for fn, sources in correct.items()
            for s in (sources if isinstance(sources, (list, tuple)) else [sources])
        ]
    else:
        pairs = [function_and_source(module, entry) for entry in correct]
    wrong = [function_and_source(module, entry) for entry in g.WRONG]
    return [Variant(module, fn, "correct", prelude + with_function(module, src)) for fn, src in pairs] + [
        Variant(module, fn, "wrong", prelude + with_function(module, src)) for fn, src in wrong
    ]


def select(module: str, limit: int) -> list[Variant]:
    """The gallery of ``module``; with ``limit``, at most that many variants, as many wrong as correct."""
    found = gallery(module)
    if not limit:
        return found
    return [v for v in found if v.kind == "correct"][: limit // 2] + [v for v in found if v.kind == "wrong"][
        : limit - limit // 2
    ]


def _strings(entry) -> list[str]:
    if hasattr(entry, "values") and hasattr(entry, "marks"):  # pytest.param(...)
        entry = entry.values
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, (tuple, list)):
        return [s for x in entry for s in _strings(x)]
    return []


def function_and_source(module: str, entry) -> tuple[str, str]:
    """``(function, source)`` of a gallery row (``("indexed-split", "two_normals", src, ...)``,
    ``("mse", "label", src, ...)``, ``pytest.param("f", src, id=...)``)."""
    from autograder.core.course import load_course

    names = {fn.name for fn in load_course(ROOT).module(module).functions}
    strings = _strings(entry)
    at = next(i for i, x in enumerate(strings) if x in names)
    source = next(x for x in strings[at + 1 :] if "\n" in x)
    return strings[at], source


class Verdicts:
    """A pytest plugin that keeps each check's outcome (passed, failed or skipped)."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[-1]
        if report.when == "call" or report.outcome != "passed":
            if report.outcome == "skipped" or name not in self.outcomes or self.outcomes[name] == "passed":
                self.outcomes[name] = report.outcome


def judge(course: Path, variant: Variant, folder: Path) -> dict[str, str]:

    (folder / f"{variant.module}.py").write_text(textwrap.dedent(variant.source), encoding="utf-8")
    verdicts = Verdicts()
    here = os.getcwd()
    os.chdir(course)  # the plugin takes the course from where pytest runs
    try:
        run(course, variant, folder, verdicts)
    finally:
        os.chdir(here)
    return verdicts.outcomes


def run(course: Path, variant: Variant, folder: Path, verdicts: Verdicts) -> None:
    import pytest

    args = [
        str(course / "exercises" / f"test_{variant.module}.py"),
        "--submission",
        str(folder),
        "--grading",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--import-mode=importlib",
        "-k",
        variant.function,
        f"--rootdir={course}",
    ]
    pytest.main(args, plugins=[verdicts])


@dataclass
class Counts:
    variants: int = 0
    checks: int = 0
    agree: int = 0
    skipped: int = 0
    disagreements: list[str] = field(default_factory=list)


def compare(release: Path, variants: list[Variant]) -> Counts:
    counts = Counts()
    with tempfile.TemporaryDirectory() as tmp:
        for i, variant in enumerate(variants):
            folders = [Path(tmp) / f"{side}{i}" for side in ("live", "recorded")]
            for folder in folders:
                folder.mkdir()
            live, recorded = judge(ROOT, variant, folders[0]), judge(release, variant, folders[1])
            counts.variants += 1
            judged = 0
            for check, verdict in sorted(live.items()):
                counts.checks += 1
                got = recorded.get(check, "missing")
                if got == "skipped":
                    counts.skipped += 1
                elif got == verdict:
                    counts.agree += 1
                    judged += 1
                else:
                    counts.disagreements.append(
                        f"{variant.module}.{variant.function} ({variant.kind} #{i}) {check}: live {verdict}, recorded {got}"
                    )
            if live and judged == 0:
                counts.disagreements.append(
                    f"{variant.module}.{variant.function} ({variant.kind} #{i}): judged only by skips"
                )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--modules", default="at_updates,prng,data,vmap_linear,training,batchnorm")
    parser.add_argument(
        "--limit", type=int, default=0, help="at most N variants per module, half correct and half wrong (0: all)"
    )
    args = parser.parse_args(argv)
    variants = []
    for module in args.modules.split(","):
        variants += select(module, args.limit)
    counts = compare(args.release.resolve(), variants)
    print(
        f"variants: {counts.variants}, checks: {counts.checks}, same verdict: {counts.agree}, "
        f"skipped in the release: {counts.skipped}, disagreements: {len(counts.disagreements)}"
    )
    for line in counts.disagreements:
        print("  " + line)
    return 1 if counts.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
