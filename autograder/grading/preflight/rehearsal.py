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
thrown away; it decides nothing, so grades are the same bytes with or without it.

The pre-flight's verifier's answer is kept with the request: a verdict per claim. The verifier is a function of
what it is asked in a setting (:mod:`~autograder.grading.preflight.confirmations`), so a later claim of the same
check on the very same transcript (and the same module source, for a check decided from the source too:
``PlannedCheck.analysed``) gets the verdict the pre-flight reached on it (:func:`answered_as_rehearsed`) without
a replay: a student whose answers are the reference's bit for bit, in any later call of the setting, the first of a
class and one submission graded alone included. A claim whose transcript differs in one byte is replayed as ever.

Kept only by the grader, from its own verifier's request and answer, in its own proof folder (never one a student's
process can write: :func:`~autograder.grading.preflight.proofs.unsafe_folder`), and only when the reference's every
claim was confirmed (so no kept verdict is a failure); read back only as the grader's own file.
``AUTOGRADER_CLASS_SHARING=0`` turns it off with the rest of what the trusted side shares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.preflight.proofs import grader_owned, kept_beside, read_grader_owned, write_grader_owned
from autograder.grading.wire import PlannedCheck, Verdict, answered_whole, verdict_evidence

REHEARSAL = "rehearsal"  # beside the proofs
REQUEST = "request.json"
MAX_REQUEST_BYTES = 64 << 20  # a whole course's transcripts are a few MB


@dataclass(frozen=True)
class Rehearsal:
    """A verify request of the course's reference: what :meth:`TrustedSide.verify` was asked."""

    claims: list[str]
    transcripts: dict
    sources: dict[str, str]
    answer: dict[str, Verdict] = field(default_factory=dict)  # the pre-flight's verifier's, a verdict per claim
    _evidence: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)

    def evidence(self, check: str, analysed: bool) -> str | None:
        """What the pre-flight's verdict on ``check`` was reached on (:func:`~autograder.grading.wire.verdict_evidence`),
        worked out once."""
        if check not in self._evidence:
            self._evidence[check] = verdict_evidence(check, self.transcripts, self.sources, analysed)
        return self._evidence[check]


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
            claims = list(data["claims"])
            answer = {check: Verdict.from_wire(data["answer"][check]) for check in claims} if "answer" in data else {}
            asked = Rehearsal(claims, dict(data["transcripts"]), dict(data["sources"]), answer)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        valid = (
            asked.claims
            and all(isinstance(c, str) for c in asked.claims)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in asked.sources.items())
            and (not answer or answered_whole(answer, claims))
        )
        return asked if valid else None

    def keep(
        self, claims: list[str], transcripts: dict, sources: dict[str, str], answer: dict[str, Verdict] | None = None
    ) -> None:
        """Keep the request of ``claims`` and the verifier's ``answer`` to it, when it confirmed every claim (best
        effort: a rehearsal not kept is only a verifier warming up later, and claims replayed)."""
        if self.folder is None or not claims:
            return
        kept_answer = answer if answer is not None and answered_whole(answer, claims) else {}
        try:
            text = json.dumps(
                {
                    "claims": claims,
                    "transcripts": transcripts,
                    "sources": sources,
                    **({"answer": {check: kept_answer[check].to_wire() for check in claims}} if kept_answer else {}),
                },
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


def answered_as_rehearsed(
    rehearsal: Rehearsal | None, plan: dict[str, PlannedCheck], claims: list[str], transcripts: dict, sources: dict
) -> dict[str, Verdict]:
    """The verdicts the pre-flight's verifier reached (``rehearsal.answer``) for those of ``claims`` whose
    transcript is the one it judged, byte for byte, and, for a check whose verdict depends on its module's source
    (``plan``'s ``analysed``), whose module source is the one it was given."""
    if rehearsal is None or not rehearsal.answer:
        return {}
    found = {}
    for check in claims:
        planned = plan.get(check)
        if planned is None or check not in rehearsal.answer:
            continue
        mine = verdict_evidence(check, transcripts, sources, planned.analysed)
        if mine is not None and mine == rehearsal.evidence(check, planned.analysed):
            found[check] = rehearsal.answer[check]
    return found
