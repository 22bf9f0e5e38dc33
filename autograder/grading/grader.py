"""Grading a class: every student folder, in parallel, each in its own sandboxed process.

For one submission (:func:`grade_submission`):

1. the student's ``<module>.py`` files are read (regular files only, at most
   1 MB; nothing else of the folder is used) into a fresh scratch folder next
   to a private copy of the course and the kit (:mod:`autograder.grading.sandbox`);
2. each module gets its own grading process (so what one module's code does
   to the grader reaches no other module), which runs the checks and streams
   claims; when it hangs, crashes, exits or blows its memory, the function (or
   the module import) it was in gets a clear failure, and a new process grades
   what is left; a module found changing the grader's own functions earns
   nothing, and its results say so;
3. the correctness checks it claims to pass are re-run on the trusted side
   (:mod:`autograder.grading.verifier`, served by long-lived processes the workers share:
   :mod:`autograder.grading.trusted_server`); a pass that is not confirmed is a failure;
4. the outcomes become points with :func:`autograder.core.outcomes.score_functions`.

:func:`grade_class` runs that over a thread pool, one task per module of a
student (one supervised process per worker at a time, so a class smaller than
the pool still keeps every worker busy; students are queued in order, and the
task that ends a student's last module confirms and scores it), shows a progress line on a terminal, and never lets an
error lose a student's row. Setting :attr:`Grader.stop` (``grade`` does on
Ctrl-C and SIGTERM) ends it within a fraction of a second: running processes
are killed, unfinished students are left out, and :meth:`Grader.close` ends
the zygotes and removes every scratch folder.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from autograder.runtime import compile_cache
from autograder.grading.lifeline import Lifeline
from autograder.core.course import Course
from autograder.core.outcomes import CheckId, CheckOutcome, StudentResult, score_functions
from autograder.core.status import Status
from autograder.core.submission import MAX_FILE_BYTES, read_submission  # noqa: F401 - read_submission: the one reader
from autograder.grading import preflight, sandbox
from autograder.grading.trusted_server import TrustedServer, Verifiers, verifiers_for
from autograder.grading.requests import CHILD, UNVERIFIABLE, ChildRequest, VerifierRequest
from autograder.grading.trusted_only import observed_in_the_students_process
from autograder.pytest_plugin.report import strip_ansi

VERIFY_TIMEOUT = 600.0


@dataclass(frozen=True)
class Check:
    """One check of the plan: its id (``str(CheckId)``, the key on the wire), the function it judges."""

    id: str  # "<module>::<test name>"
    module: str
    function: str
    correctness: bool
    # its module is judged on the trusted side only (autograder.grading.trusted_only): the
    # grading process holds no reference, and the verifier's verdict is the check's
    trusted_only: bool = False
    # it takes the reference: in a module judged on the trusted side only, its pass in the grading
    # process compared the student's function with itself, so only the verifier can decide it
    takes_reference: bool = True
    # its module's fixtures are answered from the givens the plan recorded (autograder.recording.givens)
    givens: bool = False

    @property
    def test(self) -> str:
        return CheckId.parse(self.id).test


@dataclass
class _Submission:
    """One student's files and what their grading processes found so far (filled module by module)."""

    student: str
    files: dict[str, bytes]
    missing: dict[str, str]
    verdicts: dict[str, tuple[Status, str]] = field(default_factory=dict)  # check id -> (status, message)
    transcripts: dict[str, dict] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"runs": 0, "run_seconds": 0.0, "verify_seconds": 0.0})
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The student's own folder (JAX's compilation cache, HOME) for all of their grading processes, made
    # by the first of them (Grader.own_folder_of): nothing one student's code writes reaches another's.
    own_folder: Path | None = None
    # The student's sandbox (Grader.box_of): that folder, a uid, a control group and a zygote of their own.
    box: sandbox.Box | None = None


@dataclass
class Options:
    modules: tuple[str, ...]
    timeout_per_function: float
    memory_mb: int
    jobs: int
    cache_dir: Path | None = None
    zygote: bool = True  # fork grading children from a pre-imported process per worker
    seed: int | None = None  # `grade --seed N`: inputs drawn from N (child and verifier alike), not the published ones
    run_as: str | None = None  # start untrusted processes as this unprivileged user (grader runs as root)


class Grader:
    """Everything shared by the runs of one ``grade`` command."""

    def __init__(
        self, course: Course, options: Options, stop: threading.Event | None = None,
        snapshot: sandbox.Snapshot | None = None, workers: int = 0,
    ):
        """``workers``: how many worker threads will grade (at most ``options.jobs``); their pre-imported
        processes start now, so they import the libraries while the trusted side lists the checks."""
        self.course = course
        self.options = options
        self.stop = stop if stop is not None else threading.Event()
        self.lifeline = Lifeline()
        self._lock = threading.Lock()
        self._scratch: set[Path] = set()
        self._local = threading.local()
        self._zygotes: list[tuple[sandbox.Zygote, Path]] = []
        self._spare: dict[str, list[sandbox.Zygote]] = {}
        self._boxes: list[sandbox.Box] = []  # every student's sandbox not yet closed
        self._spare_boxes: list[sandbox.Box] = []  # started ahead, each given to the next student that needs one
        self.group: sandbox.Group | None = None
        self._trusted_zygotes: list[sandbox.Zygote] = []  # the verifiers', one per slot of self.verifiers
        # every fault of a grading process: (module, fault, its last stderr), read by autograder.grading.preflight
        self.faults: list[tuple[str, sandbox.Fault, str]] = []
        try:
            sandbox.remove_abandoned_scratch()  # a killed grader's, the references' copies among them
            self.snapshot = snapshot or sandbox.Snapshot.take(course.root)
            # No compilation cache in the students' environment: each student gets their own (own_folder_of).
            self.env = sandbox.child_env()
            self.run_as = sandbox.RunAs.lookup(options.run_as) if options.run_as else None
            self.isolation = sandbox.isolation()
            self.group = sandbox.grader_group() if self.isolation.cgroups else None
            # The kit and the course's checks (never a reference), shown read-only to every student's sandbox.
            self.shared = self._scratch_dir()
            self.snapshot.materialize(self.shared, solutions=False)
            _readable(self.shared)
            # The trusted side has its own compilation cache, whose path no student process is given.
            self.trusted_cache_dir = self._scratch_dir()
            # What the fixtures of modules judged on the trusted side only are given (recorded while planning).
            self.givens_dir = self._scratch_dir()
            self.trusted_env = sandbox.child_env(compile_cache.environment(self.trusted_cache_dir))
            workers = min(max(0, workers), self.options.jobs)
            for _ in range(workers):  # the first students' sandboxes import the libraries while the plan is made
                self._spare_boxes.append(self.new_box())
            self.plan = self._plan()
            if self.options.zygote:
                # The verifiers' trusted zygotes: the planning thread's first (it is done with it), then new ones.
                self._trusted_zygotes = [vars(self._local).pop("trusted_zygote")]
                self._trusted_zygotes += [self._new_zygote("trusted_zygote") for _ in range(verifiers_for(workers) - 1)]
            # Without zygotes there are none: each verification is a fresh trusted process (verify).
            self.verifiers = Verifiers(len(self._trusted_zygotes), self._start_verifier, self.stop)
        except BaseException:
            self.close()
            raise
        self.function_of = {c.id: f"{c.module}.{c.function}" for c in self.plan}
        self.trusted_only_modules = {c.module for c in self.plan if c.trusted_only}
        self.modules_with_givens = {c.module for c in self.plan if c.givens}

    def _scratch_dir(self) -> Path:
        """A new scratch folder, removed by :meth:`_remove` or at the latest by :meth:`close`."""
        with self._lock:
            sandbox.check(self.stop)
            path = sandbox.scratch_dir()
            self._scratch.add(path)
        return path

    def _remove(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)
        with self._lock:
            self._scratch.discard(path)

    def _starter(self, box: sandbox.Box):
        """How a grading child of ``box``'s student starts: forked by the student's zygote, or a fresh interpreter."""
        if box.zygote is None:
            return sandbox.start_direct(
                CHILD, self.shared / "kit", self._box_env(box), self.options.memory_mb, self.lifeline.fd, box=box
            )
        return box.zygote.start

    def _box_env(self, box: sandbox.Box) -> dict[str, str]:
        return dict(self.env, HOME=str(box.folder), TMPDIR=str(box.folder / "tmp"))

    def new_box(self) -> sandbox.Box:
        """A sandbox for one student (see :class:`sandbox.Box`), its zygote started (without waiting for it)."""
        folder = self._scratch_dir()
        uid = gid = None
        if self.run_as is not None:
            uid, gid = self.run_as.uid, self.run_as.gid
        elif self.isolation.privileged and self.isolation.sandbox != "none":
            uid = sandbox.next_uid()
        group = None
        if self.group is not None:
            group = self.group.child(folder.name)
            # a backstop for all of the student's processes together; each has its own limit (Box.leaf)
            group.limit(memory_mb=self.options.memory_mb * (self.options.jobs + 1), pids=sandbox.PIDS_PER_STUDENT)
        box = sandbox.Box(self.isolation, folder, self.shared, group, uid, gid, self.options.memory_mb)
        with self._lock:
            self._boxes.append(box)
        if self.options.zygote:
            sandbox.Zygote(
                self.shared / "kit", folder, self._box_env(box), self.options.memory_mb, self.lifeline.fd, self.stop,
                box=box,
            )
        with self._lock:
            if self.stop.is_set():  # close() may have run while this one started
                box.close()
                raise sandbox.Interrupted()
        return box

    def box_of(self, submission: "_Submission") -> sandbox.Box:
        """``submission``'s sandbox: a spare one started ahead, else a new one (never another student's)."""
        with submission.lock:
            if submission.box is None:
                with self._lock:
                    box = self._spare_boxes.pop(0) if self._spare_boxes else None
                if box is None:
                    box = self.new_box()
                if self.options.cache_dir is not None:
                    _copy_files(Path(self.options.cache_dir) / submission.student, box.folder / compile_cache.FOLDER)
                    box.give(box.folder / compile_cache.FOLDER)
                submission.box = box
                submission.own_folder = box.folder
            return submission.box

    def close_box(self, box: sandbox.Box) -> None:
        """Every process of ``box`` killed (a double-forked one too), its group removed; its folder is kept."""
        box.close()
        with self._lock:
            if box in self._boxes:
                self._boxes.remove(box)

    def close(self) -> None:
        """End every zygote and remove every scratch folder (also after an interruption)."""
        with self._lock:
            boxes = list(self._boxes)
            self._boxes.clear()
            self._spare_boxes.clear()
        for box in boxes:
            box.close()
        if self.group is not None:
            self.group.remove()
            self.group = None
        with self._lock:
            for zygote, _scratch in self._zygotes:
                zygote.close()
            self._zygotes.clear()
            for path in self._scratch:
                shutil.rmtree(path, ignore_errors=True)
            self._scratch.clear()
        self.lifeline.close()

    # -- trusted side -----------------------------------------------------
    def _trusted(self, request: VerifierRequest, timeout: float) -> dict:
        """Run :mod:`autograder.grading.verifier` (never student code) on a fresh private copy of the course."""
        scratch = self._scratch_dir()
        try:
            course_root, kit = self.snapshot.materialize(scratch)
            work = scratch / "work"
            work.mkdir()
            asked = _in_files(request, scratch)
            out = Path(asked.out)
            cfg = replace(asked, course_root=str(course_root), modules=list(self.options.modules), kit=str(kit)).to_wire()
            zygote = self._zygote("trusted_zygote") if self.options.zygote else None
            if zygote is not None:
                sandbox.run_to_end(zygote, work, cfg, scratch / "stderr.txt", timeout)
            else:
                proc = sandbox.run_python(
                    request.target, kit, work, cfg, memory_mb=None, env=self.trusted_env,
                    stderr_path=scratch / "stderr.txt", lifeline=self.lifeline.fd,
                )
                sandbox.wait_or_stop(proc, timeout, self.stop)
            if not out.is_file():
                raise RuntimeError(f"the trusted grader failed:\n{sandbox.file_tail(scratch / 'stderr.txt')}")
            return json.loads(out.read_text(encoding="utf-8"))
        finally:
            self._remove(scratch)

    def _zygote(self, slot: str) -> sandbox.Zygote:
        """This thread's zygote for ``slot`` ("zygote" or "trusted_zygote"): a spare one started ahead (workers'
        zygotes only), else a new one; restarted if it died."""
        zygote = getattr(self._local, slot, None)
        if zygote is None or not zygote.alive():
            with self._lock:
                spares = self._spare.get(slot)
                zygote = spares.pop() if spares else None
            if zygote is None or not zygote.alive():
                zygote = self._new_zygote(slot)
            setattr(self._local, slot, zygote)
        return zygote

    def _zygote_stderr(self, box: sandbox.Box) -> str:
        """The last stderr of ``box``'s grading zygote (why it did not start or fork)."""
        return sandbox.file_tail(box.folder / "zygote-stderr.txt") if box.zygote is not None else ""

    def _new_zygote(self, slot: str) -> sandbox.Zygote:
        """Start a zygote for ``slot`` (without waiting for its imports). It dies with the thread that started
        it, so spares are started by the thread that owns the grader."""
        trusted = slot == "trusted_zygote"
        scratch = self._scratch_dir()
        _, kit = self.snapshot.materialize(scratch, solutions=False)
        run_as = None if trusted else self.run_as  # the trusted zygote stays with the caller
        if run_as:
            run_as.give(scratch)
        env, memory_mb = (self.trusted_env, None) if trusted else (self.env, self.options.memory_mb)
        if run_as:
            env = dict(env, HOME=str(scratch))  # a home the user may write to; each child gets its student's
        zygote = sandbox.Zygote(kit, scratch, env, memory_mb, self.lifeline.fd, self.stop, run_as)
        with self._lock:
            self._zygotes.append((zygote, scratch))
            if self.stop.is_set():  # close() may have run while this one started
                zygote.close()
                raise sandbox.Interrupted()
        return zygote

    def _plan(self) -> list[Check]:
        data = self._trusted(VerifierRequest("plan", seed=self.options.seed, givens=str(self.givens_dir)), VERIFY_TIMEOUT)
        checks = [
            Check(
                c["check"], c["module"], c["function"], bool(c["correctness"]), bool(c.get("trusted_only")),
                bool(c.get("takes_reference", True)), bool(c.get("givens")),
            )
            for c in data["plan"]
        ]
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
        givens = str(self.givens_dir) if self.modules_with_givens else ""
        request = VerifierRequest("verify", checks=claims, transcripts=transcripts, seed=self.options.seed, givens=givens)
        if not self.options.zygote:
            return self._trusted(request, VERIFY_TIMEOUT)["verdicts"]
        scratch = self._scratch_dir()
        try:
            asked = _in_files(request, scratch)
            out = Path(asked.out)
            with self.verifiers.lend() as server:
                if not server.answer(asked, VERIFY_TIMEOUT) or not out.is_file():
                    self.verifiers.discard(server)
                    raise RuntimeError(f"the trusted grader failed:\n{sandbox.file_tail(server.stderr)}")
            return json.loads(out.read_text(encoding="utf-8"))["verdicts"]
        finally:
            self._remove(scratch)

    def _start_verifier(self, slot: int) -> TrustedServer:
        """The long-lived verifier of ``slot`` (see :mod:`autograder.grading.trusted_server`), forked from that
        slot's trusted zygote (restarted if it died)."""
        zygote = self._trusted_zygotes[slot]
        if not zygote.alive():
            zygote = self._trusted_zygotes[slot] = self._new_zygote("trusted_zygote")
        return TrustedServer(zygote, self._scratch_dir(), self.snapshot, list(self.options.modules), self.options.seed)

    # -- one submission ---------------------------------------------------
    def grade_submission(self, student: str, folder: Path) -> StudentResult:
        return self.grade_files(student, *read_submission(folder, self.options.modules))

    def grade_files(self, student: str, files: dict[str, bytes], missing: dict[str, str]) -> StudentResult:
        """Grade one student's files as read by :func:`read_submission`, each module in its own processes;
        raises :class:`sandbox.Interrupted` on stop."""
        submission = _Submission(student, files, missing)
        for module in self.modules_to_run(submission):
            self.grade_module_of(submission, module)
        return self.finish(submission)

    def modules_to_run(self, submission: "_Submission") -> list[str]:
        """The modules of ``submission`` that need a grading process (present, with checks)."""
        return [
            m for m in self.options.modules
            if m not in submission.missing and any(c.module == m for c in self.plan)
        ]

    def grade_module_of(self, submission: "_Submission", module: str) -> None:
        """Run one module of ``submission`` (independent of its other modules: workers may share a student)."""
        checks = [c for c in self.plan if c.module == module]
        verdicts: dict[str, tuple[Status, str]] = {}
        transcripts: dict[str, dict] = {}
        timings = {"runs": 0, "run_seconds": 0.0}
        box = self.box_of(submission)
        self._grade_module(module, checks, submission.files[module], box, verdicts, transcripts, timings)
        with submission.lock:
            submission.verdicts.update(verdicts)
            submission.transcripts.update(transcripts)
            for key, value in timings.items():
                submission.timings[key] = submission.timings.get(key, 0.0) + value

    def own_folder_of(self, submission: "_Submission") -> Path:
        """The folder only ``submission``'s grading processes are given (their compilation cache and HOME): its
        sandbox's (:meth:`box_of`).

        One per student, never shared: a compilation cache is a folder of executables that every process using
        it writes and loads, so a shared one would let a submission read the programs compiled from a
        classmate's code, or plant programs that later students' processes run. A fresh scratch folder,
        removed when the student is done. With ``--jax-cache DIR`` it starts as a copy of ``DIR/<student>``'s
        cache and is copied back when the student is done (:meth:`finish`): no student process is given
        ``DIR``, where every student's cache is kept."""
        return self.box_of(submission).folder

    def finish(self, submission: "_Submission") -> StudentResult:
        """Confirm ``submission``'s claimed passes on the trusted side and score it (all its modules ran)."""
        if submission.box is not None:  # nothing of the student's runs on while the verifier judges it
            self.close_box(submission.box)
        if submission.own_folder is not None:
            if self.options.cache_dir is not None:  # all of the student's processes have ended
                kept = Path(self.options.cache_dir) / submission.student
                shutil.rmtree(kept, ignore_errors=True)
                _copy_files(submission.own_folder / compile_cache.FOLDER, kept)
            self._remove(submission.own_folder)
        verdicts, timings = submission.verdicts, submission.timings
        for check in self.plan:
            if check.module in submission.missing:
                verdicts.setdefault(check.id, (Status.FAILED, submission.missing[check.module]))
            verdicts.setdefault(check.id, (Status.ERROR, "this check could not be run on your submission"))
        started = time.monotonic()
        self._confirm(verdicts, submission.transcripts)
        timings["verify_seconds"] = time.monotonic() - started
        sandbox.check(self.stop)  # a run killed by the stop must not become a result
        outcomes = [
            CheckOutcome(c.module, c.function, c.test, verdicts[c.id][0], c.correctness, verdicts[c.id][1])
            for c in self.plan
        ]
        return StudentResult(submission.student, score_functions(self.course, outcomes), outcomes, timings)

    def _grade_module(
        self, module: str, checks: list[Check], source: bytes, box: sandbox.Box,
        verdicts: dict, transcripts: dict, timings: dict,
    ) -> None:
        """Run ``module``'s checks in fresh processes until each has a verdict (a fault costs only what it hit)."""
        for _attempt in range(len(checks) + 1):
            todo = [c for c in checks if c.id not in verdicts]
            if not todo:
                break
            started = time.monotonic()
            try:
                run = self._run_child(module, source, box, [c.id for c in checks if c.id in verdicts])
            except RuntimeError as err:  # a zygote that did not start or fork: no student code ran
                raise preflight.GraderError(
                    f"the grader could not start a grading process of {module} ({err}; "
                    f"{preflight.limits_of(self.options)})" + preflight.last_lines(self._zygote_stderr(box))
                ) from None
            if run.fault is not None:
                self.faults.append((module, run.fault, run.stderr_tail))
                if preflight.fault_before_student(run):  # the grader's failure: never a student's score
                    raise preflight.grader_error(module, run, preflight.limits_of(self.options))
            timings["runs"] += 1
            timings[f"peak_mb:{module}"] = max(timings.get(f"peak_mb:{module}", 0.0), run.peak_mb)
            timings["run_seconds"] += time.monotonic() - started
            tampered: list[str] | None = None
            for event in run.events:
                check = event.get("check")
                if event.get("event") == "tampered":
                    what = event.get("what")
                    tampered = [str(w) for w in what] if isinstance(what, list) else []
                if event.get("event") == "end" and check in self.function_of and check not in verdicts:
                    outcome = event.get("outcome")  # a claim: only these three are taken from the student's side
                    if outcome not in (Status.PASSED, Status.FAILED, Status.NOT_STARTED):
                        outcome = Status.FAILED
                    message = event.get("message") if isinstance(event.get("message"), str) else ""
                    verdicts[check] = (Status(outcome), clean_message(message))
                    if outcome == Status.PASSED and isinstance(event.get("transcript"), dict):
                        transcripts[check] = event["transcript"]
            if tampered is not None:
                self._void_tampered(module, checks, tampered, verdicts)
                break
            if run.fault is None:
                break
            self._blame(run.fault, verdicts, todo)

    def _void_tampered(self, module: str, checks: list[Check], what: list[str], verdicts: dict) -> None:
        """A module that changed the grader earns nothing: every check of it fails, saying why."""
        shown = ", ".join(what[:3]) + (f" and {len(what) - 3} more" if len(what) > 3 else "")
        message = (
            f"tampering detected: importing or running {module}.py changed the grader's own code"
            + (f" ({shown})" if shown else "")
            + f"; none of {module}'s checks can be trusted, so this module earns nothing. "
            "Your module must not modify pytest, hypothesis, NumPy or the autograder."
        )
        for check in checks:
            verdicts[check.id] = (Status.FAILED, message)

    def _run_child(self, module: str, source: bytes, box: sandbox.Box, skip: list[str]) -> sandbox.RunResult:
        """One grading process for ``module`` (only its file is in its folder), skipping checks in ``skip``, in
        its student's sandbox ``box`` (:meth:`box_of`)."""
        own_folder = box.folder
        scratch = box.folder / box.run_name()
        scratch.mkdir()
        try:
            own_answers = module in self.trusted_only_modules
            course_root, kit = self.shared / "course", self.shared / "kit"
            if not own_answers:  # a module whose grading process takes the reference (none of this course's)
                course_root, _ = self.snapshot.materialize(scratch, solutions=True)
            givens = ""
            if own_answers and module in self.modules_with_givens:
                shutil.copytree(self.givens_dir, scratch / "givens")
                givens = str(scratch / "givens")
            submission = scratch / "submission"
            submission.mkdir()
            (submission / f"{module}.py").write_bytes(source)
            work = scratch / "work"
            work.mkdir()
            tmp = scratch / "tmp"
            tmp.mkdir()
            box.give(scratch)
            cfg = ChildRequest(
                str(course_root), str(submission), [module], skip, str(kit), seed=self.options.seed,
                own_answers=own_answers, givens=givens, own_folder=str(own_folder), tmp=str(tmp),
            ).to_wire()
            remaining = {self.function_of[c.id] for c in self.plan if c.module == module}
            limits = sandbox.Limits(
                self.options.timeout_per_function,
                self.options.memory_mb,
                total_timeout=sandbox.WALL_FACTOR * self.options.timeout_per_function * (len(remaining) + 3) + 120,
            )
            run = sandbox.supervise(self._starter(box), work, cfg, limits, self.function_of, self.stop)
            for event in run.events:
                if isinstance(event.get("message"), str):
                    event["message"] = event["message"].replace(str(scratch), "<sandbox>").replace(str(self.shared), "<sandbox>")
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
            verdicts.setdefault(check.id, (Status.FAILED, message))

    def _confirm(self, verdicts: dict, transcripts: dict) -> None:
        claims = [c.id for c in self.plan if c.correctness and verdicts[c.id][0] == Status.PASSED]
        if not claims:
            return
        try:
            confirmed = self.verify(claims, {c: transcripts.get(c, {}) for c in claims})
        except Exception as err:  # noqa: BLE001 - never trust an unconfirmed pass
            confirmed = {c: {"outcome": Status.FAILED, "message": f"the grader could not confirm this check ({err})"} for c in claims}
        trusted_only = {c.id: c for c in self.plan if c.trusted_only}
        for check in claims:
            verdict = confirmed.get(check, {"outcome": Status.FAILED, "message": ""})
            if check in trusted_only:
                verdicts[check] = _trusted_verdict(check, self.function_of[check], verdict)
            elif verdict["outcome"] != Status.PASSED and not observed_in_the_students_process(check):
                qual = self.function_of[check]
                detail = clean_message(verdict.get("message", "")).strip()
                verdicts[check] = (
                    Status.UNCONFIRMED,
                    f"{qual}: your process reported this check as passed, but the grader could not confirm it"
                    + (f":\n{detail}" if detail else ""),
                )

    # -- the class --------------------------------------------------------
    def grade_class(
        self,
        students: list[tuple[str, Path]],
        progress: Callable[[int, int], None] | None = None,
        *,
        finished: dict[str, StudentResult] | None = None,
        on_result: Callable[[StudentResult], None] | None = None,
    ) -> list[StudentResult]:
        """Every student's result, sorted by name; ``finished`` ones (an interrupted run's) are taken as
        they are, and ``on_result`` gets each new one as soon as it is known.

        When :attr:`stop` is set, returns at once with the students finished so far (the caller
        tells by ``grader.stop.is_set()``); a student being graded then is left out, not half-graded.
        """
        results = {name: finished[name] for name, _ in students if finished and name in finished}
        todo = [(name, folder) for name, folder in students if name not in results]
        grader_errors: list[preflight.GraderError] = []

        def keep(name: str, future) -> None:
            try:
                result = future.result()
            except sandbox.Interrupted:
                return
            except preflight.GraderError as err:  # not the student's: the run stops, no row is scored
                grader_errors.append(err)
                self.stop.set()
                return
            except sandbox.MemoryLimitTooLow as err:  # the grader's own failure: nobody is graded, nobody gets 0
                grader_errors.append(preflight.GraderError(f"stopped before grading: {err}"))
                self.stop.set()
                return
            except Exception as err:  # noqa: BLE001 - a grader bug must not lose a row
                if self.stop.is_set():
                    return
                result = self.failed_result(name, f"the grader failed on this submission: {type(err).__name__}: {err}")
            results[name] = result
            if on_result:
                on_result(result)
            if progress:
                progress(len(results), len(students))

        if progress:
            progress(len(results), len(students))
        pool = ThreadPoolExecutor(max_workers=max(1, self.options.jobs))
        # One task per module of a student (a class smaller than the pool still uses every worker); the
        # task that finishes a student's last module confirms and scores it. Students are queued in order.
        pending: dict = {}
        try:
            for name, folder in todo:
                for task in self._tasks(name, folder):
                    pending[pool.submit(task)] = name
            # progress per module graded (the desk's Progress; any callable of (done, total) still works)
            getattr(progress, "tasks", lambda _n: None)(len(pending))
            while pending and not self.stop.is_set():
                done, _ = wait(pending, timeout=sandbox.POLL, return_when=FIRST_COMPLETED)
                for future in done:
                    name = pending.pop(future)
                    getattr(progress, "task_done", lambda: None)()
                    if _ends_a_student(future):
                        keep(name, future)
        except BaseException:  # e.g. KeyboardInterrupt when no signal handler is installed
            self.stop.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        for future, name in pending.items():  # finished just before the stop: complete results
            if future.done() and not future.cancelled() and _ends_a_student(future):
                keep(name, future)
        if grader_errors:
            raise grader_errors[0]
        return [results[name] for name, _ in sorted(students) if name in results]

    def _tasks(self, name: str, folder: Path) -> list[Callable[[], StudentResult | None]]:
        """One task per module of ``name``'s submission; the task that ends its last module returns the
        student's result (or raises what went wrong in any of them), the others return None."""
        submission = _Submission(name, *read_submission(folder, self.options.modules))
        modules = self.modules_to_run(submission)
        if not modules:
            return [lambda: self.finish(submission)]
        left = [len(modules)]
        errors: list[BaseException] = []

        def run(module: str) -> StudentResult | None:
            try:
                self.grade_module_of(submission, module)
            except BaseException as err:  # noqa: BLE001 - reported once, by the student's last task
                with submission.lock:
                    errors.append(err)
            with submission.lock:
                left[0] -= 1
                if left[0]:
                    return None
            if errors:
                raise errors[0]
            return self.finish(submission)

        return [functools.partial(run, module) for module in modules]

    def failed_result(self, student: str, message: str) -> StudentResult:
        outcomes = [CheckOutcome(c.module, c.function, c.test, Status.ERROR, c.correctness, message) for c in self.plan]
        return StudentResult(student, score_functions(self.course, outcomes), outcomes)


def _ends_a_student(future) -> bool:
    """Whether a finished task of :meth:`Grader._tasks` carries its student's result (or error)."""
    return future.exception() is not None or future.result() is not None


def _trusted_verdict(check: str, qualname: str, verdict: dict) -> tuple[Status, str]:
    """A claimed pass of a module judged on the trusted side only: the verifier's verdict is the check's,
    its failure message (expected and got, the first failing input) the student's. A correctness check the
    verifier cannot replay earns nothing, unless it is one the README lists as observed in the student's
    process (:func:`autograder.grading.trusted_only.observed_in_the_students_process`)."""
    outcome, message = verdict.get("outcome"), clean_message(str(verdict.get("message", ""))).strip()
    if outcome == Status.PASSED or (outcome == UNVERIFIABLE and observed_in_the_students_process(check)):
        return Status.PASSED, ""
    if outcome == UNVERIFIABLE:
        return Status.ERROR, f"{qualname}: the grader could not judge this check from what your process recorded"
    if verdict.get("missing"):  # the student's process did not call the function on every input
        return Status.UNCONFIRMED, (
            f"{qualname}: your process reported this check as passed, but the grader could not confirm it"
            + (f":\n{message}" if message else "")
        )
    return Status.FAILED, message


def _in_files(request: VerifierRequest, scratch: Path) -> VerifierRequest:
    """``request`` answering into ``scratch``, its transcripts written there (too large for the request itself)."""
    sent = scratch / "transcripts.json"
    sent.write_text(json.dumps(request.transcripts), encoding="utf-8")
    return replace(request, out=str(scratch / "verdicts.json"), transcripts={}, transcripts_file=str(sent))


def _copy_files(source: Path, dest: Path) -> None:
    """Copy the regular files directly in ``source`` into ``dest`` (made private). Links, folders and
    anything else a submission may have left there are not followed: copying is done by the grader, which
    may read what the submission must not."""
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    if source.is_symlink() or not source.is_dir():
        return
    for entry in source.iterdir():
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # no link, no waiting on a pipe
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                continue
            with open(dest / entry.name, "wb") as out:
                shutil.copyfileobj(f, out)


def _readable(folder: Path) -> None:
    """Make ``folder`` readable (not writable) by every user: the students' uids read the kit and checks there."""
    for root, dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def find_students(submissions: Path) -> list[tuple[str, Path]]:
    """Every visible sub-folder of ``submissions`` is a student, named after the folder."""
    return sorted((p.name, p) for p in Path(submissions).iterdir() if p.is_dir() and not p.name.startswith("."))


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def clean_message(message: str) -> str:
    """Deterministic text: no memory addresses, no ANSI colours, bounded length."""
    message = _ADDRESS.sub("0x…", strip_ansi(message))
    return message if len(message) <= 4000 else message[:4000] + "\n  … (message shortened)"


class Progress:
    """``graded 3/10 students, 14/40 modules  elapsed 0:42  ETA 1:38`` on one terminal line (stderr), only on
    a TTY. It moves with every module graded (:meth:`tasks` and :meth:`task_done`, called by
    :meth:`Grader.grade_class`: one task per module of a student), not only when a whole student is done;
    the ETA is shown once a module has been graded (before that there is nothing to estimate from)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()
        self.students = (0, 0)
        self.total_tasks = 0
        self.tasks_done = 0
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self.students = (done, total)
            self._show()

    def tasks(self, total: int) -> None:
        """``total`` modules are to be graded in this run."""
        with self._lock:
            self.total_tasks, self.tasks_done = total, 0
            self._show()

    def task_done(self) -> None:
        with self._lock:
            self.tasks_done += 1
            self._show()

    def line(self) -> str:
        done, total = self.students
        elapsed = time.monotonic() - self.start
        text = f"graded {done}/{total} students"
        eta = None
        if self.total_tasks:
            text += f", {self.tasks_done}/{self.total_tasks} modules"
            if self.tasks_done:
                eta = elapsed / self.tasks_done * (self.total_tasks - self.tasks_done)
        elif done and total:
            eta = elapsed / done * (total - done)
        text += f"  elapsed {_clock(elapsed)}"
        if eta is not None:
            text += f"  ETA {_clock(eta)}"
        return text

    def _show(self) -> None:
        if not self.enabled:
            return
        self.stream.write(f"\r{self.line()}   ")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60}:{seconds % 60:02d}"
