"""What runs *inside* a grading process, next to the student's code.

Started by :mod:`autograder.grading.isolation.processes` (or forked by the zygote) as ``python -I -c BOOT KIT`` in a scratch
working directory, with a configuration on stdin. It runs the course's
checks with pytest against the student's files and reports, on a file
descriptor the parent opened (never stdout, which is discarded), one JSON
line per event, each carrying the per-run nonce:

- ``import_begin`` / ``import_end``: the student's ``<module>.py`` is imported
  (so a hang or an exit at import is blamed on the import);
- ``begin`` / ``end``: one check; ``end`` has its outcome, message and, for a
  passed correctness check, a *transcript* (the student's outputs by argument
  digest) that the trusted verifier replays;
- ``tampered``: the student's module changed the grader's own functions, or
  the reporter's own state (an ``emit`` of its own, the session's outcomes:
  a forged report costs the whole module)
  (:mod:`autograder.grading.untrusted.tamper`; compared right after the import, before each check's report and
  when the checks are done), with the changed names;
- ``review``: the audit hook (:mod:`autograder.grading.untrusted.audit`, installed before the import) saw the
  student's own code reach into the process (a heap walk, frames, ``ctypes``...), with its line;
- ``done``: every check ran.

The grader takes these in the reporter's own order only (:func:`autograder.grading.isolation.channel.out_of_order`):
a line the student's code writes on the channel breaks it, and costs the module.

A grading process grades one module of a submission (the grader starts one
per module), so whatever a module changes reaches no other module's checks.

The module's checks are handed over compiled, in a descriptor read and closed before pytest starts
(:class:`~autograder.grading.untrusted.handed.HandedChecks`): their text (a hidden check's body) is nowhere the student's code could read it. What the
checks print is discarded, never kept in the student's disk quota nor in memory
(:class:`~autograder.grading.untrusted.output.Output`).

Nothing here is trusted by the parent: the events are claims. Failures are
taken as they are (a student gains nothing by failing); passes of
correctness checks are confirmed by :mod:`autograder.grading.trusted.verifier`.

A module judged on the trusted side only (:mod:`autograder.grading.trusted.trusted_only`,
``ChildRequest.own_answers``) is graded here without any reference: the
sandbox has no ``solutions/``, none is loaded, and the checks' oracle answers
with the student's own functions, so its correctness checks only record what
the student's functions return; the verifier decides them. What its fixtures
build with the reference (start states, batches) is answered from the givens
the trusted side recorded (:mod:`autograder.recording.givens`).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from autograder.grading.events import Begin, Done, ImportBegin, ImportEnd, Review, Tampered
from autograder.grading.untrusted import audit, tamper
from autograder.grading.untrusted.handed import HandedChecks
from autograder.grading.untrusted.output import bounded_output
from autograder.grading.untrusted.recorder import recording
from autograder.grading.wire import CLAIMABLE, ChildRequest, Claim, pytest_args
from autograder.pytest_plugin.decided import replayed_on_the_trusted_side
from autograder.runtime import compile_cache

if TYPE_CHECKING:  # types only: a grading process imports them when it needs them
    from autograder.core.course import Function
    from autograder.recording.plain_data import Statics

# The reporter's attributes it rebinds itself while checks run (tamper.state_changed watches the others).
REPORTER_MUTABLE = frozenset({"size", "statics", "outcome_index", "imported", "state"})


class ChildReporter:
    """A pytest plugin streaming check events to the parent."""

    def __init__(self, request: ChildRequest):
        self.fd = request.fd
        self.nonce = request.nonce
        self.skip = set(request.skip)
        self.modules = set(request.modules)
        self.record = request.record
        self.own_answers = request.own_answers
        self.givens = request.givens
        self.ids: dict[str, tuple[str, Function]] = {}
        self.imported: set[str] = set()
        self.calls: dict[str, dict] = {}
        self.size = 0
        self.statics: Statics | None = None  # the recipes of recorded states' static fields, made on the first record
        self.outcome_index = 0
        self.before: tamper.Snapshot | None = None  # the grader's identities before the student's import
        self.state: dict | None = None  # this reporter's own state then (tamper.state_of), and the session's outcomes

    def emit(self, **event) -> None:
        _write_event(self.fd, self.nonce, event)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        from autograder.core.outcomes import CheckId
        from autograder.pytest_plugin.session import CourseSession, course_session_of

        keep, dropped = [], []
        for item in items:
            fn = CourseSession.function_of(item)
            cid = str(CheckId(fn.module, item.name)) if fn is not None else None
            if fn is None or fn.module not in self.modules or cid in self.skip:
                dropped.append(item)
                continue
            keep.append(item)
            assert cid is not None  # fn is not None
            self.ids[item.nodeid] = (cid, fn)
        items[:] = keep
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        course_session = course_session_of(config)
        if self.own_answers:  # judged on the trusted side: this process never had a reference
            course_session.own_answers = True
            course_session.givens = Path(self.givens) if self.givens else None
        else:
            # The references are loaded before any student code runs; then their
            # files leave the sandbox, so the student's code cannot read them.
            course_session.load_all_references()
        shutil.rmtree(course_session.course.root / "solutions", ignore_errors=True)

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        if nodeid in self.ids:
            self.emit(**Begin(self.ids[nodeid][0]).to_event())

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item) -> None:
        """The student's module is imported here, before the plugin's own setup (which fails a check
        of a module that cannot be imported before its fixtures) and before any fixture."""
        from autograder.pytest_plugin.session import course_session_of

        entry = self.ids.get(item.nodeid)
        if entry is None:
            return
        module = entry[1].module
        if module in self.imported:
            return
        self.imported.add(module)
        if self.before is None:
            self.before = tamper.snapshot()
            self.hooks = tamper.hooks_of(item.config.pluginmanager)  # part of self.state: rebinding it trips
            self.outcomes = course_session_of(item.config).outcomes
            self.state = tamper.state_of(self)
        from autograder.core.screen import COURSE_IMPORTS

        student_file = str(course_session_of(item.config).student_file(module))
        audit.install(student_file, module, functools.partial(_review, self), COURSE_IMPORTS)
        self.emit(**ImportBegin(module).to_event())
        try:
            loaded = course_session_of(item.config).student(module)
            if self.record:  # its classes (a TrainStateBN it returns) are recorded as the course's
                from autograder.recording.plain_data import name_classes_by_course_module

                name_classes_by_course_module(loaded, module)
        except Exception:  # noqa: BLE001 - the fixture reports it, check by check
            pass
        self.emit(**ImportEnd(module).to_event())
        if _report_tampering(self):
            _send(self, **Done().to_event())
            os._exit(0)

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        entry = self.ids.get(pyfuncitem.nodeid)
        student = pyfuncitem.funcargs.get("student")
        if not (self.record and entry and student is not None and replayed_on_the_trusted_side(pyfuncitem)):
            return (yield)
        cid, fn = entry
        original = getattr(student, fn.name, None)
        if not callable(original):
            return (yield)
        calls = self.calls.setdefault(cid, {})
        # Judged on the trusted side only: the check's stand-in reference calls the student's function
        # too, and both must see one answer per input (the first), which is what the verifier judges;
        # and the module's other functions a check calls (fit judged with the student's own sgd_update)
        # are recorded too, so that the verifier can replay them.
        answers: dict | None = {} if self.own_answers else None
        saved = {fn.name: original}
        if self.own_answers:
            from autograder.pytest_plugin.session import course_session_of

            for other in course_session_of(pyfuncitem.config).course.module(fn.module).functions:
                value = vars(student).get(other.name)
                if other.name != fn.name and callable(value) and not isinstance(value, type):
                    saved[other.name] = value
        for name, value in saved.items():
            setattr(student, name, recording(self, calls, name, value, answers))
        try:
            return (yield)
        finally:
            for name, value in saved.items():
                setattr(student, name, value)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        """Before each phase's report is made (no hook has seen it yet): a plugin the student's code registered
        while the check ran, even one that would take itself off again once it edited the report, is found."""
        if item.nodeid in self.ids and _hooks_changed(self) and _report_tampering(self):
            _send(self, **Done().to_event())
            os._exit(0)
        return (yield)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        from autograder.core.status import Status
        from autograder.pytest_plugin.session import course_session_of

        entry = self.ids.get(nodeid)
        if entry is None:
            return
        if (_forged(self) or _hooks_changed(self)) and _report_tampering(self):  # a forged report costs the module
            _send(self, **Done().to_event())
            os._exit(0)
        cid, _ = entry
        outcomes = course_session_of(self._config).outcomes
        new = outcomes[self.outcome_index :]
        self.outcome_index = len(outcomes)
        failed = [o for o in new if o.status != Status.PASSED]
        if failed:  # a status the grader takes no claim of (an error of the check) is a failure
            status = failed[0].status if failed[0].status in CLAIMABLE else Status.FAILED
            claim = Claim(cid, status, failed[0].message)
        elif new:
            claim = Claim(cid, Status.PASSED, "", self.calls.pop(cid, None))
        else:  # no outcome at all (pytest skipped the check): nothing passed, so it fails
            claim = Claim(cid, Status.FAILED, "")
        self.emit(**claim.to_event())

    def pytest_configure(self, config) -> None:
        self._config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        # Before pytest's own teardown, which legitimately restores patched pytest classes.
        _report_tampering(self)


# The tripwires are functions of this module, not methods: a submission that finds the reporter (through
# gc) can shadow any method with an attribute of the instance, and these must still run and be heard.


def _send(reporter: ChildReporter, **event) -> None:
    """Emit on the channel as it was before the student's import (a submission may rebind the reporter's
    ``emit``, ``fd`` or ``nonce``: that trips :func:`_forged`, whose report goes through this)."""
    state = reporter.__dict__.get("state") or {}
    _write_event(state.get("fd", reporter.fd), state.get("nonce", reporter.nonce), event)


def _review(reporter: ChildReporter, what: str, line: int) -> None:
    """The audit hook's report (:mod:`autograder.grading.untrusted.audit`): the student's code at ``line`` did
    ``what``; the module needs review."""
    _send(reporter, **Review(what, line).to_event())


def _report_tampering(reporter: ChildReporter) -> bool:
    """Emit ``tampered`` if the grader's functions, or the reporter's own state (its attributes, the
    session's list of outcomes it reads), changed since the import began."""
    before = reporter.__dict__.get("before")
    what = tamper.changed(before) if before is not None else []
    what += _forged(reporter) + _hooks_changed(reporter)
    if what:
        _send(reporter, **Tampered(tuple(what[:20])).to_event())
    return bool(what)


def _hooks_changed(reporter: ChildReporter) -> list[str]:
    """pytest's plugins and hook implementations that changed since the import began (before every report:
    a ``tryfirst`` ``pytest_runtest_logreport`` of the submission's own edits the report the kit records)."""
    state = reporter.__dict__.get("state")
    if state is None or "hooks" not in state:
        return []
    return tamper.hooks_changed(state["_config"].pluginmanager, state["hooks"])


def _forged(reporter: ChildReporter) -> list[str]:
    """The tripwires on the reporter's state that a submission tripped (a submission that finds the reporter
    through ``gc`` can rewrite what it reports: an ``emit`` of its own turns "failed" into "passed")."""
    state = reporter.__dict__.get("state")
    if state is None:
        return []
    from autograder.pytest_plugin.session import course_session_of

    what = tamper.state_changed(reporter, state, REPORTER_MUTABLE)
    outcomes = course_session_of(state["_config"]).outcomes
    if outcomes is not state["outcomes"] or type(outcomes) is not list:
        what.append("the session's outcomes")
    return what


def _write_event(fd: int, nonce: str, event: dict) -> None:
    event["nonce"] = nonce
    data = (json.dumps(event) + "\n").encode()
    while data:
        try:
            written = os.write(fd, data)
        except BrokenPipeError:  # the grader is gone: nobody will read what follows
            os._exit(0)
        except OSError:
            return
        data = data[written:]


def _givens_plugin(givens: str) -> list:
    """With givens, the plugin that answers fixtures from them (autograder.recording.givens)."""
    if not givens:
        return []
    from autograder.recording.givens import FixturesFromGivens

    return [FixturesFromGivens()]


def main() -> None:
    from autograder.grading.isolation.zygote import boot

    boot(run)


def run(cfg: dict) -> None:
    """Grade what the :class:`ChildRequest` ``cfg`` asks; never returns."""
    request = ChildRequest.from_wire(cfg)
    reporter = ChildReporter(request)
    course_root = Path(request.course_root)
    args = [str(course_root / "exercises" / f"test_{m}.py") for m in request.modules]
    args += ["--submission", request.submission, "--tb=no", *pytest_args(str(course_root), request.seed)]
    args += ["--capture=no"]  # what checks print is discarded, bounded, never kept in a file (Output)
    emit = reporter.emit  # bound before any student code runs
    if request.own_folder:  # the student's own, never another student's (Grader.own_folder_of)
        os.environ["HOME"] = request.own_folder
        compile_cache.switch_on(Path(request.own_folder) / compile_cache.FOLDER)
    if request.tmp:  # not the machine's /tmp, which outlives the run and every student shares
        os.environ["TMPDIR"] = request.tmp
        tempfile.tempdir = None
    handed = HandedChecks.read(request)  # before pytest, long before the student's module is imported
    plugins = [reporter, bounded_output(), *([handed] if handed else []), *_givens_plugin(request.givens)]
    try:
        pytest.main(args, plugins=plugins)
        emit(**Done().to_event())
    finally:
        sys.stdout.flush()
        os._exit(0)
