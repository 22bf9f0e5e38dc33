"""The grader's own memory and CPU while a hostile grading process floods its event channel.

    python benchmarks/hostile_channel.py [--cases brackets-24mb,brackets-200mb,...]

Each case runs in a fresh process (peak resident memory is per process): the grader's
``supervise.supervise`` reads what a writer process sends on the channel, carrying the run's nonce
(a student's code runs in the grading process and can find it). It prints, per case, the grader's
peak resident memory (``ru_maxrss``) and the CPU seconds it spent (its own, not the writer's), and
how the run ended. A case that does not end within ``--limit`` seconds is reported as such.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

WRITER = r"""
import os, sys
fd, nonce, case = int(sys.argv[1]), sys.argv[2], sys.argv[3]
MB = 2**20
def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
head = ('{"event": "end", "check": "m::test_x", "outcome": "passed", "nonce": "%s", "junk": [' % nonce).encode()
if case.startswith("brackets-"):  # events of [],[],... of 1 MB each (one event for 24 MB)
    total = int(case.split("-")[1][:-2]) * MB
    size = total if total <= 24 * MB else MB
    body = b"[]," * (size // 3)
    for _ in range(total // size):
        write(head + body + b"[]]}\n")
elif case.startswith("newline-less-"):  # one line that never ends
    total = int(case.split("-")[2][:-2]) * MB
    block = b"x" * MB
    for _ in range(total // MB):
        write(block)
write(('{"event": "done", "nonce": "%s"}\n' % nonce).encode())
"""

RUNNER = r"""
import json, os, resource, subprocess, sys, time
from pathlib import Path
from autograder.grading.isolation import limits, supervise
case, writer, cwd = sys.argv[1], sys.argv[2], Path(sys.argv[3])
def start(cwd, cfg, fd, stderr_path):
    return subprocess.Popen([sys.executable, "-c", writer, str(fd), cfg["nonce"], case], pass_fds=(fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = os.times()
started = time.monotonic()
result = supervise.supervise(start, cwd, {}, limits.Limits(600, 0, total_timeout=900), {})
t2 = os.times()
print(json.dumps({
    "case": case, "peak_mb_before": round(before_rss), "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "cpu_s": round(t2.user - t.user + t2.system - t.system, 2), "wall_s": round(time.monotonic() - started, 2),
    "events": len(result.events), "fault": result.fault.kind if result.fault else None,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="brackets-24mb,brackets-200mb,newline-less-40mb,newline-less-200mb")
    parser.add_argument("--limit", type=float, default=300)
    args = parser.parse_args()
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "work").mkdir()
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", RUNNER, case, WRITER, str(Path(tmp) / "work")],
                    capture_output=True,
                    text=True,
                    timeout=args.limit,
                )
                line = (
                    proc.stdout.strip().splitlines()[-1]
                    if proc.stdout.strip()
                    else json.dumps({"case": case, "error": proc.stderr[-500:]})
                )
            except subprocess.TimeoutExpired:
                line = json.dumps({"case": case, "error": f"did not end within {args.limit:g} s"})
        print(line, flush=True)


if __name__ == "__main__":
    main()
