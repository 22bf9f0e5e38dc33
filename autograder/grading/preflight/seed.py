"""The programs a student's grading processes would compile for JAX's own operations, compiled once by the
pre-flight's reference and planted in every later student's sandbox: :class:`StudentSeed`.

Each student's sandbox starts with an empty compilation cache of its own (a cache is executables its processes
write and run: one student's must never reach another). So every student compiled the same few hundred programs
again: a correct whole course compiles about 770, most of them one operation run without jit on a check's shapes
(``jit_add``, ``jit_dot_general``, ``jit__normal``), the same for every correct way of writing a function.

The pre-flight grades the course's reference in a sandbox like a student's. When its processes are done
(:meth:`StudentSeed.keep`), the grader copies from its cache the programs of JAX's own operations alone
(:func:`autograder.runtime.library_programs.names`, asked of a process of its own) and no program named after a
function of the course's files: never one compiled from the reference's own functions, which would hand the student
the reference's compiled answer. They are kept beside the proofs, under the setting's digest
(:func:`~autograder.grading.preflight.proofs.kept_beside`: the grader's own folder, which no sandbox shows, and only
where proofs can be kept). Every later student's sandbox starts with a copy of them (:meth:`StudentSeed.plant`):
JAX loads a program it finds under the key of the program it was about to compile, and compiles the others, so a
student's code compiles what is its own. Nothing a student's process writes goes back to the seed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from autograder.grading.preflight.interpreter import run_isolated
from autograder.grading.preflight.proofs import grader_owned, kept_beside

SEED = "student-seed"  # beside the proofs
MAX_SEED_FILES = 5000
MAX_SEED_BYTES = 64 << 20
NAMES_TIMEOUT = 120.0
# what JAX's persistent cache names a program's file: jit_<the function's __name__>-<sha256 of its key>-cache
_ENTRY = re.compile(r"jit_(?P<name>.+)-[0-9a-f]{64}-cache")


def program_name(file_name: str) -> str | None:
    """The name of the function a cache file's program was compiled from (``jit_add-<digest>-cache``: ``add``)."""
    match = _ENTRY.fullmatch(file_name)
    return match.group("name") if match else None


def course_names(course_root: Path) -> frozenset[str]:
    """Every function and class name defined in the course's ``solutions/`` and ``exercises/`` files, nested ones
    included: a program of one of these names may be the reference's own."""
    found: set[str] = set()
    for folder in ("solutions", "exercises"):
        for path in sorted((Path(course_root) / folder).glob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                continue
            found.update(
                node.name
                for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            )
    return frozenset(found)


def seed_names(course_root: Path, env: dict[str, str] | None = None) -> frozenset[str]:
    """The names of the programs a seed may hold: JAX's own operations (:func:`library_names`) but those named like
    a function of the course's files (:func:`course_names`)."""
    return library_names(env) - course_names(course_root)


def library_names(env: dict[str, str] | None = None) -> frozenset[str]:
    """:func:`autograder.runtime.library_programs.names`, from a process of this interpreter (it imports JAX, which
    the grader's own process does not); empty when it cannot tell."""
    kit = str(Path(__file__).resolve().parents[3])
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); from autograder.runtime import library_programs as l; l.main()"
    )
    try:
        done = run_isolated(probe, kit, env=env, timeout=NAMES_TIMEOUT)
        names = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str))


class StudentSeed:
    """The seed of one setting (``keep``, ``plant``); ``folder`` None: nothing is kept or planted."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    @classmethod
    def of(cls, snapshot, options, isolation) -> StudentSeed:
        """The seed of this setting, in the proof folder where proofs may be kept (else none)."""
        return cls(kept_beside(SEED, snapshot, options, isolation))

    def keep(self, cache: Path, allowed: frozenset[str]) -> int:
        """Keep the programs named in ``allowed`` (:func:`seed_names`) from ``cache`` (the compilation cache the
        course's reference was graded with, its processes ended); how many. Best effort: a seed not kept is made
        again by the next pre-flight. The files are written in the order of their names (their times tell nothing
        of the order the reference ran its operations in)."""
        if self.folder is None or not allowed:
            return 0
        try:
            source = os.open(cache, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY)
        except OSError:
            return 0
        partial = self.folder.with_name(f"{self.folder.name}.{os.getpid()}.partial")
        kept = size = 0
        try:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(mode=0o700, parents=True)
            for name in sorted(os.listdir(source)):
                if program_name(name) not in allowed or kept >= MAX_SEED_FILES:
                    continue
                data = _read_plain(name, source, MAX_SEED_BYTES - size)
                if data is None:
                    continue
                (partial / name).write_bytes(data)
                os.chmod(partial / name, 0o600)
                kept, size = kept + 1, size + len(data)
            shutil.rmtree(self.folder, ignore_errors=True)
            partial.rename(self.folder)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
            return 0
        finally:
            os.close(source)
        return kept

    def plant(self, cache: Path) -> int:
        """Copy the seed into ``cache`` (a new student sandbox's compilation cache folder, made when missing); how
        many programs. Each copy keeps its seed file's time, so what the student's processes compile is newer."""
        if self.folder is None or not grader_owned(self.folder, directory=True):
            return 0
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return 0
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        planted = 0
        for name in names[:MAX_SEED_FILES]:
            path = self.folder / name
            if program_name(name) is None or not grader_owned(path):
                continue
            try:
                shutil.copy2(path, cache / name, follow_symlinks=False)
            except OSError:
                continue
            planted += 1
        return planted


def _read_plain(name: str, folder: int, max_bytes: int) -> bytes | None:
    """The bytes of the plain file ``name`` in the open folder ``folder`` (never through a link, no pipe waited
    on), when it has at most ``max_bytes``; else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(max_bytes + 1)
        return data if len(data) <= max_bytes else None
    finally:
        os.close(fd)
