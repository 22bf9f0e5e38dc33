"""The course's own compiled programs, every student's first compilation cache.

Each student's grading processes share one compilation cache of their own (``pipeline.box_of``), which starts
empty: a cold submission compiles again every program the checks run, the eager operations on each shape a check
draws (a scatter, a select, a broadcast, per shape), the checks' own programs and the function under test. On a
small module that is a quarter of its grading process's time, and every student of a class pays it again.

Most of those programs are the very programs the course's reference compiles when the pre-flight grades it: the
inputs are the same (derandomized, or drawn from the same seed), so are the eager operations on them and the
checks' code, and a correct answer written as the course teaches it often lowers to the reference's own program.
:class:`KeptCompiled` keeps the cache the reference's grading processes filled during the pre-flight (course code
and kit only, in a sandbox no student used: :meth:`~autograder.grading.grader.Grader.proving`), and each student's
sandbox starts with a copy of it. A student's processes then load what the reference compiled instead of compiling
it; what they compile themselves goes into their own copy, which no other student ever sees (a cache is executables
that every process using it writes and runs: nothing a student's process writes reaches another).

The grade cannot change: JAX loads an executable only for the very program it would have compiled (its key is the
program, the compile options, the backend and the versions), and the same executable computes the same values.

Kept beside the proof of the setting (the same course, kit, modules, seed, isolation, interpreter, libraries,
XLA flags and machine: :func:`~autograder.grading.preflight.proofs.kept_beside`), only when the pre-flight passed,
in the grader's own folder that no student's process can write, read back only as the grader's own plain files;
where proofs cannot be kept, the run's own copy serves that run. ``AUTOGRADER_CLASS_SHARING=0`` turns it off with
the rest of what the grader shares.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

from autograder.grading.isolation.scratch import copy_plain_files
from autograder.grading.preflight.proofs import grader_owned, kept_beside

COMPILED = "course-compiled"  # beside the proofs


class KeptCompiled:
    """The reference's compiled programs for one grader: taken from the pre-flight's reference (:meth:`take`),
    kept for later calls of the setting when the pre-flight passed (:meth:`keep`), copied into each student's
    cache folder (:meth:`seed`). ``folder`` None: nothing is kept between calls (this run's copy only)."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self._lock = threading.Lock()
        self._run_copy: Path | None = None  # what this run's pre-flight took

    @classmethod
    def of(cls, snapshot, options, isolation) -> KeptCompiled:
        """The programs kept for this setting, in the proof folder where proofs may be kept (else this run's)."""
        return cls(kept_beside(COMPILED, snapshot, options, isolation))

    def take(self, cache: Path) -> None:
        """The reference's grading processes have ended: their cache folder ``cache`` (in the reference's sandbox,
        which no student used) becomes this run's copy."""
        copy = Path(tempfile.mkdtemp(prefix="autograder-compiled-"))
        copy_plain_files(cache, copy)
        with self._lock:
            old, self._run_copy = self._run_copy, copy
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def keep(self) -> bool:
        """The pre-flight passed: this run's copy is kept for later calls of the setting (replacing what was kept,
        at once); whether it was."""
        with self._lock:
            copy = self._run_copy
        if self.folder is None or copy is None:
            return False
        parent = self.folder.parent
        try:
            parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not grader_owned(parent, directory=True):
                return False
            staged = Path(tempfile.mkdtemp(dir=parent, prefix=f".{self.folder.name}."))
            copy_plain_files(copy, staged)
            old = Path(tempfile.mkdtemp(dir=parent, prefix=f".{self.folder.name}.old."))
            try:
                os.replace(self.folder, old / "gone")  # a folder cannot be replaced by another in one step
            except FileNotFoundError:
                pass
            os.replace(staged, self.folder)
            shutil.rmtree(old, ignore_errors=True)
        except OSError:
            return False
        return True

    def source(self) -> Path | None:
        """Where the programs to start a student's cache with are: this run's copy, else the kept folder when it is
        the grader's own; None when there are none."""
        with self._lock:
            if self._run_copy is not None:
                return self._run_copy
        if self.folder is not None and grader_owned(self.folder, directory=True):
            return self.folder
        return None

    def seed(self, cache: Path) -> int:
        """Copy the programs into ``cache``, a student's cache folder the grader made and has not handed over yet;
        how many were copied."""
        source = self.source()
        if source is None:
            return 0
        return copy_plain_files(source, cache, owned=source == self.folder)[0]

    def close(self) -> None:
        """Remove this run's copy (what is kept stays)."""
        with self._lock:
            copy, self._run_copy = self._run_copy, None
        if copy is not None:
            shutil.rmtree(copy, ignore_errors=True)
