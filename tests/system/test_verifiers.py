"""The run's long-lived verifiers (:class:`autograder.grading.trusted.trusted_server.Verifiers`): one serves several
workers, so a class compiles the references on the trusted side once, not once per worker."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from support import ROOT

from autograder.core.course import load_course
from autograder.core.status import Status
from autograder.grading import preflight
from autograder.grading.grader import Grader, Options
from autograder.grading.isolation import limits
from autograder.grading.trusted.trusted_server import WORKERS_PER_VERIFIER, Verifiers, verifiers_for


class Server:
    """Stands in for a TrustedServer in the pool's own tests (what the pool uses of it: alive, close)."""

    def __init__(self, slot: int):
        self.slot = slot
        self.closed = False

    def alive(self) -> bool:
        return not self.closed

    def close(self) -> None:
        self.closed = True


def test_one_verifier_serves_up_to_four_workers_and_a_grader_without_workers_has_one():
    """A grader built without worker threads (each Dask worker's: its tasks run on Dask's threads) still gets a
    verifier: with a plan kept by an earlier call, no planning zygote is left over to become one, and its first
    claimed pass waited for a server forever (CI's timeout, 2026-11-29)."""
    assert [verifiers_for(n) for n in (0, 1, 2, 4, 5, 8, 9)] == [1, 1, 1, 1, 2, 2, 3]
    assert WORKERS_PER_VERIFIER == 4


def test_a_pool_of_no_verifiers_refuses_a_loan_at_once():
    pool = Verifiers(0, Server, threading.Event())
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="no verifier"):
        with pool.lend():
            pass
    assert time.monotonic() - started < 1


def test_a_server_is_lent_to_one_worker_at_a_time_and_kept_for_the_next():
    started = []
    pool = Verifiers(1, lambda slot: started.append(Server(slot)) or started[-1], threading.Event())
    order = []

    def second():
        with pool.lend() as server:
            order.append(("second", server))

    with pool.lend() as first:
        waiting = threading.Thread(target=second)
        waiting.start()
        time.sleep(3 * limits.POLL)
        assert not order  # the other worker waits while this one holds the only server
        order.append(("first", first))
    waiting.join(timeout=10)
    assert [who for who, _ in order] == ["first", "second"]
    assert order[1][1] is first and len(started) == 1  # warm for the next student


def test_a_discarded_or_dead_server_is_replaced_at_the_next_loan():
    started = []
    pool = Verifiers(1, lambda slot: started.append(Server(slot)) or started[-1], threading.Event())
    with pool.lend() as server:
        pool.discard(server)
    assert server.closed and pool.started() == []
    with pool.lend() as again:
        again.closed = True  # died
    with pool.lend() as third:
        assert third is started[2] and len(started) == 3


def test_a_stop_ends_the_wait_for_a_server():
    stop = threading.Event()
    pool = Verifiers(1, Server, stop)
    raised = []

    def wait():
        try:
            with pool.lend():
                pass
        except limits.Interrupted:
            raised.append(True)

    with pool.lend():
        waiting = threading.Thread(target=wait)
        waiting.start()
        stop.set()
        waiting.join(timeout=10)
    assert raised == [True]


def test_two_workers_share_one_verifier_for_a_whole_class(tmp_path: Path):
    """A class graded with two workers starts one trusted server (and one trusted zygote), which confirms every
    student's passes."""
    for student in ("ada", "bob", "cy"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "at_updates.py").write_bytes((ROOT / "solutions" / "at_updates.py").read_bytes())
    grader = Grader(load_course(ROOT), Options(("at_updates",), 60, 4000, 2), workers=2)
    try:
        results = grader.grade_class([(s, tmp_path / s) for s in ("ada", "bob", "cy")])
        assert grader.trusted.verifiers.count == 1
        [server] = grader.trusted.verifiers.started()
        assert server.alive()
    finally:
        grader.close()
    for result in results:
        assert {o.status for o in result.outcomes} == {Status.PASSED}, result.outcomes
        assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)


def test_a_grader_without_workers_confirms_passes_with_a_kept_plan(tmp_path: Path, monkeypatch):
    """The Dask worker's case end to end: an earlier grader kept the plan, so the next one lists no checks (no
    planning zygote left over); built without worker threads, it still confirms a correct student's passes."""
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "kept"))
    (tmp_path / "kept").mkdir(mode=0o700)
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "at_updates.py").write_bytes((ROOT / "solutions" / "at_updates.py").read_bytes())
    options = Options(("at_updates",), 60, 4000, 1)
    first = Grader(load_course(ROOT), options, workers=1)
    first.close()
    assert list((tmp_path / "kept" / "plans").iterdir()), "the first grader kept no plan"
    grader = Grader(load_course(ROOT), options)  # as cluster._worker_grader builds it
    try:
        assert grader.trusted.verifiers.count == 1
        [result] = grader.grade_class([("ada", tmp_path / "ada")])
    finally:
        grader.close()
    assert {o.status for o in result.outcomes} == {Status.PASSED}, result.outcomes
