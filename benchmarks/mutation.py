"""Benchmark: mutation testing of the course's checks (slow: minutes per module).

    python benchmarks/mutation.py [--module M]... [--jobs 2] [--no-write]

Runs ``autograder mutate`` on this course and writes its report to
``benchmarks/mutation-report.md`` (unless ``--no-write`` or ``--module``): the mutation
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
    args = parser.parse_args()
    report = None if args.no_write or args.modules else ROOT / "benchmarks" / "mutation-report.md"
    return main_mutate(ROOT, args.modules, jobs=args.jobs, listed_path=ROOT / "benchmarks" / "mutation-equivalent.toml", report_path=report)


if __name__ == "__main__":
    sys.exit(main())
