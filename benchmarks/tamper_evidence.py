"""Benchmark: what issue 42's tamper-evidence costs (the channel's order, the tripwires on JAX, jaxlib, Flax, Optax,
Orbax and pytest's plugins, the static screen, the audit hook): whole-course grading per submission before and after,
in one run on the same machine.

    python benchmarks/tamper_evidence.py [--before REV] [--copies N] [--jobs J] [--rounds R] [--only MODULE]

``--before`` (default: the merge base with ``main``) is exported with ``git archive`` into a temporary folder; each
round grades the class of ``benchmarks/grade_class.py`` (a correct, a stub, a wrong and an unimportable submission
per copy) with that tree's grader and with this one, alternately (``grade_class.py --breakdown``: in-process, no
pre-flight, the grader's setup not counted), and prints seconds per submission and their ratio. Not a test: the figures depend on the machine and its load (run it on an idle one).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def per_submission(tree: Path, args) -> float:
    cmd = [sys.executable, str(tree / "benchmarks" / "grade_class.py"), "--breakdown", "--copies", str(args.copies)]
    cmd += ["--jobs", str(args.jobs), *(a for m in args.only or [] for a in ("--only", m))]
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("CI", None)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree, check=False)
    found = re.search(r"([\d.]+) s per submission", proc.stdout)
    if proc.returncode != 0 or found is None:
        sys.exit(f"{tree}: grading failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    rev = args.before or subprocess.check_output(["git", "merge-base", "HEAD", "main"], cwd=ROOT, text=True).strip()
    with tempfile.TemporaryDirectory(prefix="tamper-bench-") as tmp:
        before = Path(tmp) / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            times["before"].append(per_submission(before, args))
            times["after"].append(per_submission(ROOT, args))
            print(f"before {times['before'][-1]:.2f} s, after {times['after'][-1]:.2f} s per submission", flush=True)
    b, a = min(times["before"]), min(times["after"])
    print(
        f"whole course, per submission (best of {args.rounds}): before ({rev[:10]}) {b:.2f} s, after {a:.2f} s: {a / b:.2f}x"
    )


if __name__ == "__main__":
    main()
