"""The trusted side's confirmations kept beside the proofs: the same claims on the same evidence are not replayed again.

The verifier (:mod:`autograder.grading.trusted.verifier`) is a function of what it is asked and of the setting it runs
in: the claimed checks, the transcripts the student's process recorded for them, the student's files it decides
source checks from, the seed, and the course, kit, libraries and machine a pre-flight proof's key covers
(:func:`~autograder.grading.preflight.proofs.setting_of`). A later ``grade`` call of the same setting that asks the
very same thing (a second call of an unchanged submission, a ``--student`` regrade, a classmate whose request is the
same byte for byte) gets the same answer: :class:`KeptConfirmations` keeps each answer, keyed by the digest of the
whole request, in the grader's own proof folder (never one a student's process can write:
:func:`~autograder.grading.preflight.proofs.unsafe_folder`), and hands it back instead of replaying the checks.

What is kept is only ever the trusted side's own answer: written by the grader from what its verifier answered, read
back only as the grader's own file (a real file of its uid that nobody else may write), and only when every claim
was confirmed or found not replayable (a claim the verifier failed is asked again each call: a failure may be the
machine's, and a grade must never keep a zero that is the grader's fault). The student's process writes none of it:
its transcripts are only the key's input. The pre-flight never reads them (it proves the verifier answers now), and
``AUTOGRADER_CLASS_SHARING=0`` turns them off with the rest of what the trusted side shares.

Beside the answers, the grader notes the digest of each submission's files whose answer it kept
(:meth:`KeptConfirmations.mark_answered`): a later call that grades the very same files alone does not have its
verifier rehearse (:mod:`~autograder.grading.preflight.rehearsal`) for a request it will most likely find answered.
A note decides nothing: the request is still looked up by its own digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from autograder.grading.preflight.proofs import grader_owned, kept_beside, read_grader_owned, write_grader_owned
from autograder.grading.wire import Verdict, answered_whole

CONFIRMED = "confirmed"  # beside the proofs
MAX_ANSWER_BYTES = 4 << 20  # one request's answer (a whole course's verdicts with messages: a few KB)
MAX_KEPT = 50_000  # answers kept per setting, at most (then nothing more is kept: they are only a speed-up)
SUBMISSION = "submission-"  # beside the answers: the files' digest of a submission whose answer is kept
_HEX = re.compile(r"[0-9a-f]{64}")


class KeptConfirmations:
    """The trusted side's answers of one setting, kept between calls; ``folder`` None: nothing is kept."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    @classmethod
    def of(cls, snapshot, options, isolation) -> KeptConfirmations:
        """The answers kept for this setting, in the proof folder where proofs may be kept (else none)."""
        return cls(kept_beside(CONFIRMED, snapshot, options, isolation))

    @staticmethod
    def key(claims: list[str], transcripts: dict, sources: dict, seed: int | None, givens: bool) -> str | None:
        """The digest of a whole verify request (None: it is not plain JSON data, so it is never kept)."""
        asked = {
            "checks": sorted(claims),
            "transcripts": transcripts,
            "sources": sources,
            "seed": seed,
            "givens": givens,
        }
        try:
            text = json.dumps(asked, sort_keys=True, ensure_ascii=True, allow_nan=True)
        except (TypeError, ValueError):
            return None
        return hashlib.sha256(text.encode()).hexdigest()

    def load(self, key: str | None, claims: list[str]) -> dict[str, Verdict] | None:
        """The answer kept for the request ``key``: a verdict for every claim, none of them a failure; else None."""
        if self.folder is None or key is None or not grader_owned(self.folder, directory=True):
            return None
        raw = read_grader_owned(self.folder / f"{key}.json", MAX_ANSWER_BYTES)
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            verdicts = {check: Verdict.from_wire(data[check]) for check in claims}
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        if not answered_whole(verdicts, claims):
            return None
        return verdicts

    def keep(self, key: str | None, claims: list[str], verdicts: dict[str, Verdict]) -> bool:
        """Keep the verifier's answer ``verdicts`` to the request ``key`` (best effort: one not kept is asked again);
        whether it was kept."""
        if self.folder is None or key is None or not answered_whole(verdicts, claims):
            return False
        text = json.dumps({check: verdicts[check].to_wire() for check in claims})
        try:
            if self.folder.is_dir() and _count(self.folder) >= MAX_KEPT:
                return False
            return write_grader_owned(self.folder, f"{key}.json", text)
        except OSError:
            return False

    def mark_answered(self, submission: str) -> None:
        """Note that a request of the submission whose files digest to ``submission`` has its answer kept: a later
        call of the very same files will most likely ask the very same thing (what its verifier need not rehearse
        for: :mod:`~autograder.grading.preflight.rehearsal`). Best effort; a note, never an answer."""
        if self.folder is None or not _HEX.fullmatch(submission):
            return
        try:
            if grader_owned(self.folder, directory=True):
                (self.folder / f"{SUBMISSION}{submission}").touch(mode=0o600, exist_ok=True)
        except OSError:
            pass

    def answered(self, submission: str) -> bool:
        """Whether :meth:`mark_answered` noted ``submission`` (the grader's own note in its own folder)."""
        if self.folder is None or not _HEX.fullmatch(submission) or not grader_owned(self.folder, directory=True):
            return False
        return grader_owned(self.folder / f"{SUBMISSION}{submission}")


def _count(folder: Path) -> int:
    with os.scandir(folder) as entries:
        return sum(1 for _ in entries)
