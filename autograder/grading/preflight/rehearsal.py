"""The pre-flight's own verify request, kept beside its proof: what a later call's verifier rehearses while it waits.

A verifier's first request of a run costs several times a later one: it imports the checks' code paths, traces
and compiles the reference's programs, and computes the reference's results that every later student shares
(:mod:`autograder.grading.trusted.shared`). A class pays that once; one submission graded alone (each Gradescope
submission, a regrade, a late arrival) pays it after its grading process ends, on the critical path, while the
verifier sat idle beside the grading process the whole time.

When the pre-flight proves a setting, its verifier confirms the course's reference: :class:`KeptRehearsal` keeps
that request (the claims, the transcripts the reference's grading process recorded, the reference's files) beside
the proof, under the setting's digest. A later call of the same setting that reuses the proof and grades one
submission on a machine with a spare CPU sends it to its verifier first
(:meth:`~autograder.grading.trusted.client.TrustedSide.rehearse`): the verifier warms up on the reference while
the student's code runs, and the student's own request is answered by a warm verifier. The rehearsal's answer is
thrown away; it decides nothing (the student's request is replayed in full, as ever), so grades are the same bytes
with or without it.

Kept only by the grader, from its own verifier's request, in its own proof folder (never one a student's process
can write: :func:`~autograder.grading.preflight.proofs.unsafe_folder`), and only when the reference's every claim
was confirmed; read back only as the grader's own file. ``AUTOGRADER_CLASS_SHARING=0`` turns it off with the rest of
what the trusted side shares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.preflight.proofs import grader_owned, kept_beside, read_grader_owned, write_grader_owned

REHEARSAL = "rehearsal"  # beside the proofs
REQUEST = "request.json"
MAX_REQUEST_BYTES = 64 << 20  # a whole course's transcripts are a few MB


@dataclass(frozen=True)
class Rehearsal:
    """A verify request of the course's reference: what :meth:`TrustedSide.verify` was asked."""

    claims: list[str]
    transcripts: dict
    sources: dict[str, str]


class KeptRehearsal:
    """The rehearsal of one setting, kept between calls (``load``, ``keep``); ``folder`` None: nothing is kept."""

    def __init__(self, folder: Path | None):
        self.folder = folder

    @classmethod
    def of(cls, snapshot, options, isolation) -> KeptRehearsal:
        """The rehearsal kept for this setting, in the proof folder where proofs may be kept (else none)."""
        return cls(kept_beside(REHEARSAL, snapshot, options, isolation))

    def load(self) -> Rehearsal | None:
        """The kept request, when it reads back whole as the grader wrote it; else None."""
        if self.folder is None or not grader_owned(self.folder, directory=True):
            return None
        raw = read_grader_owned(self.folder / REQUEST, MAX_REQUEST_BYTES)
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            asked = Rehearsal(list(data["claims"]), dict(data["transcripts"]), dict(data["sources"]))
        except (ValueError, TypeError, KeyError):
            return None
        valid = (
            asked.claims
            and all(isinstance(c, str) for c in asked.claims)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in asked.sources.items())
        )
        return asked if valid else None

    def keep(self, claims: list[str], transcripts: dict, sources: dict[str, str]) -> None:
        """Keep the request of ``claims`` (best effort: a rehearsal not kept is only a verifier warming up later)."""
        if self.folder is None or not claims:
            return
        try:
            text = json.dumps(
                {"claims": claims, "transcripts": transcripts, "sources": sources},
                ensure_ascii=True,
                allow_nan=True,
            )
        except (TypeError, ValueError):  # not plain data: nothing to replay it from
            return
        if len(text) > MAX_REQUEST_BYTES:
            return
        try:
            write_grader_owned(self.folder, REQUEST, text)
        except OSError:
            pass
