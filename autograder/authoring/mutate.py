"""``autograder mutate``: how many wrong references the checks catch (mutation testing of the checks).

Each mutant (:mod:`autograder.authoring.mutants`: one small change in one graded function of
``solutions/<module>.py``, made by one of cosmic-ray's mutation operators or one of the kit's four) is written as a submission's ``<module>.py`` and the module's checks
run on it, exactly as on a student's file (``pytest exercises/test_<module>.py --submission DIR
--grading -x``): killed when a check fails, survived when every check passes.

Speed: one worker process per module runs every mutant of the module in turn (``pytest.main``
again and again, as the grading verifier does for each student), so JAX, the checks and the
reference are imported and compiled once per module, not once per mutant; ``-x`` stops at the
first failed check, and the checks of the mutated function run first (then the module's others); the modules are spread over ``--jobs`` worker processes (2 by default). A
mutant may loop or hang: the worker is killed when one mutant runs longer than the module's
unmutated run allows (``3 x that + 60 s``), the mutant counts as killed (timeout), and a new
worker goes on with the rest. Every worker first runs the unmutated reference: a module whose
reference fails its checks is reported, not scored.

Survivors are either killed by a new check or listed in ``benchmarks/mutation-equivalent.toml``:
``[[equivalent]]`` (``id``, ``reason``: no correct-by-contract check can tell them apart) is
left out of the score; ``[[killable]]`` (``id``, ``check``: which check would kill it) stays a
survivor and is only annotated in the report. The score of a module is killed / (mutants -
equivalent).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from autograder.authoring.mutants import Mutant, mutants_of
from autograder.authoring.mutation_report import report
from autograder.authoring.mutation_results import (
    ERROR,
    KILLED,
    SURVIVED,
    TIMEOUT,
    Listed,
    ModuleRun,
    Result,
    runs_from_json,
    runs_to_json,
    unclassified,
)
from autograder.core.attribution import matches
from autograder.core.course import Course, load_course

KIT = Path(__file__).resolve().parents[2]


def pytest_args(course: Course, module: str, folder: Path) -> list[str]:
    """The run of one module's checks on the ``<module>.py`` in ``folder``: the grading profile
    (deterministic), stopped at the first failure, in this process."""
    return [
        str(course.checks_path(module)),
        "--submission",
        str(folder),
        "--grading",
        "-x",
        "-q",
        "--tb=no",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-n",
        "0",
        "-W",
        "ignore",
    ]


# -- the worker: one process, every mutant of one module ---------------------------------------


class _FirstFailure:
    """Records the failed checks; runs the checks of the mutated function first (then the rest, in file order):
    with ``-x`` a mutant is killed as soon as its own function's checks see it, instead of after every
    check of the functions before it in the file."""

    def __init__(self, function: str | None = None):
        self.failed: list[str] = []
        self.function = function

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.append(report.nodeid.split("::")[-1])

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        if self.function:
            own = [matches(getattr(item, "originalname", item.name), self.function) for item in items]
            items[:] = [item for item, mine in zip(items, own) if mine] + [
                item for item, mine in zip(items, own) if not mine
            ]


def worker(root: Path, module: str, plan: Path, results: Path) -> None:
    """Run the module's checks on every folder of ``plan`` (JSON ``[[index, folder, function], ...]``), one
    JSON line per run appended to ``results``: ``{"index", "code", "seconds", "check"}``."""
    import contextlib
    import io

    course = load_course(root)
    os.chdir(root)
    with open(results, "a", encoding="utf-8") as out:
        for index, folder, function in json.loads(plan.read_text()):
            out.write(json.dumps({"index": index, "started": True}) + "\n")
            out.flush()
            started = time.monotonic()
            spy = _FirstFailure(function)
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                code = pytest.main(pytest_args(course, module, Path(folder)), plugins=[spy])
            out.write(
                json.dumps(
                    {
                        "index": index,
                        "code": int(code),
                        "seconds": time.monotonic() - started,
                        "check": spy.failed[0] if spy.failed else "",
                        "tail": "" if int(code) in (0, 1) else sink.getvalue()[-2000:],
                    }
                )
                + "\n"
            )
            out.flush()


# -- the parent: mutants, workers, timeouts --------------------------------------------------


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(KIT), env.get("PYTHONPATH")]))
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _read(results: Path) -> list[dict]:
    if not results.is_file():
        return []
    return [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.endswith("}")]


def run_module(course: Course, module: str, mutants: list[Mutant], scratch: Path, *, log=None) -> ModuleRun:
    """Every mutant of ``module`` through its checks (see the module's docstring)."""
    run = ModuleRun(module)
    started = time.monotonic()
    folders = _folders(course, module, mutants, scratch)
    done: dict[int, dict] = {}
    limit = 600.0  # the unmutated run's first limit; then 3x its time + 60 s
    attempt = 0
    while len(done) < len(folders):
        attempt += 1
        todo = [f for f in folders if f[0] not in done]
        plan, results = scratch / f"plan{attempt}.json", scratch / f"results{attempt}.jsonl"
        plan.write_text(json.dumps(todo))
        proc = _start_worker(course, module, plan, results, scratch / f"worker{attempt}.log")
        current, since = None, time.monotonic()
        while True:
            exited = proc.poll() is not None
            for line in _read(results):
                if "started" in line:
                    if line["index"] not in done and line["index"] != current:
                        current, since = line["index"], time.monotonic()
                elif line["index"] not in done:
                    done[line["index"]] = line
                    if line["index"] == -1:
                        run.baseline_seconds = line["seconds"]
                        limit = 3 * line["seconds"] + 60
                        if line["code"] != 0:
                            run.problem = (
                                f"the reference fails its own checks (pytest exit {line['code']}: {line['check']})"
                            )
                            os.killpg(proc.pid, signal.SIGKILL)
                            proc.wait()
                            run.seconds = time.monotonic() - started
                            return run
                    if log and line["index"] >= 0:
                        log(f"{module}: {len(done) - 1}/{len(mutants)}")
            if exited:
                if current is not None and current not in done:  # the mutant took its process down
                    done[current] = _ended(current, -9, since, "(process died)")
                elif len([f for f in folders if f[0] not in done]) and current is None:
                    log_text = (scratch / f"worker{attempt}.log").read_text()[-1500:]
                    run.problem = f"the worker did not start:\n{log_text}"
                    run.seconds = time.monotonic() - started
                    return run
                break
            if current is not None and current not in done and time.monotonic() - since > limit:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                done[current] = _ended(current, -1, since, "(timeout)")
                break
            time.sleep(0.2)
    run.results += [_result(mutant, done[i]) for i, mutant in enumerate(mutants)]
    run.seconds = time.monotonic() - started
    return run


def _folders(course: Course, module: str, mutants: list[Mutant], scratch: Path) -> list[tuple[int, str, str | None]]:
    """The worker's plan: ``(index, folder, mutated function)``, the reference's folder (index -1) first, then one
    folder per mutant, each holding its ``<module>.py``."""
    folders: list[tuple[int, str, str | None]] = []
    reference = scratch / "reference"
    reference.mkdir(parents=True)
    (reference / f"{module}.py").write_bytes(course.solution_path(module).read_bytes())
    folders.append((-1, str(reference), None))
    for i, mutant in enumerate(mutants):
        folder = scratch / f"m{i:04d}"
        folder.mkdir()
        (folder / f"{module}.py").write_text(mutant.source, encoding="utf-8")
        folders.append((i, str(folder), mutant.function))
    return folders


def _start_worker(course: Course, module: str, plan: Path, results: Path, log: Path) -> subprocess.Popen:
    """A worker process (:func:`worker`) running ``plan``'s folders, in a session of its own (killed as a group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "autograder.authoring.mutate", str(course.root), module, str(plan), str(results)],
        cwd=course.root,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        start_new_session=True,
    )


def _ended(index: int, code: int, since: float, why: str) -> dict:
    """The line the worker could not write for mutant ``index``: its process died (-9) or was killed (-1)."""
    return {"index": index, "code": code, "seconds": time.monotonic() - since, "check": why}


def _result(mutant: Mutant, line: dict) -> Result:
    """A mutant's :class:`Result` from its worker's line (exit code 0: survived; 1 or a dead process: killed)."""
    outcome = {0: SURVIVED, 1: KILLED, -1: TIMEOUT, -9: KILLED}.get(line["code"], ERROR)
    check = line.get("check", "") or (line.get("tail", "")[-300:] if outcome == ERROR else "")
    return Result(mutant, outcome, line["seconds"], check)


def module_mutants(course: Course, module: str) -> list[Mutant]:
    functions = [fn.name for fn in course.module(module).functions]
    return mutants_of(course.solution_path(module).read_text(encoding="utf-8"), module, functions)


def mutate_course(course: Course, modules: list[str] | None = None, *, jobs: int = 2, log=None) -> list[ModuleRun]:
    """Every module's mutants through its checks, ``jobs`` modules at a time (largest first)."""
    names = modules or [m.name for m in course.modules]
    plans = {name: module_mutants(course, name) for name in names}
    queue = sorted(names, key=lambda n: -len(plans[n]))
    runs: dict[str, ModuleRun] = {}
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="autograder-mutate-") as tmp:

        def take():
            while True:
                with lock:
                    if not queue:
                        return
                    name = queue.pop(0)
                result = run_module(course, name, plans[name], Path(tmp) / name, log=log)
                with lock:
                    runs[name] = result
                    if log:
                        log(f"{name}: done in {result.seconds:.0f} s")

        threads = [threading.Thread(target=take) for _ in range(max(1, jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [runs[n] for n in names]


def main_mutate(
    root: Path,
    modules: list[str] | None,
    *,
    jobs: int,
    listed_path: Path | None,
    report_path: Path | None,
    out=None,
    json_path: Path | None = None,
    from_json: Path | None = None,
) -> int:
    """The command: run (or read a run's ``--json``), print (and write) the report; exit 1 when a survivor is
    neither equivalent nor listed as killable, or a module could not be scored."""
    out = out or sys.stdout
    course = load_course(root)
    unknown = [m for m in modules or () if m not in {mod.name for mod in course.modules}]
    if unknown:
        print(f"error: course.toml has no module {unknown}", file=out)
        return 2
    listed = Listed.load(listed_path)
    if from_json is not None:
        data = json.loads(from_json.read_text(encoding="utf-8"))
        runs, seconds, jobs = runs_from_json(data), data["seconds"], data["jobs"]
    else:
        started = time.monotonic()
        runs = mutate_course(course, modules, jobs=jobs, log=lambda text: print(text, file=sys.stderr, flush=True))
        seconds = time.monotonic() - started
        if json_path is not None:
            json_path.write_text(json.dumps(runs_to_json(runs, seconds, jobs), indent=1), encoding="utf-8")
    text = report(runs, listed, seconds=seconds, jobs=jobs)
    if report_path is not None:
        report_path.write_text(text, encoding="utf-8")
    print(text, file=out)
    return 1 if unclassified(runs, listed) or any(run.problem for run in runs) else 0


if __name__ == "__main__":  # the worker: python -m autograder.authoring.mutate ROOT MODULE PLAN RESULTS
    worker(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
