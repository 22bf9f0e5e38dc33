"""Grading a class: every student folder, in parallel, each in its own sandboxed process.

For one submission (:func:`grade_submission`):

1. the student's ``<module>.py`` files are read (regular files only, at most
   1 MB; nothing else of the folder is used) into a fresh scratch folder next
   to a private copy of the course and the kit (:mod:`autograder.grading.sandbox`);
2. a grading process runs the checks and streams claims; when it hangs,
   crashes, exits or blows its memory, the function (or the module import) it
   was in gets a clear failure, and a new process grades what is left;
3. the correctness checks it claims to pass are re-run on the trusted side
   (:mod:`autograder.grading.verifier`); a pass that is not confirmed is a failure;
4. the outcomes become points with :func:`autograder.pytest_plugin.report.score_functions`.

:func:`grade_class` runs that over a thread pool (one supervised process per
worker at a time), shows a progress line on a terminal, and never lets an
error lose a student's row.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from autograder.pytest_plugin import report
from autograder.grading import sandbox
from autograder.core import compile_cache
from autograder.core.course import Course

MAX_FILE_BYTES = 1_000_000
VERIFY_TIMEOUT = 600.0


@dataclass(frozen=True)
class Check:
    id: str  # "<module>::<test name>"
    module: str
    function: str
    correctness: bool


@dataclass
class Options:
    modules: tuple[str, ...]
    timeout_per_function: float
    memory_mb: int
    jobs: int
    cache_dir: Path | None = None
    zygote: bool = True  # fork grading children from a pre-imported process per worker
    run_as: str | None = None  # start untrusted processes as this unprivileged user (grader runs as root)


@dataclass
class StudentResult:
    student: str
    scores: list[report.FunctionScore]
    outcomes: list[report.CheckOutcome] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # for benchmarks; never written to the outputs


class Grader:
    """Everything shared by the runs of one ``grade`` command."""

    def __init__(self, course: Course, options: Options, snapshot: sandbox.Snapshot | None = None):
        self.course = course
        self.options = options
        self.snapshot = snapshot or sandbox.Snapshot.take(course.root)
        self.run_as = sandbox.RunAs.lookup(options.run_as) if options.run_as else None
        self._own_cache = options.cache_dir is None
        self.cache_dir = sandbox.scratch_dir() if self._own_cache else Path(options.cache_dir)
        self.env = sandbox.child_env(_cache_env(self.cache_dir))
        if self.run_as:
            self.run_as.give(self.cache_dir)
            self.env["HOME"] = str(self.cache_dir)
        # The trusted side has its own compilation cache, whose path no student process is given.
        self.trusted_cache_dir = sandbox.scratch_dir()
        self.trusted_env = sandbox.child_env(_cache_env(self.trusted_cache_dir))
        self._local = threading.local()
        self._zygotes: list[tuple[sandbox.Zygote, Path]] = []
        self._lock = threading.Lock()
        self.plan = self._plan()
        self.function_of = {c.id: f"{c.module}.{c.function}" for c in self.plan}

    def _starter(self, kit: Path):
        """How this worker thread starts a grading child: its zygote, or a fresh interpreter."""
        if not self.options.zygote:
            return sandbox.start_direct("autograder.grading.child", kit, self.env, self.options.memory_mb, self.run_as)
        return self._zygote("zygote", self.env, self.options.memory_mb).start

    def close(self) -> None:
        with self._lock:
            for zygote, scratch in self._zygotes:
                zygote.close()
                shutil.rmtree(scratch, ignore_errors=True)
            self._zygotes.clear()
        if self._own_cache:
            shutil.rmtree(self.cache_dir, ignore_errors=True)
        shutil.rmtree(self.trusted_cache_dir, ignore_errors=True)

    # -- trusted side -----------------------------------------------------
    def _trusted(self, cfg: dict, timeout: float) -> dict:
        """Run :mod:`autograder.grading.verifier` (never student code) on a fresh private copy of the course."""
        scratch = sandbox.scratch_dir()
        try:
            course_root, kit = self.snapshot.materialize(scratch)
            work = scratch / "work"
            work.mkdir()
            out = scratch / "verdicts.json"
            cfg = dict(cfg, course_root=str(course_root), modules=list(self.options.modules), out=str(out), kit=str(kit))
            zygote = self._zygote("trusted_zygote", self.trusted_env, None) if self.options.zygote else None
            if zygote is not None:
                cfg["target"] = "autograder.grading.verifier"
                sandbox.run_to_end(zygote, work, cfg, scratch / "stderr.txt", timeout)
            else:
                proc = sandbox.run_python(
                    "autograder.grading.verifier", kit, work, cfg, memory_mb=None, env=self.trusted_env, stderr_path=scratch / "stderr.txt"
                )
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    sandbox.kill_group(proc)
            if not out.is_file():
                raise RuntimeError(f"the trusted grader failed:\n{sandbox._tail(scratch / 'stderr.txt')}")
            return json.loads(out.read_text(encoding="utf-8"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _zygote(self, slot: str, env: dict[str, str], memory_mb: int | None) -> sandbox.Zygote:
        """This worker thread's zygote for ``slot`` (started on first use, restarted if it died)."""
        zygote = getattr(self._local, slot, None)
        if zygote is None or not zygote.alive():
            scratch = sandbox.scratch_dir()
            _, kit = self.snapshot.materialize(scratch, solutions=False)
            run_as = self.run_as if slot == "zygote" else None  # the trusted zygote stays with the caller
            if run_as:
                run_as.give(scratch)
            zygote = sandbox.Zygote(kit, scratch, env, memory_mb, run_as)
            setattr(self._local, slot, zygote)
            with self._lock:
                self._zygotes.append((zygote, scratch))
        return zygote

    def _plan(self) -> list[Check]:
        data = self._trusted({"mode": "plan"}, VERIFY_TIMEOUT)
        checks = [Check(c["check"], c["module"], c["function"], bool(c["correctness"])) for c in data["plan"]]
        if not checks:
            raise RuntimeError("the course has no checks for the selected modules")
        return checks

    def unconfirmable_functions(self) -> list[str]:
        """Functions with no correctness check: their passes cannot be confirmed by the trusted side."""
        confirmed = {(c.module, c.function) for c in self.plan if c.correctness}
        return [
            fn.qualname for fn in self.course.functions
            if fn.module in self.options.modules and (fn.module, fn.name) not in confirmed
        ]

    def verify(self, claims: list[str], transcripts: dict) -> dict[str, dict]:
        if not claims:
            return {}
        data = self._trusted({"mode": "verify", "checks": claims, "transcripts": transcripts}, VERIFY_TIMEOUT)
        return data["verdicts"]

    # -- one submission ---------------------------------------------------
    def grade_submission(self, student: str, folder: Path) -> StudentResult:
        return self.grade_files(student, *read_submission(folder, self.options.modules))

    def grade_files(self, student: str, files: dict[str, bytes], missing: dict[str, str]) -> StudentResult:
        """Grade a submission already read by :func:`read_submission` (files, and why others are missing)."""
        verdicts: dict[str, tuple[str, str]] = {}  # check id -> (outcome, message)
        transcripts: dict[str, dict] = {}
        timings = {"runs": 0, "run_seconds": 0.0, "verify_seconds": 0.0}
        for check in self.plan:
            if check.module in missing:
                verdicts[check.id] = (report.FAILED, missing[check.module])
        for _attempt in range(len(self.plan) + 1):
            todo = [c for c in self.plan if c.id not in verdicts]
            if not todo:
                break
            started = time.monotonic()
            run = self._run_child(files, sorted({c.module for c in todo}), [c.id for c in self.plan if c.id in verdicts])
            timings["runs"] += 1
            timings["run_seconds"] += time.monotonic() - started
            for event in run.events:
                check = event.get("check")
                if event.get("event") == "end" and check in self.function_of and check not in verdicts:
                    outcome = event.get("outcome")
                    if outcome not in (report.PASSED, report.FAILED, report.NOT_STARTED):
                        outcome = report.FAILED
                    message = event.get("message") if isinstance(event.get("message"), str) else ""
                    verdicts[check] = (outcome, clean_message(message))
                    if outcome == report.PASSED and isinstance(event.get("transcript"), dict):
                        transcripts[check] = event["transcript"]
            if run.fault is None:
                break
            self._blame(run.fault, verdicts, todo)
        for check in self.plan:
            verdicts.setdefault(check.id, (report.FAILED, "this check could not be run on your submission"))
        started = time.monotonic()
        self._confirm(verdicts, transcripts)
        timings["verify_seconds"] = time.monotonic() - started
        outcomes = [
            report.CheckOutcome(c.module, c.function, c.id.split("::", 1)[1], verdicts[c.id][0], c.correctness, verdicts[c.id][1])
            for c in self.plan
        ]
        return StudentResult(student, report.score_functions(self.course, outcomes), outcomes, timings)

    def _run_child(self, files: dict[str, bytes], modules: list[str], skip: list[str]) -> sandbox.RunResult:
        scratch = sandbox.scratch_dir()
        try:
            course_root, kit = self.snapshot.materialize(scratch)
            submission = scratch / "submission"
            submission.mkdir()
            for module, data in files.items():
                (submission / f"{module}.py").write_bytes(data)
            work = scratch / "work"
            work.mkdir()
            if self.run_as:
                self.run_as.give(scratch)
            cfg = {
                "course_root": str(course_root), "submission": str(submission), "modules": modules, "skip": skip,
                "kit": str(kit),
            }
            remaining = {self.function_of[c.id] for c in self.plan if c.module in modules}
            limits = sandbox.Limits(
                self.options.timeout_per_function,
                self.options.memory_mb,
                total_timeout=sandbox.WALL_FACTOR * self.options.timeout_per_function * (len(remaining) + 3) + 120,
            )
            run = sandbox.supervise(self._starter(kit), work, cfg, limits, self.function_of)
            for event in run.events:
                if isinstance(event.get("message"), str):
                    event["message"] = event["message"].replace(str(scratch), "<sandbox>")
            return run
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _blame(self, fault: sandbox.Fault, verdicts: dict, todo: list[Check]) -> None:
        """Fail what the fault affected: the module being imported, else the function being checked."""
        limit = f"{self.options.timeout_per_function:g}"
        how = {
            "timeout": None,
            "memory": f"it used more than {self.options.memory_mb} MB of memory",
            "flood": "it wrote too much into the grader's channel",
            "stalled": "the grading process stopped making progress",
        }.get(fault.kind) or fault.detail
        if fault.module is not None and fault.module in self.options.modules:
            if fault.kind == "timeout":
                message = f"your module could not be imported: importing {fault.module}.py did not finish within {limit} s (an endless loop at the top level?)"
            else:
                message = f"your module could not be imported: importing {fault.module}.py stopped the grader ({how})"
            hit = [c for c in todo if c.module == fault.module]
        elif fault.check in self.function_of:
            qual = self.function_of[fault.check]
            if fault.kind == "timeout":
                message = f"{qual}: timed out after {limit} s (all checks of one function must finish within {limit} s; look for an endless loop or a very slow computation)"
            else:
                message = f"{qual}: the grading process stopped while checking this function: {how}"
            hit = [c for c in todo if f"{c.module}.{c.function}" == qual]
        else:
            message = f"the grader could not run your code: {how}"
            hit = todo
        for check in hit:
            verdicts.setdefault(check.id, (report.FAILED, message))

    def _confirm(self, verdicts: dict, transcripts: dict) -> None:
        claims = [c.id for c in self.plan if c.correctness and verdicts[c.id][0] == report.PASSED]
        if not claims:
            return
        try:
            confirmed = self.verify(claims, {c: transcripts.get(c, {}) for c in claims})
        except Exception as err:  # noqa: BLE001 - never trust an unconfirmed pass
            confirmed = {c: {"outcome": "failed", "message": f"the grader could not confirm this check ({err})"} for c in claims}
        for check in claims:
            verdict = confirmed.get(check, {"outcome": "failed", "message": ""})
            if verdict["outcome"] == "failed":
                qual = self.function_of[check]
                detail = clean_message(verdict.get("message", "")).strip()
                verdicts[check] = (
                    report.FAILED,
                    f"{qual}: your process reported this check as passed, but the grader could not confirm it"
                    + (f":\n{detail}" if detail else ""),
                )

    # -- the class --------------------------------------------------------
    def grade_class(
        self, students: list[tuple[str, Path]], progress: Callable[[int, int], None] | None = None
    ) -> list[StudentResult]:
        results: dict[str, StudentResult] = {}
        with ThreadPoolExecutor(max_workers=max(1, self.options.jobs)) as pool:
            futures = {pool.submit(self.grade_submission, name, folder): name for name, folder in students}
            for future in as_completed(futures):
                name = futures[future]
                try:
                    results[name] = future.result()
                except Exception as err:  # noqa: BLE001 - a grader bug must not lose a row
                    results[name] = self.failed_result(name, f"the grader failed on this submission: {type(err).__name__}: {err}")
                if progress:
                    progress(len(results), len(students))
        return [results[name] for name, _ in sorted(students)]

    def failed_result(self, student: str, message: str) -> StudentResult:
        outcomes = [report.CheckOutcome(c.module, c.function, c.id, report.FAILED, c.correctness, message) for c in self.plan]
        return StudentResult(student, report.score_functions(self.course, outcomes), outcomes)


def _cache_env(cache_dir: Path | None) -> dict[str, str]:
    return compile_cache.environment(cache_dir)


def find_students(submissions: Path) -> list[tuple[str, Path]]:
    """Every visible sub-folder of ``submissions`` is a student, named after the folder."""
    return sorted((p.name, p) for p in Path(submissions).iterdir() if p.is_dir() and not p.name.startswith("."))


def read_submission(folder: Path, modules: tuple[str, ...]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The student's ``<module>.py`` files (from ``exercises/`` when the folder has one), and why others are missing."""
    base = folder / "exercises" if (folder / "exercises").is_dir() else folder
    files: dict[str, bytes] = {}
    missing: dict[str, str] = {}
    for module in modules:
        path = base / f"{module}.py"
        name = f"{module}.py"
        if path.is_symlink():
            missing[module] = f"{name} is a symbolic link; submit the file itself"
        elif not path.is_file():
            missing[module] = f"{name} is missing from your submission"
        elif path.stat().st_size > MAX_FILE_BYTES:
            missing[module] = f"{name} is larger than {MAX_FILE_BYTES // 1000} kB"
        else:
            files[module] = path.read_bytes()
    return files, missing


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def clean_message(message: str) -> str:
    """Deterministic text: no memory addresses, no ANSI colours, bounded length."""
    message = _ADDRESS.sub("0x…", report.strip_ansi(message))
    return message if len(message) <= 4000 else message[:4000] + "\n  … (message shortened)"


class Progress:
    """``graded 3/10  elapsed 0:42  ETA 1:38`` on one terminal line (stderr), only on a TTY."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        eta = elapsed / done * (total - done) if done else 0.0
        self.stream.write(f"\rgraded {done}/{total} students  elapsed {_clock(elapsed)}  ETA {_clock(eta)}   ")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60}:{seconds % 60:02d}"
