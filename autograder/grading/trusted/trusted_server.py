"""The trusted side's long-lived verifiers: a few per ``grade`` run, for every student of the class.

A fresh trusted process per student imports the references and the checks
again and lowers and compiles every JAX program again: the same work for
every student of a class. The verifier never runs student code (it replays
transcripts, decoded into plain data), so one process can confirm the passes
of many students. :class:`TrustedServer` forks it from a trusted zygote on its
own copy of the course (``verifier.serve``), sends it one verify request per
student over a socket pair and waits for its answer; a server that died, timed
out or failed is ended, and the next request starts a new one.

:class:`Verifiers` lends the run's servers to the worker threads, one request
at a time. A server's first student costs several times a warm one (it
compiles every reference), and confirming a warm student takes a fraction of
grading one, so one server serves :data:`WORKERS_PER_VERIFIER` workers: a
class pays that first student once, not once per worker.
"""

from __future__ import annotations

import contextlib
import json
import queue
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from autograder.grading.isolation.forkserver import Zygote
from autograder.grading.isolation.limits import POLL, Interrupted, check
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.trusted.shared import sharing_enabled
from autograder.grading.wire import VerifierRequest

WORKERS_PER_VERIFIER = 4


def verifiers_for(workers: int) -> int:
    """How many long-lived verifiers serve ``workers`` worker threads: one at least, since a grader built without
    worker threads (a Dask worker's, whose tasks run on the worker's own threads) verifies all the same."""
    return max(1, -(-workers // WORKERS_PER_VERIFIER))


class TrustedServer:
    """A verifier process answering :class:`VerifierRequest` ``verify`` requests one after another."""

    def __init__(self, zygote: Zygote, scratch: Path, snapshot: Snapshot, modules: list[str], seed: int | None):
        course_root, kit = snapshot.materialize(scratch)
        work = scratch / "work"
        work.mkdir()
        self.stderr = scratch / "stderr.txt"
        self.stop = zygote.stop
        cfg = VerifierRequest(
            "serve", course_root=str(course_root), modules=modules, kit=str(kit), seed=seed, share=sharing_enabled()
        ).to_wire()
        ours, theirs = socket.socketpair()
        try:
            self.handle = zygote.start(work, cfg, theirs.fileno(), self.stderr)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.channel = ours
        self.pending = b""

    def alive(self) -> bool:
        return self.handle.poll() is None

    def answer(self, request: VerifierRequest, timeout: float) -> bool:
        """Send ``request`` (its ``out`` and ``transcripts_file`` set); whether the server says it wrote the
        answer within ``timeout`` seconds. Raises :class:`Interrupted` when the grade is stopped."""
        try:
            self.channel.sendall(json.dumps(request.to_wire()).encode() + b"\n")
        except OSError:
            return False
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            if self.stop is not None and self.stop.is_set():
                self.close()
                raise Interrupted()
            if time.monotonic() > deadline or not self.alive():
                return False
            ready, _, _ = select.select([self.channel], [], [], POLL)
            if ready:
                data = self.channel.recv(1 << 16)
                if not data:
                    return False
                self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        try:
            return json.loads(line).get("answered") is True
        except (ValueError, AttributeError):
            return False

    def close(self) -> None:
        self.channel.close()
        if self.alive():
            self.handle.kill()


class Verifiers:
    """The run's long-lived verifiers, each lent to one worker thread at a time (:meth:`lend`).

    ``start(slot)`` starts the server of a slot: at its first loan, and again after it died or was
    :meth:`discard`-ed. A worker waits for a free one; :attr:`stop` ends the wait."""

    def __init__(self, count: int, start: Callable[[int], TrustedServer], stop: threading.Event):
        """``count`` servers, started by ``start(slot)``; a pool of none lends nothing (:meth:`lend` raises)."""
        self._start = start
        self.stop = stop
        self._servers: list[TrustedServer | None] = [None] * count
        self._free: queue.Queue[int] = queue.Queue()
        for slot in range(count):
            self._free.put(slot)
        self._ahead: dict[int, threading.Thread] = {}
        self._lock = threading.Lock()

    def start_ahead(self, slot: int) -> None:
        """Start the server of ``slot`` now, in a thread of its own (its first loan waits for it); one that fails to
        start is started again at its first loan."""

        def start() -> None:
            try:
                server = self._start(slot)
            except BaseException:  # noqa: BLE001 - started again, and failing there, at its first loan
                return
            with self._lock:
                if self._servers[slot] is None:
                    self._servers[slot] = server
                    return
            server.close()

        thread = threading.Thread(target=start, name=f"verifier-{slot}", daemon=True)
        with self._lock:
            self._ahead[slot] = thread
        thread.start()

    @contextlib.contextmanager
    def lend(self, start: bool = True) -> Iterator[TrustedServer | None]:
        """A live server for this worker alone until the block ends; raises :class:`Interrupted` on stop, and
        RuntimeError at once when the pool has no server to wait for (a wait that could never end). ``start=False``:
        the server already started (ahead, or by an earlier loan), else None (nothing is started for the caller)."""
        if not self._servers:
            raise RuntimeError("no verifier to confirm claimed passes with (a grader started without any)")
        slot = None
        while slot is None:
            check(self.stop)
            try:
                slot = self._free.get(timeout=POLL)
            except queue.Empty:
                pass
        try:
            with self._lock:
                ahead = self._ahead.pop(slot, None)
            if ahead is not None:
                ahead.join()
            server = self._servers[slot]
            if (server is None or not server.alive()) and start:
                server = self._servers[slot] = self._start(slot)
            yield server if start or (server is not None and server.alive()) else None
        finally:
            self._free.put(slot)

    def discard(self, server: TrustedServer) -> None:
        """End ``server`` (it failed a request): its slot starts a new one at the next loan."""
        server.close()
        self._servers = [None if s is server else s for s in self._servers]

    @property
    def count(self) -> int:
        return len(self._servers)

    def started(self) -> list[TrustedServer]:
        """The servers started so far (for tests)."""
        return [server for server in self._servers if server is not None]
