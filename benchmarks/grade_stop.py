"""Benchmark: how long ``autograder grade`` takes to stop on SIGINT / SIGTERM.

    python benchmarks/grade_stop.py [--runs N] [--signal INT|TERM] [--only MODULE] [--jobs J]

Each run grades a class of copies of the reference, sends the signal once the
first student's ``results.json`` appears, and times until the command has
exited (all its processes ended, scratch folders removed, outputs written).
Prints every time and the median. Not a test: the figures depend on the load.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--signal", default="INT", choices=["INT", "TERM"])
    parser.add_argument("--only", default="at_updates")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    sig = getattr(signal, f"SIG{args.signal}")
    times = []
    with tempfile.TemporaryDirectory(prefix="grade-stop-") as tmp:
        tmp = Path(tmp)
        for i in range(args.jobs * 3):
            (tmp / "class" / f"student_{i:02d}").mkdir(parents=True)
            (tmp / "class" / f"student_{i:02d}" / f"{args.only}.py").write_bytes(
                (ROOT / "solutions" / f"{args.only}.py").read_bytes()
            )
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        for run in range(args.runs):
            out = tmp / f"out{run}"
            cmd = [
                sys.executable,
                "-m",
                "autograder",
                "grade",
                str(tmp / "class"),
                "--out",
                str(out),
                "--only",
                args.only,
                "--jobs",
                str(args.jobs),
                "--course",
                str(ROOT),
            ]
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            while not list(out.glob("*/results.json")):
                if proc.poll() is not None:
                    raise SystemExit(f"grade ended early: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.05)
            started = time.monotonic()
            proc.send_signal(sig)
            proc.wait()
            times.append(time.monotonic() - started)
            print(f"run {run + 1}: stopped in {times[-1]:.2f} s (exit status {proc.returncode})")
    print(f"SIG{args.signal}: median {statistics.median(times):.2f} s over {len(times)} runs")


if __name__ == "__main__":
    main()
