"""Every speed figure of the kit in one run, as seconds and as ratios to the floor.

    python benchmarks/speed.py [--quick] [--repeats N] [--modules m1,m2] [--class-sizes 5,20,80] [--grade-modules 6,12]

The floor is one process that imports the stack (jax, flax.linen, optax,
torch.utils.data, hypothesis, pytest) and runs one JAX op. Every row is
measured side by side with it in the same run (the floor is re-measured
between rows), and the median of ``--repeats`` runs is printed. This machine's
timings are noisy: compare ratios, not seconds, across runs.

Rows: each module's checks on the reference (student profile) on a cold
compilation cache and again on the warm one (the student's re-run after an
edit); the whole course in both profiles, side by side on the cores and in one
process; ``grade`` per submission for classes
of the given sizes at ``--jobs 2``, over the first N modules of the course for
each N of ``--grade-modules`` (with the largest grading process's peak memory);
``nbgrader autograde`` of one notebook.
Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
FLOOR = "import jax, flax.linen, optax, torch.utils.data, hypothesis, pytest; jax.numpy.ones(1).block_until_ready()"


# Runs a command and prints the peak memory of its largest process (itself or any descendant it waited for).
PEAK = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def timed(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> float:
    return run_timed(cmd, env, cwd)[0]


def run_timed(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, subprocess.CompletedProcess]:
    """Seconds ``cmd`` took, and its completed process (output captured)."""
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: some check failed, still a timing
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
        raise SystemExit(f"benchmark command failed ({done.returncode}): {' '.join(cmd)}")
    return seconds, done


class Table:
    def __init__(self, repeats: int):
        self.repeats = repeats
        self.floors: list[float] = []

    def floor(self) -> float:
        self.floors.append(timed([PYTHON, "-c", FLOOR]))
        return statistics.median(self.floors)

    def row(self, label: str, run, per: int = 1) -> None:
        """``run()`` returns seconds; the row shows the median (divided by ``per``) and its ratio."""
        seconds = statistics.median(run() for _ in range(self.repeats)) / per
        floor = self.floor()
        print(f"{label:58s} {seconds:8.1f} s {seconds / floor:6.1f}x", flush=True)


def pytest_cmd(*args: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def cache_env(folder: Path) -> dict:
    return {"JAX_COURSE_CACHE_DIR": str(folder)}


def module_rows(table: Table, modules: list[str], scratch: Path) -> None:
    for module in modules:
        target = f"exercises/test_{module}.py"

        def cold(module=module, target=target) -> float:
            folder = scratch / f"cold-{module}"
            shutil.rmtree(folder, ignore_errors=True)
            return timed(pytest_cmd(target, "--solutions"), cache_env(folder))

        def warm(module=module, target=target) -> float:
            folder = scratch / f"warm-{module}"
            if not folder.exists():
                timed(pytest_cmd(target, "--solutions"), cache_env(folder))
            return timed(pytest_cmd(target, "--solutions"), cache_env(folder))

        table.row(f"pytest {target} --solutions, first run", cold)
        table.row("  ... re-run (warm compilation cache)", warm)


def course_rows(table: Table, scratch: Path) -> None:
    def profile(*flags: str):
        def run() -> float:
            folder = scratch / "course-cold"
            shutil.rmtree(folder, ignore_errors=True)
            return timed(pytest_cmd("exercises/", "--solutions", *flags), cache_env(folder))

        return run

    # A run of several modules is spread over the cores (autograder.pytest_plugin.parallel); -n 0 keeps it in one process.
    table.row("whole course, student profile, first run", profile())
    table.row("  ... in one process (-n 0)", profile("-n", "0"))
    table.row("whole course, grading profile, first run", profile("--grading"))
    table.row("  ... in one process (-n 0)", profile("--grading", "-n", "0"))


def grade_rows(table: Table, sizes: list[int], module_counts: list[int], scratch: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grade_class import build  # the mixed class of benchmarks/grade_class.py

    from autograder.core.course import load_course

    course_modules = [m.name for m in load_course(ROOT).modules]
    for count in module_counts:
        modules = course_modules[:count]
        for size in sizes:
            peaks: list[int] = []

            def run(size=size, modules=modules, peaks=peaks) -> float:
                work = Path(tempfile.mkdtemp(dir=scratch))
                n = build(work / "class", 0, modules, size)
                cmd = [
                    PYTHON,
                    "-m",
                    "autograder",
                    "grade",
                    str(work / "class"),
                    "--out",
                    str(work / "out"),
                    "--jobs",
                    "2",
                ]
                for module in modules:
                    cmd += ["--only", module]
                seconds, done = run_timed([PYTHON, "-c", PEAK, *cmd])
                if done.returncode != 0:
                    raise SystemExit(f"grade failed: {done.stderr[-2000:]}")
                peaks.append(int(done.stderr.split()[-1]))
                shutil.rmtree(work, ignore_errors=True)
                return seconds / n

            table.row(f"grade, {len(modules)} modules, --jobs 2, class of {size}, per submission", run)
            print(f"{'  ... largest grading process, peak memory':58s} {max(peaks) / 1024:8.0f} MiB", flush=True)


def nbgrader_row(table: Table, scratch: Path, module: str) -> None:
    def run() -> float:
        course = scratch / "nbgrader"
        shutil.rmtree(course, ignore_errors=True)
        subprocess.run([PYTHON, "-m", "autograder", "nbgrader", str(course)], check=True, capture_output=True)
        # the course's kernel is its own .venv's Python (built by its setup.sh); this row times grading with the
        # kit's interpreter instead, as the other rows do (the pre-flight still runs first, and is counted)
        spec = course / "jupyter" / "kernels" / "python3" / "kernel.json"
        spec.write_text(
            spec.read_text().replace(json.dumps(str(course / ".venv" / "bin" / "python")), json.dumps(PYTHON))
        )
        env = {"PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ['PATH']}"}
        subprocess.run(
            ["nbgrader", "generate_assignment", module, "--force"],
            cwd=course,
            env={**os.environ, **env},
            check=True,
            capture_output=True,
        )
        student = course / "submitted" / "student" / module
        student.mkdir(parents=True)
        shutil.copy(course / "source" / module / f"{module}.ipynb", student)
        return timed(["nbgrader", "autograde", module, "--force"], env, cwd=course)

    table.row(f"nbgrader autograde of one notebook ({module}, reference)", run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, two modules, a class of 4")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modules", help="comma-separated modules (default: every module of course.toml)")
    parser.add_argument("--class-sizes", default="20", help="comma-separated class sizes for the grade rows")
    parser.add_argument(
        "--grade-modules",
        default="",
        help="comma-separated module counts for the grade rows (the first N of course.toml; default: every module)",
    )
    parser.add_argument("--skip", default="", help="comma-separated rows to skip: modules,course,grade,nbgrader")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from autograder.core.course import load_course

    course_modules = [m.name for m in load_course(ROOT).modules]
    modules = args.modules.split(",") if args.modules else course_modules
    sizes = [int(s) for s in args.class_sizes.split(",")]
    module_counts = [int(n) for n in args.grade_modules.split(",") if n] or [len(course_modules)]
    repeats = args.repeats
    if args.quick:
        modules, sizes, repeats = modules[:2], [4], 1
    skip = set(filter(None, args.skip.split(",")))
    table = Table(repeats)
    scratch = Path(tempfile.mkdtemp(prefix="speed-"))
    try:
        for _ in range(3):
            table.floor()
        print(f"{'floor: import the stack, one JAX op':58s} {table.floor():8.1f} s {1.0:6.1f}x", flush=True)
        if "modules" not in skip:
            module_rows(table, modules, scratch)
        if "course" not in skip:
            course_rows(table, scratch)
        if "grade" not in skip:
            grade_rows(table, sizes, module_counts, scratch)
        if "nbgrader" not in skip:
            nbgrader_row(table, scratch, modules[0])
        print(f"(floor median over the run: {statistics.median(table.floors):.2f} s, {len(table.floors)} samples)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
