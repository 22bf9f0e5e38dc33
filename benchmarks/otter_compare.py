"""The kit's grading beside otter-grader's, in one run: one submission, a class, the Gradescope path.

    python benchmarks/otter_compare.py [--quick] [--rounds N] [--class-size N] [--otter-version 7.0.0]
                                       [--gradescope-only] [--baseline CHECKOUT]

otter-grader is installed into a throwaway venv of its own (``~/.cache/autograder/otter-venv/<version>``: otter
and the libraries the ``at_updates`` checks import, at the versions of the kit's environment). Its autograder for
``at_updates`` is a minimal, fair port of the kit's checks: for each function a handful of value checks on fixed
inputs, the expected values computed here from the course's reference (OK-format test files, ``otter generate`` ->
``autograder.zip``). otter grades a ``.py`` script submission as it is (``otter run``: the script is executed,
then the tests run in its globals). otter's checks are values only: no purity, jit or retrace checks, no
hypothesis inputs, no trusted re-verification, no sandbox, no limits.

Rounds alternate the two graders (kit, otter, kit, otter, ...) and the stack-import floor (``speed.py``'s FLOOR)
is measured at the start of each round; the table shows medians, kit/otter and each/floor. Rows:

a) one submission (the reference) graded alone: ``autograder grade`` of a one-student folder (``--only
   at_updates``) with a fresh pre-flight proof cache (the first call proves the pre-flight), then the same call
   again (it reuses the kept proof), vs ``otter run -a autograder.zip at_updates.py``;
b) a class of ``--class-size`` (benchmarks/grade_class.py's mix: correct, stub, wrong, broken) at ``--jobs 2``
   vs ``otter run`` on each submission one after another;
c) Gradescope: the bundle's ``run_autograder`` (``python -m autograder.platforms.gradescope --root ROOT``, with
   this venv as ``AUTOGRADER_PYTHON`` and the grader's pre-flight run once as setup.sh's last line does) vs
   ``otter run`` on the same submission (what otter's own Gradescope ``run_autograder`` runs). The submission is
   the reference with a comment of its own (a student's correct file: no answer of setup.sh's verifier fits it).
   ``--gradescope-only``: this row alone; ``--baseline CHECKOUT``: the same row of another checkout of the kit (its
   own ``.venv`` and bundle, its own setup.sh's proof) in the same rounds, and this checkout's ratio to it.

CPU seconds are those of a cpuacct control group made for each command (cgroup v1), which counts every process
the command starts, sandboxed ones included; where none can be made, the children's rusage (which misses
processes reaped by others, e.g. inside bubblewrap's pid namespace) and the table says so.
Not a test: the figures depend on the machine and its load. Run as root (the kit sandboxes students as root).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_class import build as build_class  # noqa: E402
from speed import FLOOR  # noqa: E402

from autograder.core.course import load_course  # noqa: E402
from autograder.grading.preflight.confirmations import CONFIRMED  # noqa: E402

PYTHON = sys.executable
MODULE = "at_updates"
USER = "nobody"
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
REUSED = "reused: --preflight proves again"  # autograder.grading.preflight.REUSED

# Fixed inputs per function (numpy-able literals); the expected values come from the course's reference.
CASES: dict[str, list[tuple[str, ...]]] = {
    "set_diagonal": [
        ("jnp.zeros((2, 2))", "1.0"),
        ("jnp.arange(9.0).reshape(3, 3)", "-7.5"),
        ("jnp.linspace(-1.0, 1.0, 16).reshape(4, 4)", "0.25"),
    ],
    "scatter_add": [
        ("jnp.zeros(3)", "jnp.array([1, 1])", "jnp.array([2.0, 5.0])"),
        ("jnp.arange(5.0)", "jnp.array([0, 4, 2])", "jnp.array([1.0, 2.0, 3.0])"),
        ("jnp.ones(4)", "jnp.array([3, 3, 3, 0])", "jnp.array([0.5, 0.5, 0.5, -1.0])"),
    ],
    "clamp_at": [
        ("jnp.array([-5.0, 0.0, 5.0])", "jnp.array([0, 2])", "-1.0", "1.0"),
        ("jnp.array([3.0, -3.0, 0.5, 9.0])", "jnp.array([1, 1, 3])", "-2.0", "2.0"),
        ("jnp.linspace(-4.0, 4.0, 6)", "jnp.array([5, 0, 2])", "0.0", "0.5"),
    ],
    "replace_negatives": [
        ("jnp.array([-1.0, 2.0, -3.0])", "0.0"),
        ("jnp.array([[-1.0, 1.0], [2.0, -2.0]])", "9.0"),
        ("jnp.linspace(-2.0, 2.0, 7)", "-0.5"),
    ],
}


# -- otter's side ----------------------------------------------------------------------------------------------
def kit_pins() -> list[str]:
    """The libraries the at_updates checks import, at the kit environment's versions."""
    from importlib.metadata import version

    return [f"{name}=={version(name)}" for name in ("jax", "jaxlib", "numpy")]


def otter_venv(version: str) -> Path:
    """otter-grader ``version`` and the course's stack in a venv of their own, kept between runs."""
    venv = Path.home() / ".cache" / "autograder" / "otter-venv" / version
    # otter runs a .py submission as a one-cell notebook in a Jupyter kernel: ipykernel's python3
    wanted = " ".join([f"otter-grader=={version}", "ipykernel", *kit_pins()])
    marker = venv / ".installed"
    if marker.exists() and marker.read_text() == wanted:
        return venv
    print(f"installing {wanted} into {venv} ...", flush=True)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *wanted.split()], check=True)
    marker.write_text(wanted)
    return venv


EXPECTED = """
import json, sys
import jax.numpy as jnp, numpy as np
from solutions import at_updates as reference
cases = json.loads(sys.argv[1])
print(json.dumps({
    name: [np.asarray(eval(f"{name}({', '.join(args)})", {"jnp": jnp, name: getattr(reference, name)})).tolist()
           for args in calls]
    for name, calls in cases.items()
}))
"""


def otter_tests(dest: Path) -> int:
    """One OK-format test file per function of the module: the reference's values on the fixed inputs."""
    # computed in a process of their own: this one forks its commands, and JAX started here would not survive that
    done = subprocess.run([PYTHON, "-c", EXPECTED, json.dumps(CASES)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the reference's values: {done.stderr[-2000:]}")
    expected_values = json.loads(done.stdout)
    course = load_course(ROOT)
    dest.mkdir(parents=True)
    count = 0
    for fn in course.module(MODULE).functions:
        cases = []
        for args, expected in zip(CASES[fn.name], expected_values[fn.name], strict=True):
            call = f"{fn.name}({', '.join(args)})"
            code = (
                ">>> import numpy as _np, jax.numpy as jnp\n"
                f">>> _out = _np.asarray({call})\n"
                f">>> bool(_out.shape == _np.asarray({expected!r}).shape and _np.allclose(_out, {expected!r}))\n"
                "True"
            )
            cases.append({"code": code, "hidden": False, "locked": False})
            count += 1
        test = {
            "name": fn.name,
            "points": fn.points,
            "suites": [{"cases": cases, "scored": True, "setup": "", "teardown": "", "type": "doctest"}],
        }
        (dest / f"{fn.name}.py").write_text(f"OK_FORMAT = True\n\ntest = {test!r}\n")
    return count


def otter_autograder(venv: Path, work: Path) -> tuple[Path, int]:
    work.mkdir(parents=True)
    count = otter_tests(work / "tests")
    cmd = [str(venv / "bin" / "otter"), "generate", "-t", "tests", "-o", "autograder.zip"]
    cmd += ["--no-config", "--no-requirements", "--no-environment"]
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"otter generate failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return work / "autograder.zip", count


# -- measuring -------------------------------------------------------------------------------------------------
class Meter:
    """Wall and CPU seconds of one command and everything it starts."""

    def __init__(self) -> None:
        self.serial = 0
        self.cgroup = False
        try:
            probe = CPUACCT / f"otter-compare-{os.getpid()}-probe"
            probe.mkdir()
            probe.rmdir()
            self.cgroup = True
        except OSError:
            pass
        self.counted = (
            "cpuacct cgroup of each command (every process it starts)"
            if self.cgroup
            else "children's rusage (misses processes reaped inside sandboxes)"
        )

    def run(self, cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> tuple[float, float, str]:
        self.serial += 1
        group = CPUACCT / f"otter-compare-{os.getpid()}-{self.serial}"
        preexec = None
        if self.cgroup:
            group.mkdir()
            procs = str(group / "cgroup.procs")

            def preexec() -> None:
                with open(procs, "w") as f:
                    f.write(str(os.getpid()))

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, preexec_fn=preexec
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if self.cgroup:
            cpu = int((group / "cpuacct.usage").read_text()) / 1e9
            for _ in range(50):  # empty once the command's last process is gone
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        if done.returncode not in (0, 1):
            sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
            raise SystemExit(f"benchmark command failed ({done.returncode}): {' '.join(cmd)}")
        return wall, cpu, done.stdout + done.stderr


# -- the run ---------------------------------------------------------------------------------------------------
def grade_cmd(folder: Path, out: Path, *extra: str) -> list[str]:
    return [PYTHON, "-m", "autograder", "grade", str(folder), "--out", str(out), "--only", MODULE, *extra]


def forget_answers(proofs: Path) -> None:
    """The verifier's answers kept by earlier calls, removed (``autograder.grading.preflight.confirmations``): the
    proofs and plans stay."""
    shutil.rmtree(proofs / CONFIRMED, ignore_errors=True)


def lay_out_gradescope(
    scratch: Path, submission: str, meter: Meter, proofs: Path, python: str = PYTHON, checkout: Path = ROOT
) -> Path:
    """A Gradescope root as tests/system/test_gradescope.py lays it out, and setup.sh's pre-flight run once
    (``python`` and ``checkout``: a baseline's)."""
    name = "gradescope" if checkout == ROOT else "gradescope-baseline"
    bundle = scratch / f"{name}.zip"
    subprocess.run(
        [python, "-m", "autograder", "gradescope", str(bundle), "--course", str(checkout), "--only", MODULE],
        cwd=checkout,
        check=True,
        capture_output=True,
    )
    root = scratch / f"{name}-root"
    root.mkdir(mode=0o755)
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "submission" / f"{MODULE}.py").write_text(submission)
    setup = [python, "-m", "autograder.platforms.gradescope", "--root", str(root), "--preflight", "--run-as", USER]
    wall, _, _ = meter.run(setup, {"AUTOGRADER_PREFLIGHT_CACHE": str(proofs)}, cwd=root / "source")
    print(f"({name} setup: the grader's pre-flight, once, {wall:.0f} s)", flush=True)
    return root


def kit_score(out: Path) -> str:
    import csv

    with open(out / "grades.csv", newline="") as f:
        row = next(csv.DictReader(f))
    return next((row[k] for k in ("final_score", "total", "score") if k in row), json.dumps(row))


def otter_score(out: Path) -> str:
    results = json.loads((out / "results.json").read_text())
    return f"{sum(t.get('score') or 0 for t in results['tests']):g}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, a class of 4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--class-size", type=int, default=16)
    parser.add_argument("--otter-version", default="7.0.0")
    parser.add_argument("--gradescope-only", action="store_true", help="only row c (the Gradescope path)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also row c of another checkout of the kit (its own .venv), alternated in the same rounds",
    )
    args = parser.parse_args()
    rounds, size = (1, 4) if args.quick else (args.rounds, args.class_size)

    load_before = load()
    venv = otter_venv(args.otter_version)
    otter = str(venv / "bin" / "otter")
    meter = Meter()
    scratch = Path(tempfile.mkdtemp(prefix="otter-compare-"))
    samples: dict[str, list[tuple[float, float]]] = {}
    notes: list[str] = []

    def add(key: str, wall: float, cpu: float) -> None:
        samples.setdefault(key, []).append((wall, cpu))

    try:
        zip_path, n_checks = otter_autograder(venv, scratch / "otter")
        reference = (ROOT / "solutions" / f"{MODULE}.py").read_text()
        one = scratch / "one" / "student"
        one.mkdir(parents=True)
        (one / f"{MODULE}.py").write_text(reference)
        submission = scratch / f"{MODULE}.py"
        submission.write_text(reference)
        klass = scratch / "class"
        n = build_class(klass, 0, [MODULE], size)
        students = sorted(p / f"{MODULE}.py" for p in klass.iterdir())
        gs_proofs = Path(tempfile.mkdtemp(dir=scratch, prefix="gs-proofs-"))
        # a student's own correct file (not the reference byte for byte: nothing the pre-flight's verifier was asked)
        own = reference + "\n# my own copy\n"
        gs_root = lay_out_gradescope(scratch, own, meter, gs_proofs)
        gs_env = {
            "AUTOGRADER_ROOT": str(gs_root),
            "AUTOGRADER_PYTHON": PYTHON,
            "AUTOGRADER_USER": USER,
            "AUTOGRADER_PREFLIGHT_CACHE": str(gs_proofs),
        }
        base_env = None
        if args.baseline is not None:
            base = args.baseline.resolve()
            base_python = str(base / ".venv" / "bin" / "python")
            base_proofs = Path(tempfile.mkdtemp(dir=scratch, prefix="gs-proofs-baseline-"))
            base_root = lay_out_gradescope(scratch, own, meter, base_proofs, base_python, base)
            base_env = {**gs_env, "AUTOGRADER_ROOT": str(base_root), "AUTOGRADER_PYTHON": base_python}
            base_env["AUTOGRADER_PREFLIGHT_CACHE"] = str(base_proofs)

        def otter_run(path: Path) -> tuple[float, float, Path]:
            out = Path(tempfile.mkdtemp(dir=scratch, prefix="otter-out-"))
            wall, cpu, _ = meter.run([otter, "run", "-a", str(zip_path), "-o", str(out), "--no-logo", str(path)])
            return wall, cpu, out

        def one_and_class(r: int) -> None:
            """Rows a and b of round ``r``."""
            # a) one submission: the first call proves the pre-flight (a fresh proof cache), the second reuses it
            proofs = Path(tempfile.mkdtemp(dir=scratch, prefix="proofs-"))
            env = {"AUTOGRADER_PREFLIGHT_CACHE": str(proofs)}
            out1, out2 = scratch / f"kit-one-{r}-a", scratch / f"kit-one-{r}-b"
            wall, cpu, log = meter.run(grade_cmd(one.parent, out1), env)
            add("kit_one_first", wall, cpu)
            if REUSED in log:
                notes.append(f"round {r + 1}: the first call reused a proof (expected to prove)")
            wall, cpu, out = otter_run(submission)
            add("otter_one", wall, cpu)
            if r == 0:
                notes.append(f"reference: kit total {kit_score(out1)}, otter {otter_score(out)} points")
            wall, cpu, log = meter.run(grade_cmd(one.parent, out2), env)
            add("kit_one_again", wall, cpu)
            if REUSED not in log:
                notes.append(f"round {r + 1}: the second call proved the pre-flight again")
            add("otter_one", *otter_run(submission)[:2])
            # b) the class at --jobs 2 (its pre-flight: the proof of the calls above, reused if the key matches), with
            # no verifier's answer kept by an earlier call (a class graded for the first time)
            forget_answers(proofs)
            wall, cpu, log = meter.run(grade_cmd(klass, scratch / f"kit-class-{r}", "--jobs", "2"), env)
            add("kit_class", wall, cpu)
            if REUSED not in log and r == 0:
                notes.append("the class's grade proved its own pre-flight (--jobs 2 is part of the proof's key)")
            wall = cpu = 0.0
            for path in students:
                w, c, _ = otter_run(path)
                wall, cpu = wall + w, cpu + c
            add("otter_class", wall, cpu)

        for r in range(rounds):
            print(f"round {r + 1}/{rounds} (load {load()})", flush=True)
            add("floor", *meter.run([PYTHON, "-c", FLOOR])[:2])
            if not args.gradescope_only:
                one_and_class(r)
            # c) Gradescope's run_autograder (setup.sh's proof reused) vs otter run on the same file; every submission
            # runs in a fresh container of the image setup.sh built: no verifier's answer of an earlier one is there
            forget_answers(gs_proofs)
            wall, cpu, log = meter.run(["bash", str(gs_root / "run_autograder")], gs_env, cwd=gs_root)
            add("kit_gradescope", wall, cpu)
            if REUSED not in log:
                notes.append(f"round {r + 1}: run_autograder proved the pre-flight again")
            score = json.loads((gs_root / "results" / "results.json").read_text())["score"]
            if r == 0:
                notes.append(f"Gradescope results.json score of the reference: {score:g}")
            add("otter_gradescope", *otter_run(submission)[:2])
            if base_env is not None:  # the baseline's run_autograder, its own setup.sh's proof reused
                forget_answers(Path(base_env["AUTOGRADER_PREFLIGHT_CACHE"]))
                wall, cpu, log = meter.run(["bash", str(base_root / "run_autograder")], base_env, cwd=base_root)
                add("base_gradescope", wall, cpu)
        print_table(samples, rounds, n, n_checks, args.otter_version, meter, load_before, notes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def print_table(samples, rounds, n, n_checks, otter_version, meter, load_before, notes) -> None:
    from importlib.metadata import version

    def med(key: str, i: int = 0) -> float:
        return statistics.median(s[i] for s in samples[key])

    def spread(key: str) -> str:
        """The rounds' range of wall seconds (how far the load moved them)."""
        walls = [s[0] for s in samples[key]]
        return f" ({min(walls):.1f}–{max(walls):.1f})" if len(walls) > 1 else ""

    floor = med("floor")
    rows = [
        ("one submission, first call (proves the pre-flight)", "kit_one_first", "otter_one"),
        ("one submission, second call (reuses the proof)", "kit_one_again", "otter_one"),
        (f"class of {n}, kit --jobs 2, otter one after another", "kit_class", "otter_class"),
        ("Gradescope: run_autograder vs otter run", "kit_gradescope", "otter_gradescope"),
        ("Gradescope: the baseline's run_autograder", "base_gradescope", "otter_gradescope"),
    ]
    rows = [row for row in rows if row[1] in samples]
    print()
    print(f"floor (import the stack, one JAX op): {floor:.1f} s wall, {med('floor', 1):.1f} s CPU (median)")
    print()
    print("| path | kit s | otter s | kit/otter | kit/floor | otter/floor | kit CPU s | otter CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, kit, ott in rows:
        k, o = med(kit), med(ott)
        print(
            f"| {label} | {k:.1f}{spread(kit)} | {o:.1f}{spread(ott)} | {k / o:.1f} | {k / floor:.1f} | {o / floor:.1f} "
            f"| {med(kit, 1):.1f} | {med(ott, 1):.1f} |"
        )
    if "kit_class" in samples:
        k, o = med("kit_class") / n, med("otter_class") / n
        print(
            f"| ... per submission of the class | {k:.1f} | {o:.1f} | {k / o:.1f} | {k / floor:.1f} | {o / floor:.1f} | | |"
        )
    if "base_gradescope" in samples:
        k, b = med("kit_gradescope"), med("base_gradescope")
        print(
            f"\nGradescope, this checkout / the baseline: {k / b:.2f} wall, {med('kit_gradescope', 1) / med('base_gradescope', 1):.2f} CPU"
        )
    print()
    print(f"medians (and ranges) of {rounds} round(s), kit and otter alternated; CPU counted by {meter.counted}")
    print(
        f"otter's side: {n_checks} value checks on fixed inputs (OK format, expected values from the reference); "
        "no purity, jit or retrace checks, no hypothesis inputs, no trusted verification, no sandbox or limits. "
        "The kit's side: its full checks of the module in bubblewrap sandboxes with the trusted verifier."
    )
    for note in notes:
        print(f"note: {note}")
    print(
        f"machine: {os.cpu_count()} CPUs (nproc), {platform.machine()}, Python {platform.python_version()}; "
        f"load average before {load_before}, after {load()}"
    )
    print(
        f"versions: otter-grader {otter_version}, jax {version('jax')}, jaxlib {version('jaxlib')}, "
        f"numpy {version('numpy')}, kit {version('jax-course-autograder')}"
    )


if __name__ == "__main__":
    main()
