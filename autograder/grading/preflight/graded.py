"""The pre-flight check itself: :func:`check` grades the course's reference (full marks expected) and its stubs
(nothing expected) through the grader that will grade the class, reusing a kept proof of the very same setting,
and raises :class:`PreflightFailed` with the instructor's message when they do not get their known scores.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from autograder.core.outcomes import points_text
from autograder.core.status import Status
from autograder.grading.preflight.failures import GraderError, PreflightFailed, last_lines
from autograder.grading.preflight.proofs import (
    REUSE_ENV,
    REUSED,
    Passed,
    find_proof,
    proof_folder,
    proof_path,
    proven_setting,
    unsafe_folder,
)
from autograder.grading.wire import FaultKind
from autograder.runtime import atomic

REFERENCE = "reference"
STUBS = "stubs"


def limits_of(options) -> str:
    """The grading limits of ``options`` (an :class:`~autograder.grading.grader.Options`), in words."""
    memory = f"memory limit {options.memory_mb} MB per grading process" if options.memory_mb else "no memory limit"
    return f"{memory}, {options.timeout_per_function:g} s per function, {options.jobs} job(s)"


def check(grader, stream=None, *, force: bool | None = None) -> Passed:
    """Grade the course's reference and stubs with ``grader`` (a fresh
    :class:`~autograder.grading.grader.Grader`); raises :class:`PreflightFailed` unless the reference gets
    full marks and the stubs nothing. Prints one line when it passed (on ``stream``, stderr by default).

    A pass is kept as a proof in :func:`proof_folder` under its :func:`proven_setting` and limits, and reused, said
    so, by every later call of the very same setting under the same limits or looser ones (``grade``,
    ``--student``, ``--resume``, a Dask worker, a Gradescope submission after ``setup.sh``); ``force``
    (``--preflight``) proves again. Each call still starts this interpreter as a grading process and its grader's
    sandboxes (what can change between calls). A failure is never kept, and a folder a student's process could have written is never read (:func:`unsafe_folder`)."""
    out = stream or sys.stderr
    if force is None:
        force = bool(getattr(grader.options, "prove_again", False))
    folder = proof_folder()
    why = unsafe_folder(folder, getattr(grader, "isolation", None))
    setting = None if why else proven_setting(grader)
    if why and (os.environ.get(REUSE_ENV) or force):
        print(f"pre-flight proofs are not kept: {why}", file=out, flush=True)
    if setting is not None and not force:
        earlier = find_proof(folder, setting, grader.options)
        if earlier is not None:
            print(
                earlier.line()
                + " (proven earlier for this same course, kit, environment and machine, under the same limits or "
                f"tighter ones; {REUSED})",
                file=out,
                flush=True,
            )
            return earlier
    passed = _check(grader, stream)
    if setting is not None:
        record = dataclasses.asdict(passed)
        try:
            atomic.write_text(proof_path(folder, setting, grader.options), json.dumps(record))
        except OSError:
            pass  # not kept: the next run proves it again
    return passed


def _check(grader, stream=None) -> Passed:
    started = time.monotonic()
    course, modules = grader.course, tuple(grader.options.modules)
    limits = limits_of(grader.options)
    faults_before = len(grader.faults)
    with tempfile.TemporaryDirectory(prefix="autograder-preflight-") as tmp:
        folders = []
        for name, source in ((REFERENCE, "solutions"), (STUBS, "exercises")):
            folder = Path(tmp) / name
            folder.mkdir()
            for module in modules:
                (folder / f"{module}.py").write_bytes((course.root / source / f"{module}.py").read_bytes())
            folders.append((name, folder))
        try:
            with grader.proving():
                results = {r.student: r for r in grader.grade_class(folders)}
        except GraderError as err:
            raise PreflightFailed(_header(modules, limits) + str(err)) from None
    if grader.stop.is_set():
        raise PreflightFailed("the pre-flight check was interrupted; nothing was graded")
    problems = []
    reference, stubs = results.get(REFERENCE), results.get(STUBS)
    if reference is None or stubs is None:
        problems.append("the grader returned no result for the course's own submissions")
    else:
        short = [s for s in reference.scores if s.module in modules and s.points < s.max_points]
        if short:
            got = sum(s.points for s in reference.scores if s.module in modules)
            top = sum(s.max_points for s in reference.scores if s.module in modules)
            problems.append(
                f"the course's reference got {points_text(got, None)}/{points_text(top, None)} points, not full marks:"
            )
            problems += [
                f"  {s.qualname}: {points_text(s.points, None)}/{points_text(s.max_points, None)}: {_first(s.messages)}"
                for s in short[:12]
            ]
            if len(short) > 12:
                problems.append(f"  ... and {len(short) - 12} more functions")
        wrong = [s for s in stubs.scores if s.module in modules and (s.points > 0 or s.status != Status.NOT_STARTED)]
        if wrong:
            problems.append('the course\'s stubs were not all judged "not started" with 0 points:')
            problems += [
                f"  {s.qualname}: {points_text(s.points, None)} points, {s.status}: {_first(s.messages)}"
                for s in wrong[:12]
            ]
    if problems:
        raise _failed(grader, modules, limits, problems, grader.faults[faults_before:])
    assert reference is not None  # else a problem was raised above
    passed = Passed(
        time.monotonic() - started,
        sum(s.max_points for s in reference.scores if s.module in modules),
        sum(1 for s in reference.scores if s.module in modules),
        grader.options.timeout_per_function,
        grader.options.memory_mb or None,
    )
    print(passed.line(), file=stream or sys.stderr, flush=True)
    return passed


def _failed(grader, modules: tuple[str, ...], limits: str, problems: list[str], faults: list) -> PreflightFailed:
    """The failure naming ``problems``, and the memory limit when a grading process of the course's own was killed
    by it (the limit, not the course, is what to change: a cgroup's kill leaves no last lines of its own to read)."""
    if any(f.fault.kind == FaultKind.MEMORY for f in faults):
        problems = problems + [
            f"the memory limit of {grader.options.memory_mb} MB per grading process (grade --memory, "
            "memory_limit_mb in course.toml) is too low for the course's own reference: its grading process was "
            "killed by it; raise it"
        ]
    tails = [f.stderr_tail for f in faults if f.stderr_tail.strip()]
    return PreflightFailed(_header(modules, limits) + "\n".join(problems) + (last_lines(tails[0]) if tails else ""))


def _header(modules: tuple[str, ...], limits: str) -> str:
    return (
        "the grading environment failed its pre-flight check, so nothing was graded (no student has a row): "
        f"the course's own reference and stubs of {', '.join(modules)}, graded in this grader's sandbox ({limits}), "
        "did not get their known scores.\n"
    )


def _first(messages: list[str]) -> str:
    text = next((m for m in messages if m.strip()), "")
    first = text.strip().splitlines()[0] if text.strip() else "(no message)"
    return first if len(first) <= 300 else first[:300] + "…"
