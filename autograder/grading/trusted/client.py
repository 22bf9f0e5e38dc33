"""The grader's side of the trusted verifier: the course's plan, and claimed passes confirmed.

Runs in the grader's process; what it talks to (:mod:`autograder.grading.trusted.verifier`) runs in trusted
processes forked from the pool's trusted zygotes, never a student's. :class:`TrustedSide` plans once when the
grader starts (one :class:`~autograder.grading.wire.PlannedCheck` per check), then answers
:meth:`TrustedSide.verify` with one :class:`~autograder.grading.wire.Verdict` per claim, from the long-lived
verifiers the workers share (:mod:`autograder.grading.trusted.trusted_server`), or from a fresh trusted process
per request without zygotes.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

from autograder.grading.isolation.forkserver import run_to_end
from autograder.grading.isolation.processes import file_tail, run_python, wait_or_stop
from autograder.grading.pool import GradingPool
from autograder.grading.preflight.rehearsal import Rehearsal, answered_as_rehearsed
from autograder.grading.trusted.trusted_server import TrustedServer, Verifiers, verifiers_for
from autograder.grading.wire import PlannedCheck, Verdict, VerifierRequest, answered_whole

VERIFY_TIMEOUT = 600.0
SHARED_COUNTS = ("hits", "misses", "verdicts")


class TrustedSide:
    """The plan of ``options.modules`` (made now, while the first students' sandboxes import) and the verifiers
    that confirm claimed passes. ``workers``: how many threads will ask (one verifier per few of them)."""

    def __init__(
        self,
        pool: GradingPool,
        options,
        stop: threading.Event,
        workers: int,
        kept_plans=None,
        kept_confirmations=None,
        kept_rehearsal=None,
    ):
        """``kept_plans``: the plan kept by an earlier call of the same setting
        (:class:`~autograder.grading.preflight.plans.KeptPlans`), used instead of listing the checks again;
        ``kept_confirmations``: the verifier's answers kept by earlier calls of the same setting
        (:class:`~autograder.grading.preflight.confirmations.KeptConfirmations`), given again for the very same
        request instead of replaying it; ``kept_rehearsal``: where the pre-flight's own request of the reference is
        kept for :meth:`rehearse` (:class:`~autograder.grading.preflight.rehearsal.KeptRehearsal`)."""
        self.pool = pool
        self.kept_plans = kept_plans
        self.kept_confirmations = kept_confirmations
        self.kept_rehearsal = kept_rehearsal
        self.proving = False  # while the pre-flight grades: every request is replayed (it proves the verifier answers)
        self.options = options
        self.stop = stop
        self._trusted_zygotes = []  # the verifiers', one per slot of self.verifiers
        # What the fixtures of modules judged on the trusted side only are given (recorded while planning).
        self.givens_dir = pool.scratch_dir()
        self.plan = self._plan()
        if options.zygote:
            # The verifiers' trusted zygotes: the planning thread's first (it is done with it), then new ones.
            planner = pool.take_zygote() if pool.has_zygote() else None
            self._trusted_zygotes = [planner] if planner is not None else []
            self._trusted_zygotes += [pool.new_zygote() for _ in range(verifiers_for(workers) - (planner is not None))]
        # Without zygotes there are none: each verification is a fresh trusted process (verify).
        self.verifiers = Verifiers(len(self._trusted_zygotes), self._start_verifier, stop)
        # started now, so that they import the references and check the devices while the first students run
        # (from a zygote alive now only: a new zygote dies with the thread that starts it)
        for slot, zygote in enumerate(self._trusted_zygotes):
            if zygote.alive():
                self.verifiers.start_ahead(slot)
        self.modules_with_givens = {c.module for c in self.plan if c.givens}
        # per server, its totals so far (trusted.shared): the reference's results answered from the class's (hits)
        # and computed (misses), claimed checks answered with a verdict reached on the same transcript (verdicts)
        self._shared: dict[int, dict[str, int]] = {}
        # verify requests answered without the verifier (kept answers, the pre-flight's verdicts) and asked, and the
        # claims answered from the pre-flight's verdicts (kept_answers)
        self._kept = {"given": 0, "asked": 0, "rehearsed": 0}
        self._rehearsal: Rehearsal | None = None  # the kept rehearsal, loaded once (when _loaded)
        self._loaded = False
        self._planned: dict[str, PlannedCheck] = {}
        self._lock = threading.Lock()

    def _answer(self, request: VerifierRequest, timeout: float) -> dict:
        """Run :mod:`autograder.grading.trusted.verifier` (never student code) on a fresh private copy of the course."""
        scratch = self.pool.scratch_dir()
        try:
            course_root, kit = self.pool.snapshot.materialize(scratch)
            work = scratch / "work"
            work.mkdir()
            asked = _in_files(request, scratch)
            out = Path(asked.out)
            cfg = replace(
                asked, course_root=str(course_root), modules=list(self.options.modules), kit=str(kit)
            ).to_wire()
            cfg["libraries"] = self.pool.libraries  # what it imports first, as the students' processes do
            zygote = self.pool.zygote() if self.options.zygote else None
            if zygote is not None:
                run_to_end(zygote, work, cfg, scratch / "stderr.txt", timeout)
            else:
                proc = run_python(
                    request.target,
                    kit,
                    work,
                    cfg,
                    memory_mb=None,
                    env=self.pool.trusted_env,
                    stderr_path=scratch / "stderr.txt",
                    lifeline=self.pool.lifeline.fd,
                )
                wait_or_stop(proc, timeout, self.stop)
            if not out.is_file():
                raise RuntimeError(f"the trusted grader failed:\n{file_tail(scratch / 'stderr.txt')}")
            return json.loads(out.read_text(encoding="utf-8"))
        finally:
            self.pool.remove(scratch)

    def _plan(self) -> list[PlannedCheck]:
        kept = self.kept_plans.load(self.givens_dir) if self.kept_plans is not None else None
        if kept is not None:
            return kept
        data = self._answer(
            VerifierRequest("plan", seed=self.options.seed, givens=str(self.givens_dir)), VERIFY_TIMEOUT
        )
        checks = [PlannedCheck.from_wire(c) for c in data["plan"]]
        if not checks:
            raise RuntimeError("the course has no checks for the selected modules")
        if self.kept_plans is not None:
            self.kept_plans.keep(checks, self.givens_dir)
        return checks

    def verify(
        self,
        claims: list[str],
        transcripts: dict,
        sources: dict[str, str] | None = None,
        submission: str | None = None,
    ) -> dict[str, Verdict]:
        """The trusted side's verdict on each claimed pass (``transcripts``: what the student's process recorded;
        ``sources``: module -> the text of the student's file, as the grader read it; ``submission``: the digest of
        the student's files, noted when the answer is kept, so that a later call of the same files does not
        rehearse for a request it will most likely find answered)."""
        if not claims:
            return {}
        kept = None if self.proving else self.kept_confirmations
        key = (
            kept.key(claims, transcripts, dict(sources or {}), self.options.seed, bool(self.modules_with_givens))
            if kept
            else None
        )
        known = kept.load(key, claims) if kept else None
        # the verdicts the pre-flight reached on the very same transcripts (the reference's: rehearsal.py)
        rehearsed = (
            {} if known is not None or self.proving else self._answered_as_rehearsed(claims, transcripts, sources)
        )
        asked = [check for check in claims if check not in rehearsed]
        with self._lock:
            self._kept["given" if known is not None or not asked else "asked"] += 1
            self._kept["rehearsed"] += len(rehearsed)
        if known is not None:
            return known
        answered = dict(rehearsed)
        if asked:
            answered.update(self._verify(asked, {c: transcripts.get(c, {}) for c in asked}, sources))
        if kept and kept.keep(key, claims, answered) and submission is not None:
            kept.mark_answered(submission)
        if self.proving and self.kept_rehearsal is not None and answered_whole(answered, claims):
            # the pre-flight's request of the reference (its stubs claim nothing) and its answer: what a later call
            # rehearses, and the verdicts a later claim on the same transcript gets
            self.kept_rehearsal.keep(list(claims), transcripts, dict(sources or {}), answered)
        return answered

    def _answered_as_rehearsed(self, claims: list[str], transcripts: dict, sources) -> dict[str, Verdict]:
        with self._lock:
            if not self._loaded:
                self._remember(self.kept_rehearsal.load() if self.kept_rehearsal is not None else None)
        return answered_as_rehearsed(self._rehearsal, self._planned, claims, transcripts, dict(sources or {}))

    def _remember(self, rehearsal: Rehearsal | None) -> None:
        """The kept rehearsal (and its answer), loaded once per grader; holding ``_lock``."""
        self._rehearsal, self._loaded = rehearsal, True
        self._planned = {c.id: c for c in self.plan}

    def rehearse(self, submission: str | None = None) -> bool:
        """Send the kept rehearsal (:mod:`autograder.grading.preflight.rehearsal`) to a verifier now, in a thread
        of its own, its answer thrown away: the verifier warms up on the reference while the student's code runs.
        The first student's request waits for it (the verifier answers one request at a time). Whether one was
        sent: none when none is kept, without a long-lived verifier, or when ``submission`` (the digest of the
        student's files) had its answer kept by an earlier call (its request will most likely be answered from it)."""
        if (
            submission is not None
            and self.kept_confirmations is not None
            and self.kept_confirmations.answered(submission)
        ):
            return False
        asked = self.kept_rehearsal.load() if self.kept_rehearsal is not None else None
        with self._lock:
            if not self._loaded:
                self._remember(asked)
        if asked is None or not self.options.zygote or not self.verifiers.count:
            return False

        def rehearse() -> None:
            try:
                self._verify(asked.claims, asked.transcripts, asked.sources, rehearsal=True)
            except BaseException:  # noqa: BLE001 - a rehearsal decides nothing: the student's request is asked anew
                pass

        threading.Thread(target=rehearse, name="verifier-rehearsal", daemon=True).start()
        return True

    @property
    def kept_answers(self) -> dict[str, int]:
        """Of this grader's verify requests: how many were answered from what an earlier call's verifier answered
        to the very same request (``given``), and how many were asked of the verifier (``asked``)."""
        with self._lock:
            return dict(self._kept)

    def _verify(
        self, claims: list[str], transcripts: dict, sources: dict[str, str] | None, *, rehearsal: bool = False
    ) -> dict[str, Verdict]:
        """The verifier's answer to the request of ``claims``; a ``rehearsal`` is only sent to a verifier already
        started (none is started for it: it may come after the grader closed), and answers nothing."""
        givens = str(self.givens_dir) if self.modules_with_givens else ""
        request = VerifierRequest(
            "verify",
            checks=claims,
            transcripts=transcripts,
            seed=self.options.seed,
            givens=givens,
            sources=dict(sources or {}),
        )
        if not self.options.zygote:
            return _verdicts(self._answer(request, VERIFY_TIMEOUT))
        with self.verifiers.lend(start=not rehearsal) as server:
            if server is None:  # a rehearsal, and no verifier started
                return {}
            scratch = self.pool.scratch_dir()
            try:
                asked = _in_files(request, scratch)
                out = Path(asked.out)
                if not server.answer(asked, VERIFY_TIMEOUT) or not out.is_file():
                    self.verifiers.discard(server)
                    raise RuntimeError(f"the trusted grader failed:\n{file_tail(server.stderr)}")
                answered = json.loads(out.read_text(encoding="utf-8"))
                self._count_shared(server, answered.get("shared"))
            finally:
                self.pool.remove(scratch)
        return {} if rehearsal else _verdicts(answered)

    def _count_shared(self, server: TrustedServer, counts) -> None:
        """Keep ``server``'s totals so far (it reports its own, from its start)."""
        if isinstance(counts, dict) and all(isinstance(counts.get(k), int) for k in SHARED_COUNTS):
            with self._lock:
                self._shared[id(server)] = {k: counts[k] for k in SHARED_COUNTS}

    @property
    def shared_results(self) -> dict[str, int]:
        """What the run's verifiers shared between students (see ``__init__``), all servers together."""
        with self._lock:
            return {k: sum(counts[k] for counts in self._shared.values()) for k in SHARED_COUNTS}

    def _start_verifier(self, slot: int) -> TrustedServer:
        """The long-lived verifier of ``slot`` (see :mod:`autograder.grading.trusted.trusted_server`), forked from that
        slot's trusted zygote (restarted if it died)."""
        zygote = self._trusted_zygotes[slot]
        if not zygote.alive():
            zygote = self._trusted_zygotes[slot] = self.pool.new_zygote()
        return TrustedServer(
            zygote, self.pool.scratch_dir(), self.pool.snapshot, list(self.options.modules), self.options.seed
        )


def _verdicts(answer: dict) -> dict[str, Verdict]:
    return {check: Verdict.from_wire(verdict) for check, verdict in answer["verdicts"].items()}


def _in_files(request: VerifierRequest, scratch: Path) -> VerifierRequest:
    """``request`` answering into ``scratch``, its transcripts written there (too large for the request itself)."""
    sent = scratch / "transcripts.json"
    sent.write_text(json.dumps(request.transcripts), encoding="utf-8")
    return replace(request, out=str(scratch / "verdicts.json"), transcripts={}, transcripts_file=str(sent))
