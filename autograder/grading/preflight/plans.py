"""The trusted side's plan kept beside the proofs and reused: a later call of the same setting lists no checks again.

The plan (every check of the graded modules, the function it judges, where its verdict is decided) and the givens
recorded with it (what the fixtures of modules judged on the trusted side only are answered from) depend only on
what a pre-flight proof's key covers (:func:`~autograder.grading.preflight.proofs.setting_of`: the course's and the
kit's bytes, the options and the seed, the libraries, the isolation, the machine). Listing them costs a trusted
process that waits for its zygote and collects the course: seconds on every ``grade`` call, before the first student
can start. :class:`KeptPlans` keeps them in the grader's own proof folder (never one a student's process can
write: :func:`~autograder.grading.preflight.proofs.unsafe_folder`), under the setting's digest, written whole or not
at all; a plan that cannot be read back as the grader wrote it is made again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from autograder.grading.preflight.proofs import grader_owned, kept_beside
from autograder.grading.wire import PlannedCheck
from autograder.runtime import atomic

PLANS = "plans"  # beside the proofs
MAX_PLAN_BYTES = 8 << 20
MAX_GIVENS_BYTES = 256 << 20


class KeptPlans:
    """The plan of one setting, kept between calls (``load``, ``keep``); ``folder`` None: nothing is kept."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    @classmethod
    def of(cls, snapshot, options, isolation) -> KeptPlans:
        """The kept plan of this setting, in the proof folder where proofs may be kept (else none)."""
        return cls(kept_beside(PLANS, snapshot, options, isolation))

    def load(self, givens: Path) -> list[PlannedCheck] | None:
        """The kept plan, its givens copied into ``givens``; None when there is none that reads back whole."""
        if self.folder is None or not grader_owned(self.folder, directory=True):
            return None
        plan_file = self.folder / "plan.json"
        if not grader_owned(plan_file) or plan_file.stat().st_size > MAX_PLAN_BYTES:
            return None
        try:
            data = json.loads(plan_file.read_text(encoding="utf-8"))
            checks = [PlannedCheck.from_wire(c) for c in data]
        except (OSError, ValueError, TypeError, KeyError):
            return None
        if not checks or not all(isinstance(c.id, str) and isinstance(c.module, str) for c in checks):
            return None
        kept_givens = self.folder / "givens"
        if kept_givens.exists():
            if not grader_owned(kept_givens, directory=True):
                return None
            try:
                shutil.copytree(kept_givens, givens, symlinks=True, dirs_exist_ok=True)
            except OSError:
                return None
        return checks

    def keep(self, plan: list[PlannedCheck], givens: Path) -> None:
        """Keep ``plan`` and the givens recorded in ``givens`` (best effort: a plan not kept is made again)."""
        if self.folder is None or not plan:
            return
        partial = self.folder.with_name(f"{self.folder.name}.{os.getpid()}.partial")
        try:
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(mode=0o700, parents=True)
            if givens.is_dir() and _size(givens) <= MAX_GIVENS_BYTES and any(givens.iterdir()):
                shutil.copytree(givens, partial / "givens", symlinks=True)
            atomic.write_text(partial / "plan.json", json.dumps([c.to_wire() for c in plan]))
            try:
                partial.rename(self.folder)
            except OSError:  # another call kept the same plan first
                shutil.rmtree(partial, ignore_errors=True)
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
