"""The trusted side: the list of checks, and confirming a student's passes.

Runs in its own process, started by the grader, and never imports or calls
a student's code. Two jobs (chosen by the request), the second also served
student after student by one long-lived process (``serve``,
:mod:`autograder.grading.trusted.trusted_server`):

- ``plan``: collect every check of the course with the function it judges and
  whether it is a correctness check, so that what the student's process
  claims is matched against a list the student could not change; and which
  modules are judged here only (:mod:`autograder.grading.trusted.trusted_only`: their
  grading processes hold no reference, and the verdicts of their correctness
  checks, failure messages included, are this side's).
- ``verify``: re-run the correctness checks a student's process claims to have
  passed, on the trusted side, with the real reference and the real
  comparisons. The inputs are generated here (hypothesis, derandomized, the
  same way as in the student's process); the student's function is replaced
  by a *replay* that answers from the transcript the student's process
  recorded (outputs keyed by the digest of the arguments). A claimed pass
  stands only when the replayed check passes here; an input that has no
  recorded answer fails it. Checks whose inputs or results are not data
  (a loader, a mesh, a checkpoint manager) cannot be replayed and are reported
  ``unverifiable``; the module's other functions answer what the student's
  process recorded of them (it records them in a module judged on the trusted
  side only), and a check that fails on a call of theirs with no recorded
  answer is ``unverifiable`` too. Nothing is shrunk here (an
  input the student's process never saw has no recorded answer): a failure
  shows the first failing input drawn.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from autograder.core.outcomes import CheckId
from autograder.grading.trusted.replays import ReplayState, other_function, replayed
from autograder.grading.trusted.shared import ClassResults
from autograder.grading.trusted.trusted_only import modules_judged_on_the_trusted_side, modules_with_givens
from autograder.grading.wire import PlannedCheck, Replay, Verdict, VerifierRequest, pytest_args
from autograder.pytest_plugin.decided import OBSERVED, SOURCE, decided_where, failure_from_source, source_analysis

if TYPE_CHECKING:
    from autograder.core.course import Function
    from autograder.recording.plain_data import Statics


def _course_classes(session) -> Callable[[str, str], type]:
    """The course's own classes as the references define them (a recorded ``["course", module, name]``)."""
    names = {module.name for module in session.course.modules}

    def course_class(module: str, qualname: str) -> type:
        if module not in names:
            raise ValueError(f"no course module {module!r}")
        reference = session.reference(module)
        found = reference
        for part in qualname.split("."):
            found = getattr(found, part)
        if not isinstance(found, type) or found.__module__ != reference.__name__:
            raise ValueError(f"{qualname} is not a class of {module}")
        return found

    return course_class


class Verifier:
    """pytest plugin: keep the claimed checks, replay the student, record verdicts."""

    def __init__(self, request: VerifierRequest, results: ClassResults | None = None):
        self.mode = request.mode
        self.results = results  # serve: the reference's results, shared by the class's students (trusted.shared)
        self.claims = set(request.checks)
        self.transcripts: dict = request.transcripts
        if request.transcripts_file:
            self.transcripts = json.loads(Path(request.transcripts_file).read_text(encoding="utf-8"))
        self.ids: dict[str, tuple[str, Function]] = {}
        self.plan: list[PlannedCheck] = []
        self.with_givens: set[str] = set()  # plan: modules judged here only whose fixtures use the reference
        self.verdicts: dict[str, Verdict] = {}
        self.states: dict[str, ReplayState] = {}
        self.statics: Statics | None = None  # the recipes of states' static fields, shared by every replayed check
        # verify: the givens the grading processes answered their fixtures from; fixtures here answer from
        # them too, so both sides build the checks' inputs from the same data
        self.givens = request.givens if request.mode == "verify" else ""
        # verify: what the grader read of each module (hostile text, only ever parsed: core.from_source)
        self.sources: dict = request.sources if isinstance(request.sources, dict) else {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        from autograder.pytest_plugin.session import CourseSession, course_session_of

        keep, collected = [], []
        for item in items:
            fn = CourseSession.function_of(item)
            if fn is None:
                continue
            cid = str(CheckId(fn.module, item.name))
            correctness = item.get_closest_marker("correctness") is not None
            where = decided_where(item)
            self.plan.append(
                PlannedCheck(
                    cid,
                    fn.module,
                    fn.name,
                    correctness,
                    where,
                    takes_reference="reference" in getattr(item, "fixturenames", ()),
                    analysed=source_analysis(item) is not None,
                )
            )
            collected.append((item, fn.module, where != OBSERVED))
            from_the_source = None
            if self.mode == "verify" and cid in self.claims and self.plan[-1].analysed:
                from_the_source = verdict_from_the_source(item, self.sources.get(fn.module), fn)
            if from_the_source is not None and (where == SOURCE or from_the_source.outcome != Replay.PASSED):
                self.verdicts[cid] = from_the_source  # the check is not run: decided by the source alone, or failed
            elif self.mode == "verify" and cid in self.claims and where != OBSERVED:
                keep.append(item)
                self.ids[item.nodeid] = (cid, fn)
        if self.mode == "plan":
            trusted_only = modules_judged_on_the_trusted_side(collected)
            self.with_givens = modules_with_givens(collected, trusted_only)
            self.plan = [
                replace(entry, trusted_only=entry.module in trusted_only, givens=entry.module in self.with_givens)
                for entry in self.plan
            ]
        items[:] = keep
        if self.givens:
            course_session_of(config).givens = Path(self.givens)

    def pytest_sessionstart(self, session) -> None:
        """No shrinking here: an input the student's process did not see has no recorded answer (a module
        judged on the trusted side only fails here first; its message shows the first failing input)."""
        from autograder.pytest_plugin.profiles import without_shrinking

        if self.mode == "verify":
            without_shrinking()

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """While a claimed check runs, the module under test answers only from the transcript: its function
        replays the student's answers, and its other functions are not replayed. The module object is
        patched, as the student's process patches it for recording, so fixtures built on it see the
        same (``data``'s ``loader_module``)."""
        from autograder.grading import transcript
        from autograder.pytest_plugin.session import course_session_of
        from autograder.recording.plain_data import name_classes_by_course_module

        entry = self.ids.get(pyfuncitem.nodeid)
        student = pyfuncitem.funcargs.get("student")  # every fixture of the check's closure is here
        if entry is None or student is None:
            return (yield)
        cid, fn = entry
        state = self.states.setdefault(cid, ReplayState())
        session = course_session_of(pyfuncitem.config)
        if self.statics is None:
            self.statics = transcript.statics(_course_classes(session))
        name_classes_by_course_module(student, fn.module)  # as the student's process names the student's
        calls = self.transcripts.get(cid)
        calls = calls if isinstance(calls, dict) else {}
        functions = session.course.module(fn.module).functions
        stand_ins = {other.name: other_function(other.name, calls, state, self.statics) for other in functions}
        stand_ins[fn.name] = replayed(fn.name, calls, session.reference(fn.module), state, self.statics)
        saved = {name: getattr(student, name) for name in stand_ins if hasattr(student, name)}
        for name, stand_in in stand_ins.items():
            setattr(student, name, stand_in)
        reference = pyfuncitem.funcargs.get("reference")
        if self.results is not None and reference is not None:
            pyfuncitem.funcargs["reference"] = self.results.shared(reference, cid, self.statics)
        try:
            return (yield)
        finally:
            if self.results is not None and reference is not None:
                pyfuncitem.funcargs["reference"] = reference
            for name in stand_ins:
                if name in saved:
                    setattr(student, name, saved[name])
                else:
                    delattr(student, name)

    def pytest_runtest_logreport(self, report) -> None:
        entry = self.ids.get(report.nodeid)
        if entry is None:
            return
        cid, fn = entry
        state = self.states.get(cid)
        if state is not None and (state.unverifiable or (report.failed and state.other_missing)):
            self.verdicts[cid] = Verdict(Replay.UNVERIFIABLE)
        elif report.failed:
            # no state: the check failed before it ran (a fixture), so no input went without an answer
            self.verdicts[cid] = Verdict(Replay.FAILED, _message(report), state is not None and state.missing)
        elif report.when == "call" and cid not in self.verdicts:
            self.verdicts[cid] = Verdict(Replay.PASSED)


def verdict_from_the_source(item: pytest.Item, source: object, fn: Function) -> Verdict:
    """The verdict on a check decided from the source: its analysis of ``fn`` in ``source`` (not text: none)."""
    text = source if isinstance(source, str) else None
    failure = failure_from_source(item, text, fn.module, fn.name)
    return Verdict(Replay.PASSED) if failure is None else Verdict(Replay.FAILED, str(failure))


def _message(report) -> str:
    """The course's message (the plugin puts it in the report, as in the student's process)."""
    return report.longreprtext if isinstance(report.longreprtext, str) else ""


def main() -> None:
    from autograder.grading.isolation.zygote import boot

    boot(run)


def run(cfg: dict) -> None:
    """Plan or verify as the :class:`VerifierRequest` ``cfg`` says, writing the JSON answer to its ``out``;
    or, for ``serve``, answer verify requests one after another. Never returns."""
    request = VerifierRequest.from_wire(cfg)
    if request.mode in ("plan", "serve"):  # a grader's first trusted process: the environment still computes
        devices_compute()
    if request.mode == "serve":
        serve(request, int(cfg["fd"]))
    code = 0 if answer(request) else 1
    sys.stdout.flush()
    os._exit(code)


def devices_compute() -> None:
    """Each of the course's devices computes (what a grader checks every call, a proven setting included: a
    machine whose JAX stopped working since fails here, before its students are graded)."""
    import jax

    for device in jax.devices():
        if int(jax.device_put(jax.numpy.arange(3), device).sum()) != 3:
            raise RuntimeError(f"JAX's device {device} computed 0 + 1 + 2 wrongly")


def answer(request: VerifierRequest, results: ClassResults | None = None) -> bool:
    """Run one plan or verify request in this process; whether its answer was written to ``request.out``."""
    course_root = Path(request.course_root)
    verifier = Verifier(request, results)
    known = {}
    if results is not None:
        known = results.known_verdicts(verifier.claims, verifier.transcripts, verifier.sources)
    verifier.claims -= set(known)  # the class's verdicts on the same transcripts (trusted.shared): not replayed
    args = [str(course_root / "exercises" / f"test_{m}.py") for m in request.modules]
    args += ["--solutions", "--tb=short", *pytest_args(str(course_root), request.seed)]
    if request.mode == "plan":
        args.append("--collect-only")
    try:
        from autograder.recording.givens import FixturesFromGivens

        givens = [FixturesFromGivens()] if verifier.givens else []  # fixtures answered as in the grading process
        if verifier.claims or request.mode != "verify":
            pytest.main(args, plugins=[verifier, *givens])
        if results is not None:
            results.learn(verifier.plan, verifier.verdicts, verifier.transcripts, verifier.sources)
            verifier.verdicts.update(known)
        if request.mode == "plan" and request.givens and verifier.with_givens:
            record_givens(course_root, sorted(verifier.with_givens), Path(request.givens), request.seed)
        payload = {
            "plan": [c.to_wire() for c in verifier.plan],
            "verdicts": {check: verdict.to_wire() for check, verdict in verifier.verdicts.items()},
        }
        if results is not None:  # how many of the reference's results this server answered from the class's
            payload["shared"] = {"hits": results.hits, "misses": results.misses, "verdicts": results.verdicts_reused}
        Path(request.out).write_text(json.dumps(payload), encoding="utf-8")
    except BaseException:  # noqa: BLE001 - the parent reads the missing file as an error
        return False
    finally:
        sys.stdout.flush()
    return True


def record_givens(course_root: Path, modules: list[str], folder: Path, seed: int | None) -> None:
    """Set up (only) the fixtures of ``modules``' checks with the live reference recording every call into
    ``folder``: the givens their grading processes answer their fixtures from (:mod:`autograder.recording.givens`)."""
    from autograder.recording.recorded import write_given_modules

    args = [str(course_root / "exercises" / f"test_{m}.py") for m in modules]
    args += ["--solutions", "--setup-only", "--record-oracle", str(folder), *pytest_args(str(course_root), seed)]
    if pytest.main(args) not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"recording the givens of {modules} failed")
    write_given_modules(course_root, folder)


def serve(request: VerifierRequest, fd: int) -> None:
    """Answer the verify requests the grader sends on ``fd`` (a socket, one JSON line each, answered by one
    line ``{"answered": bool}``) on this process's copy of the course, until the grader closes it.

    One process verifies every student of a worker: it never runs student code, so nothing of one
    student reaches another, while what is the same for all of them stays warm — the references and the
    checks imported, JAX's compiled programs (a fresh process lowers and compiles each again)."""
    import socket

    channel = socket.socket(fileno=fd)
    results = ClassResults(request.seed) if request.share else None  # the same for every student it verifies
    for line in channel.makefile("rb"):
        asked = VerifierRequest.from_wire(
            dict(
                json.loads(line),
                mode="verify",
                course_root=request.course_root,
                modules=request.modules,
                seed=request.seed,
            )
        )
        answered = answer(asked, results)
        channel.sendall(json.dumps({"answered": answered}).encode() + b"\n")
    os._exit(0)
