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
(:class:`HandedChecks`): their text (a hidden check's body) is nowhere the student's code could read it. What the
checks print is discarded, never kept in the student's disk quota nor in memory (:class:`Output`).

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
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from autograder.grading.untrusted import audit, tamper
from autograder.grading.wire import CLAIMABLE, ChildRequest, Claim, Event, pytest_args
from autograder.pytest_plugin.decided import decided_on_the_trusted_side
from autograder.runtime import compile_cache

if TYPE_CHECKING:  # types only: a grading process imports them when it needs them
    from autograder.core.course import Function
    from autograder.recording.plain_data import Statics

MAX_TRANSCRIPT_CHARS = 20_000_000
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
        self.before: dict | None = None  # the grader's identities before the student's import
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
            self.emit(event=Event.BEGIN, check=self.ids[nodeid][0])

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
        self.emit(event=Event.IMPORT_BEGIN, module=module)
        try:
            loaded = course_session_of(item.config).student(module)
            if self.record:  # its classes (a TrainStateBN it returns) are recorded as the course's
                from autograder.recording.plain_data import name_classes_by_course_module

                name_classes_by_course_module(loaded, module)
        except Exception:  # noqa: BLE001 - the fixture reports it, check by check
            pass
        self.emit(event=Event.IMPORT_END, module=module)
        if _report_tampering(self):
            _send(self, event=Event.DONE)
            os._exit(0)

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        entry = self.ids.get(pyfuncitem.nodeid)
        student = pyfuncitem.funcargs.get("student")
        if not (self.record and entry and student is not None and decided_on_the_trusted_side(pyfuncitem)):
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
            setattr(student, name, _recording(self, calls, name, value, answers))
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
            _send(self, event=Event.DONE)
            os._exit(0)
        return (yield)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        from autograder.core.status import Status
        from autograder.pytest_plugin.session import course_session_of

        entry = self.ids.get(nodeid)
        if entry is None:
            return
        if (_forged(self) or _hooks_changed(self)) and _report_tampering(self):  # a forged report costs the module
            _send(self, event=Event.DONE)
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
    _send(reporter, event=Event.REVIEW, what=what, line=line)


def _report_tampering(reporter: ChildReporter) -> bool:
    """Emit ``tampered`` if the grader's functions, or the reporter's own state (its attributes, the
    session's list of outcomes it reads), changed since the import began."""
    before = reporter.__dict__.get("before")
    what = tamper.changed(before) if before is not None else []
    what += _forged(reporter) + _hooks_changed(reporter)
    if what:
        _send(reporter, event=Event.TAMPERED, modules=sorted(reporter.modules), what=what[:20])
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


def _recording(reporter: ChildReporter, calls: dict, label: str, original, answers: dict | None = None):
    """``original`` (the student's function, or its jitted form), writing each concrete call into ``calls``
    under ``label``. Checks that jit the function (``structure.jit_once``) get a recorded jitted
    function (``label|jit[...]``), so what they compare is recorded with concrete arguments, not tracers.
    With ``answers`` (a module judged on the trusted side only), a second call with the same arguments
    gives the first call's answer: the check compares the function with itself, and a function that
    answers differently each time is the purity checks' finding, not a difference from "the reference"."""

    @functools.wraps(original)
    def recorded(*args, **kwargs):
        key = _key(reporter, label, args, kwargs)  # the arguments as given (the function may change them)
        if answers is not None and key is not None and key in answers:
            return answers[key]
        out = original(*args, **kwargs)
        _record(reporter, calls, key, args, kwargs, out)
        if answers is not None and key is not None:
            answers[key] = out
        return out

    def jit_stand_in(static_argnums: tuple):
        from autograder.checks.structure import jit_once  # one jax.jit per function, as for any check

        jitted = jit_once(original, static_argnums)
        return _recording(reporter, calls, f"{label}|jit{list(static_argnums)}", jitted, answers)

    def transform_stand_in(transform_label: str, transform: Callable):
        from autograder.checks.structure import transformed_once  # one transform per function, as for any check

        transformed = transformed_once(original, transform_label, transform)
        return _recording(reporter, calls, f"{label}|{transform_label}", transformed, answers)

    recorded.jit_stand_in = jit_stand_in  # type: ignore[attr-defined]  # read by structure.jit_once
    recorded.transform_stand_in = transform_stand_in  # type: ignore[attr-defined]
    return recorded


def _givens_plugin(givens: str) -> list:
    """With givens, the plugin that answers fixtures from them (autograder.recording.givens)."""
    if not givens:
        return []
    from autograder.recording.givens import FixturesFromGivens

    return [FixturesFromGivens()]


def _key(reporter: ChildReporter, name: str, args: tuple, kwargs: dict) -> str | None:
    """The digest the verifier will look ``name(*args, **kwargs)`` up by; None when it cannot be made."""
    from autograder.grading import transcript

    try:
        if reporter.statics is None:
            reporter.statics = transcript.statics()
        return transcript.digest(name, args, kwargs, reporter.statics)
    except Exception:  # noqa: BLE001 - a call that cannot be keyed is simply not recorded
        return None


def _record(reporter: ChildReporter, calls: dict, key: str | None, args: tuple, kwargs: dict, out) -> None:
    from autograder.grading import transcript
    from autograder.recording.plain_data import float_hints

    try:
        if key is None or key in calls or reporter.size > MAX_TRANSCRIPT_CHARS:
            return
        assert reporter.statics is not None  # made by _key, which made the key
        encoded = transcript.encode(out, reporter.statics, float_hints([*args, *kwargs.values()]))
        reporter.size += len(json.dumps(encoded))
        calls[key] = encoded
    except Exception:  # noqa: BLE001 - a result that cannot be recorded is simply not confirmed
        return


OUTPUT_LIMIT = 1 << 30  # characters a check may print (stdout and stderr together) before print raises


class OutputLimit(Exception):
    """What ``print`` raises in a check that printed more than :data:`OUTPUT_LIMIT` characters."""


class Output(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` of a grading process (pytest's capture is off: ``--capture=no``). Nothing
    printed is kept: pytest's own capture kept a check's output in a file inside the student's disk quota (a correct
    submission printing 300 MB in one check lost it: "disk quota") and then read all of it into memory. stdout is
    discarded (the process's own is ``/dev/null``); the first ``keep`` characters of stderr still reach the run's
    stderr file (the grader's diagnostics), the rest is dropped. A check that prints more than :data:`OUTPUT_LIMIT`
    characters gets :class:`OutputLimit` from ``print``: its function fails saying so, no other."""

    def __init__(self, counter: OutputCounter, through=None, keep: int = 0, fileno: int = 1) -> None:
        self.counter = counter
        self.through = through
        self.keep = keep
        self._fileno = fileno

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fileno

    @property
    def encoding(self) -> str:  # type: ignore[override]  # a plain attribute of TextIOBase's streams
        return "utf-8"

    @property
    def buffer(self) -> OutputBytes:
        """The binary side (``sys.stdout.buffer.write(b"...")``), counted and discarded alike."""
        return OutputBytes(self)

    def write(self, text) -> int:
        size = len(text)
        self.counter.printed += size
        if self.counter.printed > OUTPUT_LIMIT and self.counter.active:
            self.counter.printed = OUTPUT_LIMIT + 1
            raise OutputLimit(
                f"your code printed more than {OUTPUT_LIMIT >> 20} MB of text during one check; the grader discards "
                "what a check prints: print less (or nothing) while grading"
            )
        if self.keep > 0 and self.through is not None:
            part = str(text)[: self.keep]
            self.keep -= len(part)
            try:
                self.through.write(part)
                self.through.flush()
            except (OSError, ValueError):
                self.keep = 0
        return size

    def flush(self) -> None:
        pass


class OutputBytes(io.RawIOBase):
    """:attr:`Output.buffer`: bytes written are :class:`Output`'s text."""

    def __init__(self, text: Output) -> None:
        self.text = text

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        size = len(memoryview(data).cast("B"))
        self.text.write(bytes(data).decode("utf-8", "replace"))
        return size


class OutputCounter:
    """What the current check printed (:class:`Output`); a plugin: reset as each check starts, and the limit in
    force only while the check's setup (the student's import), call and teardown run (never while pytest reports)."""

    def __init__(self) -> None:
        self.printed = 0
        self.active = False

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.printed = 0

    def _phase(self):
        self.active = True
        try:
            return (yield)
        finally:
            self.active = False

    pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_phase)
    pytest_runtest_call = pytest.hookimpl(wrapper=True)(_phase)
    pytest_runtest_teardown = pytest.hookimpl(wrapper=True)(_phase)


def bounded_output() -> OutputCounter:
    """``sys.stdout`` and ``sys.stderr`` replaced by :class:`Output` streams; the counter to register with pytest."""
    counter = OutputCounter()
    sys.stdout = Output(counter, fileno=1)
    sys.stderr = Output(counter, sys.__stderr__, keep=STDERR_KEPT, fileno=2)
    return counter


STDERR_KEPT = 1 << 20  # characters of stderr written through to the run's stderr file


class HandedChecks:
    """The module's checks, handed to this process compiled (:meth:`~autograder.grading.isolation.scratch.Snapshot.
    hand_checks`) through a descriptor that :func:`run` reads and closes before pytest starts; pytest collects them
    from memory (:class:`HandedModule`) in place of the placeholder that stands at their path on disk. Nothing of
    their text is left for the student's code, imported later (at its first check: ``pytest_runtest_setup``): not on
    disk, not in a descriptor (``/proc/self/fd``), not in ``linecache`` nor a loader's ``get_source``
    (``inspect.getsource`` of a check reads the placeholder and fails), and the marshalled bytes are zeroed once
    loaded. What stays is the code objects themselves, which a heap walk or a ``__code__`` read could reach: the
    static screen and the audit hook flag those (:mod:`autograder.core.screen`, :mod:`.audit`)."""

    def __init__(self, path: str, code) -> None:
        self.path = path
        self.code = code

    @classmethod
    def read(cls, request: ChildRequest) -> HandedChecks | None:
        """The checks handed in ``request.checks_fd`` (the descriptor closed in any case), or None."""
        import marshal

        if request.checks_fd < 0:
            return None
        try:
            buffer = bytearray(os.fstat(request.checks_fd).st_size)
            view, done = memoryview(buffer), 0
            while done < len(buffer):
                got = os.readv(request.checks_fd, [view[done:]])
                if got <= 0:
                    break
                done += got
            try:
                code = marshal.loads(view[:done])
            finally:
                view.release()
                buffer[:] = bytes(len(buffer))
        except (OSError, ValueError, EOFError, TypeError):
            code = None  # the module's checks cannot be collected: each is reported as not run
        finally:
            os.close(request.checks_fd)
        return cls(request.handed_checks, code)

    def take(self):
        code, self.code = self.code, None
        return code

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path, parent):
        if self.code is None or str(module_path) != self.path:
            return None
        node = HandedModule.from_parent(parent, path=module_path)
        node.handed = self
        return node


class HandedModule(pytest.Module):
    """A check file collected from the code :class:`HandedChecks` holds (once), not from its path."""

    handed: HandedChecks

    def _getobj(self):
        import types

        from _pytest.pathlib import module_name_from_path, resolve_pkg_root_and_module_name

        code = self.handed.take()
        if code is None:
            raise self.CollectError(f"the checks of {self.path.name} were already collected")
        try:  # the name pytest's importlib mode gives the file
            _, name = resolve_pkg_root_and_module_name(
                self.path, consider_namespace_packages=self.config.getini("consider_namespace_packages")
            )
        except Exception:  # noqa: BLE001 - pytest's fallback
            name = module_name_from_path(self.path, self.config.rootpath)
        module = types.ModuleType(name)
        module.__file__ = str(self.path)  # the placeholder's path: no loader, nothing to read the source from
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module


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
        emit(event=Event.DONE)
    finally:
        sys.stdout.flush()
        os._exit(0)
