"""The grader proves its environment before the first student: the course's reference and its stubs, graded.

A grader that zeroes a class and blames the students is the worst thing it can
do, and nothing in a student's row tells a crash of the machine's JAX (an XLA
flag it does not know, a memory limit JAX cannot start under, a broken
install) from a crash of the student's code. So before any student,
:func:`check` grades two submissions that the course itself provides through
the very grader that will grade the class (the same sandbox, limits, XLA
flags, backend, zygotes and trusted verifier):

- the reference (``solutions/<module>.py``), which must get full marks;
- the stubs (``exercises/<module>.py``), which must get nothing, every function "not started".

Otherwise nothing is graded: :class:`PreflightFailed` carries a message for
the instructor naming what failed, under which limits, with the last lines the
crashed grading process wrote (XLA's fatal line among them). ``grade`` runs it
once per run, each Dask worker once per grader it builds, Gradescope's runner
once per submission; ``autograder preflight`` runs it alone (exit 0/1).

:class:`GraderError` is what :class:`~autograder.grading.grader.Grader` raises
when a grading process dies before the student's code was imported: the
grader's failure, never a student's score (the run stops).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.core.outcomes import points_text
from autograder.core.status import Status
from autograder.grading.wire import Event
from autograder.runtime import atomic

REFERENCE = "reference"
STUBS = "stubs"
TAIL_LINES = 15


class PreflightFailed(Exception):
    """The environment failed its pre-flight check; ``str(err)`` is the instructor's message."""


class GraderError(Exception):
    """A grading process died before the student's code ran: the grader's failure, not the student's."""


def fault_before_student(run) -> bool:
    """Whether a grading run's fault (a :class:`~autograder.grading.isolation.limits.RunResult` with one) happened
    before the student's code was imported: no ``import_begin`` event came, so no student code had run."""
    return run.fault is not None and not any(event.get("event") == Event.IMPORT_BEGIN for event in run.events)


def grader_error(module: str, run, limits: str) -> GraderError:
    """The :class:`GraderError` for ``run`` of ``module``, which died before the student's code ran."""
    fault = run.fault
    how = fault.detail or fault.kind
    return GraderError(
        f"a grading process of {module} stopped before the student's code was imported ({how}; {limits}): "
        "this is the grader's environment failing, not the student; nothing more is graded."
        + last_lines(getattr(run, "stderr_tail", ""))
    )


def last_lines(tail: str, n: int = TAIL_LINES) -> str:
    """``tail`` (a process's last stderr) as the message's last part: its last ``n`` lines, and every fatal
    line of it (XLA's ``F...`` lines) even when it is further up."""
    tail = no_terminal_control(tail)  # a student's process may have written there
    lines = [line for line in tail.splitlines() if line.strip() and not _STACK.match(line)]
    if not lines:
        return ""
    shown = lines[-n:]
    fatal = [line for line in lines[:-n] if _fatal(line)]
    return "\nthe grading process's last lines:\n" + "\n".join(f"  | {line}" for line in (*fatal, *shown))


# a terminal's escape sequences (CSI, OSC, and the other ESC forms), then any control character left but a line's
# end and a tab
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b.?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def no_terminal_control(text: str) -> str:
    """``text`` (written by a process that may be a student's) without terminal control sequences or control
    characters (line ends and tabs kept), so that quoting it in the grader's messages moves no cursor, sets no
    title and hides nothing."""
    return _CONTROL.sub("", _ESCAPE.sub("", text.replace("\r\n", "\n")))


# Python's faulthandler dump (every frame of every thread, the extension modules): not the cause, which is
# the line before it (XLA's fatal line, "terminate called ...", an OpenBLAS error)
_STACK = re.compile(
    r"^\s+@\s+0x|^\s+File \".*\", line \d+ in |^(Current thread|Thread) 0x|^Extension modules: |^\s*<no Python frame>|^Stack \(most recent call first\)"
)


def _fatal(line: str) -> bool:
    return (len(line) > 5 and line[0] == "F" and line[1:5].isdigit()) or "Fatal Python error" in line or "FATAL" in line


# What every grading process starts with (autograder.grading.isolation.zygote), then JAX's backend, in the grading
# processes' environment: an interpreter that cannot do this cannot grade anyone.
_INTERPRETER_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from autograder.runtime import preload
from autograder.runtime.devices import use_course_backend
use_course_backend()
preload.import_all(preload.GRADING)
import jax, flax, optax, pytest, hypothesis
for device in jax.devices():  # the course's devices compute, each of them
    assert int(jax.device_put(jax.numpy.arange(3), device).sum()) == 3
"""
INTERPRETER_TIMEOUT = 300.0


def check_interpreter(env: dict[str, str], kit: Path | None = None) -> None:
    """Start this interpreter as a grading process starts (isolated mode, the grading processes' ``env``):
    import the libraries and start JAX's backend. Raises :class:`PreflightFailed` with its own last lines when
    it cannot (a JAX that cannot be imported, a backend that does not start)."""
    kit = kit or Path(__file__).resolve().parents[2]
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _INTERPRETER_PROBE, str(kit)],
            env=env,
            capture_output=True,
            text=True,
            timeout=INTERPRETER_TIMEOUT,
            stdin=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),
        )
    except subprocess.TimeoutExpired:
        raise PreflightFailed(
            f"this Python ({sys.executable}) did not import the course's libraries within {INTERPRETER_TIMEOUT:g} s; "
            "nothing was graded"
        ) from None
    if proc.returncode != 0:
        raise PreflightFailed(
            f"this Python ({sys.executable}) cannot run a grading process: importing the course's libraries and "
            f"starting JAX's CPU backend failed (exit status {proc.returncode}), so nothing was graded"
            + last_lines(proc.stderr)
        )


@dataclass(frozen=True)
class Passed:
    seconds: float
    points: float
    functions: int

    def line(self) -> str:
        return (
            f"pre-flight passed in {self.seconds:.1f} s: the course's reference got full marks "
            f"({points_text(self.points, None)} points) and its stubs nothing, in this grader's sandbox and limits"
        )


def limits_of(options) -> str:
    """The grading limits of ``options`` (an :class:`~autograder.grading.grader.Options`), in words."""
    memory = f"memory limit {options.memory_mb} MB per grading process" if options.memory_mb else "no memory limit"
    return f"{memory}, {options.timeout_per_function:g} s per function, {options.jobs} job(s)"


REUSE_ENV = "AUTOGRADER_PREFLIGHT_CACHE"  # where the grader keeps its proofs (default: its user's cache folder)
REUSED = "reused: --preflight proves again"  # the end of the line a reused proof prints


def proof_folder() -> Path:
    """Where proofs are kept: ``AUTOGRADER_PREFLIGHT_CACHE``, else ``$XDG_CACHE_HOME/autograder/preflight``
    (``~/.cache/autograder/preflight``), the grader's own user's folder, which no sandbox shows."""
    if os.environ.get(REUSE_ENV):
        return Path(os.environ[REUSE_ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "autograder" / "preflight"


def unsafe_folder(folder: Path, isolation) -> str | None:
    """Why proofs in ``folder`` cannot be trusted, or None. A proof is reused only where no student's process
    can have written it: the folder is a real folder (no link) of the grader's own uid that nobody else may
    write, and the students' processes do not run as the grader without a sandbox (``isolation``, an
    :class:`~autograder.grading.isolation.bubblewrap.Isolation`, whose "none" means they do)."""
    if getattr(isolation, "sandbox", None) == "none":
        return "students' processes run as the grader here (no sandbox), so a proof could be a student's"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as err:
        return f"{folder} cannot be used ({err.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder (a link?)"
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return f"{folder} is not the grader's alone (owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})"
    return None


TRUSTED_COMPILED = "trusted-compiled"  # beside the proofs: the trusted side's compilation caches


def kept_compile_cache(isolation) -> Path | None:
    """The trusted side's compilation cache kept between ``grade`` calls, or None (a scratch folder of the run then).

    The programs the references and checks compile on the trusted side (the plan's givens, the verifiers, the
    pre-flight's reference) are the same in every call with the same libraries: a later call, a ``--student``
    regrade or a Gradescope submission after ``setup.sh`` loads them instead of compiling them again. The folder
    is beside the proofs (:func:`proof_folder`: the grader's own, which no sandbox shows), one per interpreter,
    libraries and machine, and used only where a proof could be kept (:func:`unsafe_folder`:
    no student's process can write there). Only trusted processes are given it; students' caches stay theirs."""
    from autograder.core import versions

    folder = proof_folder()
    if unsafe_folder(folder, isolation) is not None:
        return None
    # (JAX's own key of each program covers the program, the XLA flags and the compile options)
    setting = {"python": sys.executable, "version": sys.version, "libraries": versions.installed()}
    setting["machine"] = machine_seen()
    name = hashlib.sha256(json.dumps(setting, sort_keys=True, default=str).encode()).hexdigest()[:32]
    kept = folder / TRUSTED_COMPILED / name
    try:
        kept.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(kept)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return kept


def machine_seen() -> dict[str, object]:
    """What of the machine a proof depends on: the CPUs this process may use and the memory it sees."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 0
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = 0
    return {"cpus": cpus, "memory_bytes": memory}


def proven_setting(grader) -> str:
    """A digest of everything a pre-flight pass vouches for: the course and kit (every byte the grading
    processes get), the options and limits, the isolation in force, this interpreter and its libraries, the
    grading processes' environment (the XLA flags as probed, the backend), the CPUs and memory seen. A pass is
    reused only for the very same setting; a failure is never kept."""
    from autograder.core import versions
    from autograder.grading.isolation.processes import child_env

    digest = hashlib.sha256()
    for files in (grader.snapshot.course, grader.snapshot.kit):
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    options = grader.options
    env = child_env()
    setting = {
        "modules": list(options.modules),
        "timeout": options.timeout_per_function,
        "memory": options.memory_mb,
        "jobs": options.jobs,
        "seed": getattr(options, "seed", None),
        "run_as": getattr(options, "run_as", None),
        "isolation": repr(getattr(grader, "isolation", None)),
        "python": sys.executable,
        "version": sys.version,
        "libraries": versions.installed(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "grading_env": {k: env.get(k, "") for k in ("XLA_FLAGS", "JAX_PLATFORMS", "OMP_NUM_THREADS")},
        "machine": machine_seen(),
    }
    digest.update(json.dumps(setting, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def check(grader, stream=None, *, force: bool | None = None) -> Passed:
    """Grade the course's reference and stubs with ``grader`` (a fresh
    :class:`~autograder.grading.grader.Grader`); raises :class:`PreflightFailed` unless the reference gets
    full marks and the stubs nothing. Prints one line when it passed (on ``stream``, stderr by default).

    A pass is kept as a proof in :func:`proof_folder` under its :func:`proven_setting` and reused, said so, by
    every later call of the very same setting (``grade``, ``--student``, ``--resume``, a Dask worker, a
    Gradescope submission after ``setup.sh``); ``force`` (``--preflight``) proves again. Each call still starts
    this interpreter as a grading process and its grader's sandboxes (what can change between calls). A failure
    is never kept, and a folder a student's process could have written is never read (:func:`unsafe_folder`)."""
    out = stream or sys.stderr
    if force is None:
        force = bool(getattr(grader.options, "prove_again", False))
    folder = proof_folder()
    why = unsafe_folder(folder, getattr(grader, "isolation", None))
    kept = None if why else folder / f"{proven_setting(grader)}.json"
    if why and (os.environ.get(REUSE_ENV) or force):
        print(f"pre-flight proofs are not kept: {why}", file=out, flush=True)
    if kept is not None and not force:
        earlier = read_proof(kept)
        if earlier is not None:
            print(
                earlier.line()
                + f" (proven earlier for this same course, kit, environment, machine and limits; {REUSED})",
                file=out,
                flush=True,
            )
            return earlier
    passed = _check(grader, stream)
    if kept is not None:
        try:
            atomic.write_text(
                kept, json.dumps({"seconds": passed.seconds, "points": passed.points, "functions": passed.functions})
            )
        except OSError:
            pass  # not kept: the next run proves it again
    return passed


def read_proof(path: Path) -> Passed | None:
    """The proof at ``path``, when it is a plain file of the grader's own that nobody else may write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > 4096:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = json.loads(f.read().decode("utf-8"))
        passed = Passed(float(data["seconds"]), float(data["points"]), int(data["functions"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    finally:
        os.close(fd)
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
        tails = [tail for _module, _fault, tail in grader.faults[faults_before:] if tail.strip()]
        raise PreflightFailed(_header(modules, limits) + "\n".join(problems) + (last_lines(tails[0]) if tails else ""))
    assert reference is not None  # else a problem was raised above
    passed = Passed(
        time.monotonic() - started,
        sum(s.max_points for s in reference.scores if s.module in modules),
        sum(1 for s in reference.scores if s.module in modules),
    )
    print(passed.line(), file=stream or sys.stderr, flush=True)
    return passed


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
