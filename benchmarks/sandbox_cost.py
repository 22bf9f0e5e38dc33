"""What the sandbox costs, and how much memory each module's grading process uses.

    python benchmarks/sandbox_cost.py [--repeats N] [--modules m1,m2] [--memory MB]

Prints the isolation in force; the start-up of a student's zygote (until it has imported the libraries) in
its sandbox and without one (the grader's own user, no namespaces, no control group), and of a bare
interpreter both ways; the zygote's resident memory (its control group's peak: the pages it was charged for)
and its RSS; then grades the reference of every module (``--jobs 1``) and prints each module's grading
process's peak resident memory as its control group counted it (the pages the process itself used, not
those it shares with its zygote). Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.core.course import load_course  # noqa: E402
from autograder.grading.grader import Grader, Options  # noqa: E402
from autograder.grading.isolation import bubblewrap, forkserver  # noqa: E402
from autograder.grading.pool import GradingPool  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def zygote_start(grader: GradingPool, boxed: bool) -> tuple[float, float, float]:
    """Seconds until a zygote is ready; its cgroup peak (MB, 0 without one) and RSS (MB)."""
    started = time.perf_counter()
    if boxed:
        box = grader.new_box()
        env = dict(grader.env, HOME=str(box.folder), TMPDIR=str(box.folder / "tmp"))
        zygote = forkserver.Zygote(
            grader.shared / "kit", box.folder, env, grader.options.memory_mb, grader.lifeline.fd, grader.stop, box=box
        )
    else:
        scratch = Path(tempfile.mkdtemp())
        box = None
        zygote = forkserver.Zygote(grader.shared / "kit", scratch, grader.env, None, grader.lifeline.fd, grader.stop)
    zygote.wait_ready()
    seconds = time.perf_counter() - started
    if box is not None:
        inner = (
            [p for p in box.group.pids() if Path(f"/proc/{p}/cmdline").read_bytes().count(b"zygote")]
            if box.group
            else []
        )
        peak = zygote.leaf.peak_mb() if zygote.leaf else 0.0
        rss = max((rss_mb(p) for p in inner), default=0.0)
        grader.close_box(box)
    else:
        peak, rss = 0.0, rss_mb(zygote.proc.pid)
        zygote.close()
    return seconds, peak, rss


def bare_start(grader: GradingPool, boxed: bool) -> float:
    argv = [sys.executable, "-I", "-c", "pass"]
    box = grader.new_box() if boxed else None
    if box is not None:
        argv = box.command(argv, box.leaf("bare"), box.folder)
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    seconds = time.perf_counter() - started
    if box is not None:
        grader.close_box(box)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modules", help="comma-separated modules (default: every module of course.toml)")
    parser.add_argument("--memory", type=int, default=None, help="the memory limit (default: course.toml's)")
    args = parser.parse_args()
    course = load_course(ROOT)
    modules = tuple(args.modules.split(",")) if args.modules else tuple(m.name for m in course.modules)
    memory = args.memory or course.grading.memory_limit_mb
    print(f"isolation: {bubblewrap.isolation().describe()}", flush=True)
    options = Options(modules, course.grading.timeout_per_function, memory, jobs=1, zygote=False)
    grader = GradingPool(course, options, threading.Event())  # the pool alone: no plan, no verifier
    try:
        for label, boxed in (("in its sandbox", True), ("without a sandbox", False)):
            runs = [zygote_start(grader, boxed) for _ in range(args.repeats)]
            print(
                f"zygote start-up {label:18s}: {statistics.median(r[0] for r in runs):6.2f} s (median of {len(runs)}); "
                f"cgroup peak {statistics.median(r[1] for r in runs):6.0f} MB, RSS {statistics.median(r[2] for r in runs):6.0f} MB",
                flush=True,
            )
        for label, boxed in (("in its sandbox", True), ("without a sandbox", False)):
            runs = [bare_start(grader, boxed) for _ in range(args.repeats)]
            print(f"python -I -c pass {label:16s}: {statistics.median(runs) * 1000:6.0f} ms", flush=True)
    finally:
        grader.close()
    options = Options(modules, course.grading.timeout_per_function, memory, jobs=1)
    grader = Grader(course, options, threading.Event(), workers=1)
    try:
        folder = Path(tempfile.mkdtemp()) / "reference"
        folder.mkdir()
        for module in modules:
            (folder / f"{module}.py").write_bytes((ROOT / "solutions" / f"{module}.py").read_bytes())
        for path in (folder.parent, folder, *folder.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        started = time.perf_counter()
        result = grader.grade_class([("reference", folder)])[0]
        seconds = time.perf_counter() - started
    finally:
        grader.close()
    total = sum(s.points for s in result.scores)
    print(f"the reference, {len(modules)} modules, --jobs 1: {total:g} points in {seconds:.0f} s")
    for module in modules:
        print(
            f"  {module:14s} grading process peak resident memory {result.timings.get(f'peak_mb:{module}', 0):6.0f} MB"
        )


if __name__ == "__main__":
    main()
