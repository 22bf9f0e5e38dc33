"""The trusted side: the list of checks, and confirming a student's passes.

Runs in its own process, started by the grader, and never imports or calls
a student's code. Two jobs (chosen by the configuration on stdin):

- ``plan``: collect every check of the course with the function it judges and
  whether it is a correctness check, so that what the student's process
  claims is matched against a list the student could not change.
- ``verify``: re-run the correctness checks a student's process claims to have
  passed, on the trusted side, with the real reference and the real
  comparisons. The inputs are generated here (hypothesis, derandomized, the
  same way as in the student's process); the student's function is replaced
  by a *replay* that answers from the transcript the student's process
  recorded (outputs keyed by the digest of the arguments). A claimed pass
  stands only when the replayed check passes here; an input that has no
  recorded answer fails it. Checks whose inputs or reference results are not
  plain data (objects, tracers) cannot be replayed and are reported
  ``unverifiable``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from autograder.core.failures import CheckFailure
from autograder.core.outcomes import CheckId
from autograder.core.status import Status
from autograder.grading.requests import VerifierRequest

# A verdict is Status.PASSED, Status.FAILED, or UNVERIFIABLE: the check cannot be
# replayed from plain data, and the student's claimed pass stands.
UNVERIFIABLE = "unverifiable"


class Unverifiable(Exception):
    """The check touches something that cannot be replayed from plain data."""


class _State:
    def __init__(self) -> None:
        self.unverifiable = False


class Replay:
    """Stands in for the student's module during a replayed check."""

    def __init__(self, function: str, calls: dict, oracle, state: _State):
        self._function = function
        self._calls = calls
        self._oracle = oracle
        self._state = state

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name != self._function:
            if self._oracle is not None and hasattr(self._oracle, name):
                # the check uses another of the student's functions: not recorded
                self._state.unverifiable = True
                raise Unverifiable(name)
            raise AttributeError(name)
        return _replayed(name, self._calls, self._oracle, self._state)


def _replayed(name: str, calls: dict, oracle, state: _State, label: str | None = None, static_argnums: tuple | None = None):
    """The student's ``name`` answering from ``calls`` (recorded under ``label``, by default ``name``).
    Checks that jit it (``structure.jit_once``) get the replay of its jitted form, which the student's
    process recorded under ``name|jit[...]`` with concrete arguments."""
    from autograder.grading import transcript

    label = label or name

    def replayed(*args, **kwargs):
        key = transcript.digest(label, args, kwargs)
        if key is None:
            state.unverifiable = True
            raise Unverifiable(name)
        if key not in calls:
            raise CheckFailure(
                f"{name} was called on the grader's inputs",
                f"the grader re-ran this check and your process reported no result of {name} for one of its inputs",
                "the check ran differently in your process than on the grader's side; "
                "make sure your module does not change the grader, NumPy or pytest",
            )
        try:
            out = transcript.decode(calls[key])
        except (ValueError, KeyError, TypeError):
            raise CheckFailure(f"{name} returned plain data", f"the result recorded for {name} was malformed") from None
        if transcript.has_opaque(calls[key]):
            reference = getattr(oracle, name)
            if static_argnums is not None:
                from autograder.checks.structure import jit_once

                reference = jit_once(reference, static_argnums)
            expected = reference(*args, **kwargs)
            if transcript.has_opaque(transcript.encode(expected)):
                state.unverifiable = True
                raise Unverifiable(name)
        return out

    def jit_stand_in(static: tuple):
        return _replayed(name, calls, oracle, state, f"{name}|jit{list(static)}", static)

    replayed.__name__ = name
    replayed.__qualname__ = name
    replayed.jit_stand_in = jit_stand_in
    return replayed


class Verifier:
    """pytest plugin: keep the claimed checks, replay the student, record verdicts."""

    def __init__(self, request: VerifierRequest):
        self.mode = request.mode
        self.claims = set(request.checks)
        self.transcripts: dict = request.transcripts
        self.ids: dict[str, tuple[str, object]] = {}
        self.plan: list[dict] = []
        self.verdicts: dict[str, dict] = {}
        self.states: dict[str, _State] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        from autograder.pytest_plugin.session import CourseSession

        keep = []
        for item in items:
            fn = CourseSession.function_of(item)
            if fn is None:
                continue
            cid = str(CheckId(fn.module, item.name))
            correctness = item.get_closest_marker("correctness") is not None
            self.plan.append({"check": cid, "module": fn.module, "function": fn.name, "correctness": correctness})
            if self.mode == "verify" and cid in self.claims and correctness:
                keep.append(item)
                self.ids[item.nodeid] = (cid, fn)
        items[:] = keep

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        entry = self.ids.get(pyfuncitem.nodeid)
        if entry is None or "student" not in pyfuncitem.funcargs:
            return (yield)
        cid, fn = entry
        state = self.states.setdefault(cid, _State())
        from autograder.pytest_plugin.session import session_of

        oracle = session_of(pyfuncitem.config).reference(fn.module)
        calls = self.transcripts.get(cid)
        if not isinstance(calls, dict):
            calls = {}
        pyfuncitem.funcargs["student"] = Replay(fn.name, calls, oracle, state)
        return (yield)

    def pytest_runtest_logreport(self, report) -> None:
        entry = self.ids.get(report.nodeid)
        if entry is None:
            return
        cid, fn = entry
        state = self.states.get(cid)
        if state is not None and state.unverifiable:
            self.verdicts[cid] = {"outcome": UNVERIFIABLE, "message": ""}
        elif report.failed:
            message = report.longreprtext if isinstance(report.longreprtext, str) else ""
            self.verdicts[cid] = {"outcome": Status.FAILED, "message": message}
        elif report.when == "call" and cid not in self.verdicts:
            self.verdicts[cid] = {"outcome": Status.PASSED, "message": ""}


def main() -> None:
    from autograder.grading.zygote import boot

    boot(run)


def run(cfg: dict) -> None:
    """Plan or verify as the :class:`VerifierRequest` ``cfg`` says; writes the JSON answer to its ``out``;
    never returns."""
    request = VerifierRequest.from_wire(cfg)
    course_root = Path(request.course_root)
    verifier = Verifier(request)
    args = [str(course_root / "exercises" / f"test_{m}.py") for m in request.modules]
    args += [
        "--solutions", "--grading", "-q", "--tb=short", "-p", "no:cacheprovider", "-p", "no:unraisableexception", "--import-mode=importlib",
        "--rootdir", str(course_root), "-c", str(course_root / "pytest.ini"),
    ]
    if request.seed is not None:  # `grade --seed N`: the child and the verifier draw the same inputs
        args += ["--grading-seed", str(request.seed)]
    if request.mode == "plan":
        args.append("--collect-only")
    code = 0
    try:
        pytest.main(args, plugins=[verifier])
        payload = {"plan": verifier.plan, "verdicts": verifier.verdicts}
        Path(request.out).write_text(json.dumps(payload), encoding="utf-8")
    except BaseException:  # noqa: BLE001 - the parent reads the missing file as an error
        code = 1
    sys.stdout.flush()
    os._exit(code)
