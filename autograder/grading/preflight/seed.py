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
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from autograder.core import syntax
from autograder.grading.isolation.scratch import copy_plain_files
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


def course_names(files: Mapping[str, bytes]) -> frozenset[str]:
    """Every function and class name defined in the course's ``solutions/`` and ``exercises/`` files (``files``: a
    snapshot's, by relative path), nested ones included: a program of one of these names may be the reference's own."""
    found: set[str] = set()
    for rel in sorted(files):
        if not (rel.startswith(("solutions/", "exercises/")) and rel.endswith(".py")):
            continue
        try:
            tree = syntax.parse(files[rel])
        except (SyntaxError, ValueError):
            continue
        found.update(
            node.name
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        )
    return frozenset(found)


def seed_names(files: Mapping[str, bytes], env: dict[str, str] | None = None) -> frozenset[str]:
    """The names of the programs a seed may hold: JAX's own operations (:func:`library_names`) but those named like
    a function of the course's ``files`` (:func:`course_names`)."""
    return library_names(env) - course_names(files)


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
        again by the next pre-flight. Every file gets one time (their times tell nothing of the order the reference
        ran its operations in)."""
        if self.folder is None or not allowed:
            return 0
        partial = self.folder.with_name(f"{self.folder.name}.{os.getpid()}.partial")
        try:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(mode=0o700, parents=True)
            kept, _ = copy_plain_files(
                cache,
                partial,
                max_files=MAX_SEED_FILES,
                max_bytes=MAX_SEED_BYTES,
                only=lambda n: program_name(n) in allowed,
            )
            now = time.time_ns()
            for path in partial.iterdir():
                os.chmod(path, 0o600)
                os.utime(path, ns=(now, now))
            shutil.rmtree(self.folder, ignore_errors=True)
            partial.rename(self.folder)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
            return 0
        return kept

    def plant(self, cache: Path) -> int:
        """Copy the seed into ``cache`` (a new student sandbox's compilation cache folder, made when missing); how
        many programs. Each copy keeps its seed file's time, so what the student's processes compile is newer."""
        folder = self.folder
        if folder is None or not grader_owned(folder, directory=True):
            return 0

        def planted(name: str) -> bool:  # a program's file, the grader's alone
            return program_name(name) is not None and grader_owned(folder / name)

        return copy_plain_files(folder, cache, max_files=MAX_SEED_FILES, max_bytes=MAX_SEED_BYTES, only=planted)[0]
