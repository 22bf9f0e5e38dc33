"""A pre-flight pass kept as a proof and reused: where proofs are kept (:func:`proof_folder`, only where no
student's process can write: :func:`unsafe_folder`), the setting a proof vouches for (:func:`proven_setting`),
reading one back (:func:`read_proof`), and the trusted side's compilation cache kept beside them
(:func:`kept_compile_cache`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.core.outcomes import points_text


@dataclass(frozen=True)
class Passed:
    seconds: float
    points: float
    functions: int
    # The limits the pass was proven under (per function, per grading process; None: none): it vouches for every
    # call of its setting whose limits are the same or looser (:func:`vouches_for`).
    timeout: float | None = None
    memory_mb: int | None = None

    def line(self) -> str:
        return (
            f"pre-flight passed in {self.seconds:.1f} s: the course's reference got full marks "
            f"({points_text(self.points, None)} points) and its stubs nothing, in this grader's sandbox and limits"
        )


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
    """A digest of everything a pre-flight pass vouches for but its limits (:func:`setting_of` the grader's parts)."""
    return setting_of(grader.snapshot, grader.options, getattr(grader, "isolation", None))


def setting_of(snapshot, options, isolation) -> str:
    """A digest of everything a pre-flight pass vouches for but the limits it kept to: the course and kit (every
    byte the grading processes get), the modules and the seed, the isolation in force, this interpreter and its
    libraries, the grading processes' environment (the XLA flags as probed, the backend), the CPUs and memory seen.
    A pass is reused only for the very same setting, under the same limits or looser ones (:func:`vouches_for`);
    ``--jobs`` is not part of it (the pre-flight grades two submissions, the reference and the stubs, whatever the
    number of jobs); a failure is never kept."""
    from autograder.core import versions
    from autograder.grading.isolation.processes import child_env

    digest = hashlib.sha256()
    for files in (snapshot.course, snapshot.kit):
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    env = child_env()
    setting = {
        "modules": list(options.modules),
        "seed": getattr(options, "seed", None),
        "run_as": getattr(options, "run_as", None),
        "isolation": repr(isolation),
        "python": sys.executable,
        "version": sys.version,
        "libraries": versions.installed(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "grading_env": {k: env.get(k, "") for k in ("XLA_FLAGS", "JAX_PLATFORMS", "OMP_NUM_THREADS")},
        "machine": machine_seen(),
    }
    digest.update(json.dumps(setting, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def vouches_for(passed: Passed, options) -> bool:
    """A pass proven under ``passed``'s limits holds for ``options``' limits: the same or looser (a reference that
    finished every function within a shorter time, in less memory, finishes within more; no limit is the
    loosest)."""
    timeout, memory = options.timeout_per_function, options.memory_mb or None
    time_ok = passed.timeout is not None and (timeout is None or timeout >= passed.timeout)
    memory_ok = memory is None or (passed.memory_mb is not None and memory >= passed.memory_mb)
    return time_ok and memory_ok


def proof_path(folder: Path, setting: str, options) -> Path:
    """Where a pass of ``setting`` proven under ``options``' limits is kept."""
    return folder / f"{setting}.t{options.timeout_per_function:g}.m{options.memory_mb or 0}.json"


def find_proof(folder: Path, setting: str, options) -> Passed | None:
    """A kept pass of ``setting`` that vouches for ``options``' limits (:func:`vouches_for`), or None."""
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.startswith(f"{setting}.") and p.suffix == ".json")
    except OSError:
        return None
    for name in names:
        passed = read_proof(folder / name)
        if passed is not None and vouches_for(passed, options):
            return passed
    return None


def kept_proof(snapshot, options, isolation) -> tuple[Path | None, Passed | None]:
    """Where a pass of this setting and limits is kept (None where proofs cannot be trusted: :func:`unsafe_folder`),
    and a kept pass that vouches for it, if any and unless ``options.prove_again`` (``--preflight``)."""
    folder = proof_folder()
    if unsafe_folder(folder, isolation):
        return None, None
    setting = setting_of(snapshot, options, isolation)
    kept = proof_path(folder, setting, options)
    return kept, None if getattr(options, "prove_again", False) else find_proof(folder, setting, options)


def kept_beside(kind: str, snapshot, options, isolation) -> Path | None:
    """Where what the grader keeps of ``kind`` for this setting lives beside the proofs (``plans``, ``confirmed``):
    ``<proof folder>/<kind>/<setting>``; None where proofs cannot be trusted (:func:`unsafe_folder`)."""
    root = proof_folder()
    if unsafe_folder(root, isolation) is not None:
        return None
    return root / kind / setting_of(snapshot, options, isolation)


def grader_owned(path: Path, *, directory: bool = False) -> bool:
    """``path`` is a real file (or folder, no link) of the grader's own uid that nobody else may write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR if directory else stat.S_ISREG
    return kind(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def write_grader_owned(folder: Path, name: str, text: str) -> bool:
    """Write ``text`` to ``folder / name`` through a new private file (mode 0600) of the grader's own, replaced at
    once, in ``folder`` (made 0700 when missing) when that is the grader's own; whether it was written. Raises
    OSError as writing does."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not grader_owned(folder, directory=True):
        return False
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, folder / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def read_grader_owned(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a plain file (never through a link) of the grader's own that nobody else may
    write, of at most ``max_bytes``; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 or st.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(max_bytes + 1)
        return raw if len(raw) <= max_bytes else None  # grown past the limit since: not read
    except OSError:
        return None
    finally:
        os.close(fd)


def read_proof(path: Path) -> Passed | None:
    """The proof at ``path``, when it is a plain file of the grader's own that nobody else may write."""
    raw = read_grader_owned(path, 4096)
    if raw is None:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        timeout, memory = data["timeout"], data["memory_mb"]
        passed = Passed(
            float(data["seconds"]),
            float(data["points"]),
            int(data["functions"]),
            None if timeout is None else float(timeout),
            None if memory is None else int(memory),
        )
    except (ValueError, TypeError, KeyError):
        return None
    return passed
