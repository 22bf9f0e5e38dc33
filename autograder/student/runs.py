"""Running one module's checks in a fresh ``pytest`` process, as ``watch`` and ``status --run`` do.

A new process per run means every run imports the student's code as it is
on disk now. What keeps re-runs fast is the plugin's persistent compilation
cache in the student's git-ignored ``.jax_cache/`` (``autograder.runtime.compile_cache``).
:func:`run_modules` runs several modules' processes side by side, one per core
(at most :data:`MAX_PARALLEL_RUNS`): each process spends most of its time in one
thread, importing the stack and compiling.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from autograder.core.course import Course
from autograder.core.outcomes import FunctionScore
from autograder.core.status import Status


@dataclass
class ModuleRun:
    module: str
    functions: list[FunctionScore]
    slow_compiles: dict[str, float]
    seconds: float
    returncode: int
    output: str  # pytest's own output, shown when no results came back (e.g. a broken check file)

    @property
    def first_failure(self) -> FunctionScore | None:
        return next((f for f in self.functions if f.status == Status.FAILED), None)


MAX_PARALLEL_RUNS = 4  # each process holds JAX and its compiled programs: several hundred MB


def checks_environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CI", None)  # the profile is chosen explicitly below
    return env


def run_module(course: Course, module: str, *, grading: bool = False) -> ModuleRun:
    """Run ``exercises/test_<module>.py`` on the student's ``exercises/<module>.py``."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="autograder-run-") as tmp:
        results = Path(tmp) / "results.json"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(course.checks_path(module)),
            "-q",
            "-p",
            "no:cacheprovider",
            "--results-json",
            str(results),
        ]
        if grading:
            cmd.append("--grading")
        proc = subprocess.run(
            cmd,
            cwd=course.root,
            env=checks_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        payload = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    functions = [FunctionScore.from_json(entry) for entry in payload.get("functions", [])]
    return ModuleRun(
        module,
        functions,
        payload.get("slow_compiles", {}),
        time.monotonic() - started,
        proc.returncode,
        proc.stdout + proc.stderr,
    )


def run_modules(
    course: Course, modules: list[str], *, grading: bool = False, jobs: int | None = None
) -> Iterator[ModuleRun]:
    """:func:`run_module` for each of ``modules``, ``jobs`` processes at a time (default: one per core, at most
    :data:`MAX_PARALLEL_RUNS`); the runs are yielded in the order of ``modules``, each once it has ended."""
    jobs = jobs or min(os.cpu_count() or 1, MAX_PARALLEL_RUNS)
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(modules)))) as pool:
        runs = [pool.submit(run_module, course, module, grading=grading) for module in modules]
        for run in runs:
            yield run.result()
