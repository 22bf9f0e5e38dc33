"""A class graded by the work: the whole course's CPU per student with and without sharing, and a second call's cost.

    python benchmarks/class_work.py [--rounds N] [--class-size N] [--modules m1,m2] [--jobs J]
                                    [--skip class,again,cache] [--again-module MODULE] [--cache-module MODULE]
                                    [--baseline CHECKOUT]

Rows, rounds alternated in one run, medians and ratios:

a) the whole course (or ``--modules``) graded for a class of ``--class-size`` (benchmarks/grade_class.py's mix:
   correct, stub, wrong, broken, then again) at ``--jobs J``, with the class's sharing on (the trusted verifier
   answers the reference's results it computed for an earlier student: ``autograder.grading.trusted.shared``)
   and off (``AUTOGRADER_CLASS_SHARING=0``): CPU seconds per student (a cpuacct control group per command, every
   process it starts, sandboxes included) and wall seconds per student; on/off. Each is the class's first call
   (the verifier's answers kept by an earlier call are removed first: the proofs and plans stay). With
   ``--baseline``, the baseline grades it too (its own sharing on), and on/baseline is printed;
b) the fixed cost of a ``grade`` call: one correct ``at_updates`` (``--again-module``) submission graded again with
   nothing changed, with the sharing on right after an untimed first call of it (so that row a's removal of kept
   answers does not turn the second call into a first one)
   (the pre-flight's proof reused), with the sharing on (the trusted side's compiled programs kept from earlier
   calls: ``autograder.grading.preflight.kept_compile_cache``) and off, beside the stack-import floor
   (benchmarks/speed.py's FLOOR) measured in the same round; again/floor.

c) a regrade with ``--jax-cache DIR`` (``--cache-module``, default training: one correct submission): the second call,
   whose cache the first call kept, wall and CPU, and how many programs it compiled again (the kept cache's files
   after the second call less those after the first); with ``--baseline``, the baseline's too, and this/baseline.
   A program's key used to hold the cache's folder, so the copy in a new sandbox found none of them.

Every ``grade`` here reuses one pre-flight proof, made before the first round and not counted.
Not a test: the figures depend on the machine and its load. Run as root (the kit sandboxes students as root).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_class import build as build_class  # noqa: E402
from otter_compare import REUSED, Meter, forget_answers, load  # noqa: E402
from speed import FLOOR  # noqa: E402

from autograder.core.course import load_course  # noqa: E402
from autograder.grading.trusted.shared import SWITCH  # noqa: E402

PYTHON = sys.executable


def grade_cmd(folder: Path, out: Path, modules: list[str], jobs: int, python: str = PYTHON) -> list[str]:
    cmd = [python, "-m", "autograder", "grade", str(folder), "--out", str(out), "--jobs", str(jobs)]
    for module in modules:
        cmd += ["--only", module]
    return cmd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--class-size", type=int, default=6)
    parser.add_argument("--modules", help="comma-separated modules (default: every module of course.toml)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip", default="", help="comma-separated rows to skip: class,again,cache")
    parser.add_argument("--again-module", default="at_updates", help="row b)'s module (default: at_updates)")
    parser.add_argument("--cache-module", default="training", help="row c)'s module (default: training)")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout of the kit with its own .venv (an earlier commit): row b) grades with it too, "
        "in the same rounds, and prints this/baseline",
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    modules = args.modules.split(",") if args.modules else [m.name for m in load_course(ROOT).modules]
    meter = Meter()
    scratch = Path(tempfile.mkdtemp(prefix="class-work-"))
    samples: dict[str, list[tuple[float, float]]] = {}
    load_before = load()
    try:
        proofs = scratch / "proofs"
        proofs.mkdir()
        env = {"AUTOGRADER_PREFLIGHT_CACHE": str(proofs)}
        klass = scratch / "class"
        n = build_class(klass, 0, modules, args.class_size)
        one = scratch / "one" / "student"
        one.mkdir(parents=True)
        again = [args.again_module]
        (one / f"{again[0]}.py").write_bytes((ROOT / "solutions" / f"{again[0]}.py").read_bytes())
        cached = [args.cache_module]
        (one / f"{cached[0]}.py").write_bytes((ROOT / "solutions" / f"{cached[0]}.py").read_bytes())
        # the proofs every later call reuses (the modules are part of a proof's key: one per call made below)
        meter.run(grade_cmd(one.parent, scratch / "prove-1", again, 1), env)
        if "cache" not in skip:
            meter.run(grade_cmd(one.parent, scratch / "prove-c", cached, 1), env)
        meter.run(grade_cmd(one.parent, scratch / "prove-j", modules, args.jobs), env)
        baseline = str(args.baseline.resolve() / ".venv" / "bin" / "python") if args.baseline else None
        if baseline:
            (scratch / "proofs-baseline").mkdir()
            base_env = {"AUTOGRADER_PREFLIGHT_CACHE": str(scratch / "proofs-baseline")}
            meter.run(grade_cmd(one.parent, scratch / "prove-b", again, 1, baseline), base_env, cwd=args.baseline)
            if "cache" not in skip:
                meter.run(grade_cmd(one.parent, scratch / "prove-bc", cached, 1, baseline), base_env, cwd=args.baseline)
            if "class" not in skip:
                meter.run(
                    grade_cmd(one.parent, scratch / "prove-bj", modules, args.jobs, baseline),
                    base_env,
                    cwd=args.baseline,
                )
        grades: dict[str, bytes] = {}
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds} (load {load()})", flush=True)
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            if "again" not in skip and baseline:
                samples.setdefault("floor", []).append(meter.run([PYTHON, "-c", FLOOR])[:2])
                # the first call (untimed): what a second call may reuse is there, whatever row a) removed
                meter.run(
                    grade_cmd(one.parent, scratch / f"first-baseline-{r}", again, 1, baseline),
                    base_env,
                    cwd=args.baseline,
                )
                wall, cpu, log = meter.run(
                    grade_cmd(one.parent, scratch / f"again-baseline-{r}", again, 1, baseline),
                    base_env,
                    cwd=args.baseline,
                )
                samples.setdefault("again_baseline", []).append((wall, cpu))
                print(f"  a second call, baseline: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
            if "again" not in skip:
                for mode in order:
                    samples.setdefault("floor", []).append(meter.run([PYTHON, "-c", FLOOR])[:2])
                    mode_env = {**env, SWITCH: "1" if mode == "on" else "0"}
                    if mode == "on":  # the untimed first call (with the sharing off nothing is kept for a second)
                        meter.run(grade_cmd(one.parent, scratch / f"first-{mode}-{r}", again, 1), mode_env)
                    wall, cpu, log = meter.run(grade_cmd(one.parent, scratch / f"again-{mode}-{r}", again, 1), mode_env)
                    if REUSED not in log:
                        print("  (the call proved the pre-flight again)", flush=True)
                    samples.setdefault(f"again_{mode}", []).append((wall, cpu))
                    print(f"  a second call, sharing {mode}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
                samples.setdefault("floor", []).append(meter.run([PYTHON, "-c", FLOOR])[:2])
            if "cache" not in skip:
                trees = [("this", PYTHON, env, None)] + (
                    [("baseline", baseline, base_env, args.baseline)] if baseline else []
                )
                for tree, python, tree_env, cwd in trees if r % 2 == 0 else trees[::-1]:
                    kept = scratch / f"jax-cache-{tree}-{r}"
                    keep = ["--jax-cache", str(kept)]
                    first = grade_cmd(one.parent, scratch / f"cache-first-{tree}-{r}", cached, 1, python)
                    meter.run(first + keep, tree_env, cwd=cwd)  # untimed: fills the kept cache
                    before = count_files(kept)
                    again_cmd = grade_cmd(one.parent, scratch / f"cache-again-{tree}-{r}", cached, 1, python)
                    wall, cpu, log = meter.run(again_cmd + keep, tree_env, cwd=cwd)
                    again_compiled = count_files(kept) - before
                    samples.setdefault(f"cache_{tree}", []).append((wall, cpu, again_compiled, before))
                    print(
                        f"  a regrade with --jax-cache, {tree}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                        f"{again_compiled} of {before} kept programs compiled again",
                        flush=True,
                    )
            if "class" not in skip and baseline:
                forget_answers(scratch / "proofs-baseline")  # the baseline's class graded for the first time too
                out = scratch / f"class-baseline-{r}"
                wall, cpu, log = meter.run(
                    grade_cmd(klass, out, modules, args.jobs, baseline), base_env, cwd=args.baseline
                )
                samples.setdefault("class_baseline", []).append((wall / n, cpu / n))
                grades[f"baseline-{r}"] = (out / "grades.csv").read_bytes()
                print(f"  class, baseline: {wall:.0f} s wall, {cpu:.0f} s CPU", flush=True)
            if "class" not in skip:
                for mode in order:
                    forget_answers(proofs)  # a class graded for the first time: no verifier's answer kept before
                    out = scratch / f"class-{mode}-{r}"
                    wall, cpu, log = meter.run(
                        grade_cmd(klass, out, modules, args.jobs), {**env, SWITCH: "1" if mode == "on" else "0"}
                    )
                    if REUSED not in log:
                        print("  (the class's call proved the pre-flight again)", flush=True)
                    samples.setdefault(f"class_{mode}", []).append((wall / n, cpu / n))
                    grades[f"{mode}-{r}"] = (out / "grades.csv").read_bytes()
                    print(f"  class, sharing {mode}: {wall:.0f} s wall, {cpu:.0f} s CPU", flush=True)
            print_table(samples, args, n, modules, meter, load_before, grades)  # so far
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def count_files(kept: Path) -> int:
    """The files of every student's folder in a ``--jax-cache`` folder."""
    return sum(1 for p in kept.glob("*/*") if p.is_file())


def print_table(samples, args, n, modules, meter, load_before, grades) -> None:
    def med(key: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[key])

    print()
    print(f"machine: {os.cpu_count()} cores; load before {load_before}, after {load()}; rounds {args.rounds}")
    print(f"CPU counted by: {meter.counted}")
    if "class_on" in samples:
        label = "whole course" if len(modules) == len(load_course(ROOT).modules) else ",".join(modules)
        print(f"a) {label}, class of {n}, --jobs {args.jobs} (median per student)")
        print(f"{'':28s} {'wall s':>8s} {'CPU s':>8s}")
        for mode in ("baseline", "off", "on"):
            if f"class_{mode}" in samples:
                name = "baseline" if mode == "baseline" else f"sharing {mode}"
                print(f"  {name:27s} {med(f'class_{mode}', 0):8.1f} {med(f'class_{mode}', 1):8.1f}")
        if "class_baseline" in samples:
            print(
                f"  on/baseline {'':15s} {med('class_on', 0) / med('class_baseline', 0):8.2f} "
                f"{med('class_on', 1) / med('class_baseline', 1):8.2f}"
            )
        print(
            f"  on/off {'':20s} {med('class_on', 0) / med('class_off', 0):8.2f} "
            f"{med('class_on', 1) / med('class_off', 1):8.2f}"
        )
        ours = {v for k, v in grades.items() if not k.startswith("baseline")}
        print(f"  grades.csv byte-identical across every run of this tree: {len(ours) == 1}")
        if "class_baseline" in samples:
            print(f"  and the baseline's the same bytes: {ours == set(grades.values())}")
    if "again_on" in samples:
        floor = statistics.median(s[0] for s in samples["floor"])
        print(f"b) a second grade call ({args.again_module}, the reference, proof reused) vs the stack-import floor")
        print(f"  floor {floor:.1f} s (median of {len(samples['floor'])})")
        for mode in ("baseline", "off", "on"):
            if f"again_{mode}" not in samples:
                continue
            wall, cpu = med(f"again_{mode}", 0), med(f"again_{mode}", 1)
            name = "baseline" if mode == "baseline" else f"sharing {mode}"
            print(f"  {name:12s} {wall:6.1f} s wall {cpu:6.1f} s CPU  {wall / floor:5.2f}x the floor")
        if "again_baseline" in samples:
            ratio = med("again_on", 0) / med("again_baseline", 0)
            print(
                f"  this/baseline (sharing on): {ratio:.2f} wall, {med('again_on', 1) / med('again_baseline', 1):.2f} CPU"
            )
    if "cache_this" in samples:
        print(f"c) a regrade with --jax-cache ({args.cache_module}, the reference; its first call kept the cache)")
        for tree in ("baseline", "this"):
            if f"cache_{tree}" in samples:
                wall, cpu = med(f"cache_{tree}", 0), med(f"cache_{tree}", 1)
                again, kept = med(f"cache_{tree}", 2), med(f"cache_{tree}", 3)
                print(
                    f"  {tree:12s} {wall:6.1f} s wall {cpu:6.1f} s CPU  {again:.0f} of {kept:.0f} kept programs compiled again"
                )
        if "cache_baseline" in samples:
            print(
                f"  this/baseline: {med('cache_this', 0) / med('cache_baseline', 0):.2f} wall, "
                f"{med('cache_this', 1) / med('cache_baseline', 1):.2f} CPU"
            )


if __name__ == "__main__":
    main()
