"""Benchmark: grade N copies of a mixed class and print seconds per submission.

    python benchmarks/grade_class.py [--copies N] [--jobs J] [--only MODULE] [--no-zygote]

The class (per copy): a correct submission (the reference), an untouched
stub (the exercises file), one whose functions all return a wrong value, and
one that cannot be imported. It is built in a temporary folder from the
course's own files, so it covers every module in ``course.toml``.
Not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.core.course import load_course  # noqa: E402


def wrong(source: str) -> str:
    """Every top-level function returns its first argument."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            node.body = ast.parse("return args[0] if args else None").body
            node.args = ast.parse("def f(*args, **kwargs): pass").body[0].args
    return ast.unparse(tree)


def build(dest: Path, copies: int, modules: list[str], size: int | None = None) -> int:
    """``copies`` of the four kinds of submission (or the first ``size`` students of as many copies as that
    takes: a class of 5 is the four kinds and one more correct submission); the number of students."""
    kinds = {
        "correct": lambda m: (ROOT / "solutions" / f"{m}.py").read_text(),
        "stub": lambda m: (ROOT / "exercises" / f"{m}.py").read_text(),
        "wrong": lambda m: wrong((ROOT / "solutions" / f"{m}.py").read_text()),
        "broken": lambda m: (ROOT / "solutions" / f"{m}.py").read_text() + "\ndef oops(:\n",
    }
    n = 0
    if size is not None:
        copies = -(-size // len(kinds))
    for copy in range(copies):
        for kind, make in kinds.items():
            if size is not None and n == size:
                return n
            folder = dest / f"{kind}_{copy:03d}"
            folder.mkdir(parents=True)
            for module in modules:  # each student's own file (no two byte-identical, as in a real class)
                (folder / f"{module}.py").write_text(make(module) + f"\n# {folder.name}\n")
            n += 1
    return n


def breakdown(course, folder: Path, modules: list[str], args) -> None:
    """Per kind of submission: seconds in grading processes and in trusted verification."""
    from collections import defaultdict

    from autograder.grading import grade_class
    from autograder.grading.grader import find_students
    from autograder.grading.options import Options

    start = time.monotonic()
    options = Options(
        tuple(modules),
        course.grading.timeout_per_function,
        course.grading.memory_limit_mb,
        args.jobs,
        zygote=not args.no_zygote,
    )
    students = find_students(folder)
    marks: list[float] = []  # grade_class tells the progress callable when grading starts and each student ends
    # no pre-flight: the setup measured is the grader's own (its sandboxes, the trusted plan)
    grades = grade_class(
        course,
        students,
        options,
        workers=len(students),
        prove=False,
        progress=lambda done, total: marks.append(time.monotonic()),
    )
    if grades.failure is not None:
        raise grades.failure
    results = grades.results
    setup = marks[0] - start
    seconds = marks[-1] - marks[0]
    kinds = defaultdict(list)
    for r in results:
        kinds[r.student.rsplit("_", 1)[0]].append(r.timings)
    print(
        f"zygote {'off' if args.no_zygote else 'on'}, {args.jobs} jobs: setup (trusted plan) {setup:.1f} s, "
        f"{len(results)} submissions in {seconds:.1f} s = {seconds / len(results):.2f} s per submission"
    )
    for kind, timings in sorted(kinds.items()):
        mean = {k: sum(t[k] for t in timings) / len(timings) for k in ("runs", "run_seconds", "verify_seconds")}
        print(
            f"  {kind:8s} processes {mean['runs']:.1f}  grading {mean['run_seconds']:.2f} s  "
            f"verifying {mean['verify_seconds']:.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", action="append")
    parser.add_argument("--no-zygote", action="store_true")
    parser.add_argument("--breakdown", action="store_true", help="grade in-process and print where the time goes")
    args = parser.parse_args()
    course = load_course(ROOT)
    modules = args.only or [m.name for m in course.modules]
    with tempfile.TemporaryDirectory(prefix="grade-bench-") as tmp:
        tmp = Path(tmp)
        n = build(tmp / "class", args.copies, modules)
        if args.breakdown:
            breakdown(course, tmp / "class", modules, args)
            return
        cmd = [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(tmp / "class"),
            "--out",
            str(tmp / "out"),
            "--jobs",
            str(args.jobs),
            "--course",
            str(ROOT),
        ]
        for module in modules:
            cmd += ["--only", module]
        if args.no_zygote:
            cmd.append("--no-zygote")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        start = time.monotonic()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        print(
            f"{n} submissions ({', '.join(modules)}), {args.jobs} jobs, zygote {'off' if args.no_zygote else 'on'}: "
            f"{seconds:.1f} s total, {seconds / n:.2f} s per submission "
            f"({seconds * args.jobs / n:.2f} worker-seconds per submission)"
        )
        print((tmp / "out" / "grades.csv").read_text().splitlines()[0])


if __name__ == "__main__":
    main()
