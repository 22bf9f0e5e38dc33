"""The trusted side's long-lived verifier: one per worker, for every student that worker grades.

A fresh trusted process per student imports the references and the checks
again and lowers and compiles every JAX program again: the same work for
every student of a class. The verifier never runs student code (it replays
transcripts, decoded into plain data), so one process can confirm the passes
of many students. :class:`TrustedServer` forks it from the worker's trusted
zygote on its own copy of the course (``verifier.serve``), sends it one verify
request per student over a socket pair and waits for its answer; a server that
died, timed out or failed is ended, and the next request starts a new one.
"""

from __future__ import annotations

import json
import select
import socket
import time
from pathlib import Path

from autograder.grading import sandbox
from autograder.grading.requests import VerifierRequest


class TrustedServer:
    """A verifier process answering :class:`VerifierRequest` ``verify`` requests one after another."""

    def __init__(self, zygote: sandbox.Zygote, scratch: Path, snapshot: sandbox.Snapshot, modules: list[str], seed: int | None):
        course_root, kit = snapshot.materialize(scratch)
        work = scratch / "work"
        work.mkdir()
        self.stderr = scratch / "stderr.txt"
        self.stop = zygote.stop
        cfg = VerifierRequest("serve", course_root=str(course_root), modules=modules, kit=str(kit), seed=seed).to_wire()
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
        answer within ``timeout`` seconds. Raises :class:`sandbox.Interrupted` when the grade is stopped."""
        try:
            self.channel.sendall(json.dumps(request.to_wire()).encode() + b"\n")
        except OSError:
            return False
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            if self.stop is not None and self.stop.is_set():
                self.close()
                raise sandbox.Interrupted()
            if time.monotonic() > deadline or not self.alive():
                return False
            ready, _, _ = select.select([self.channel], [], [], sandbox.POLL)
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
