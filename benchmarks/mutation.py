"""Benchmark: mutation testing of the course's checks (slow: minutes per module).

    python benchmarks/mutation.py [--module M]... [--jobs 2] [--no-write]
    python benchmarks/mutation.py --rereport      # the last run again, with the list as it is now

Runs ``autograder mutate`` on this course and writes its report to
``benchmarks/mutation-report.md`` and every outcome to ``benchmarks/mutation-results.json``
(unless ``--no-write`` or ``--module``): the mutation
score per module, how long the run took, and every surviving mutant with its classification
from ``benchmarks/mutation-equivalent.toml``. Not a test: it takes long and the figures
depend on the load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.authoring.mutate import main_mutate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", dest="modules")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--rereport", action="store_true", help="run nothing: report benchmarks/mutation-results.json again"
    )
    args = parser.parse_args()
    write = not (args.no_write or args.modules)
    report = ROOT / "benchmarks" / "mutation-report.md" if write else None
    results = ROOT / "benchmarks" / "mutation-results.json"
    return main_mutate(
        ROOT,
        args.modules,
        jobs=args.jobs,
        listed_path=ROOT / "benchmarks" / "mutation-equivalent.toml",
        report_path=report,
        json_path=results if write and not args.rereport else None,
        from_json=results if args.rereport else None,
    )


if __name__ == "__main__":
    sys.exit(main())
