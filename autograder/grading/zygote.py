"""A pre-imported process that forks one grading child per run (one per worker).

Importing JAX, NumPy, hypothesis, pytest and the kit takes seconds; doing it
once per worker instead of once per submission is most of the per-student
overhead. The zygote never runs student code: it imports the libraries
(without starting JAX's backend, so forking is safe; the child imports the
rest of the kit from its own fresh copy, so a submission that rewrites the
zygote's copy on disk affects nobody), then waits on a
``SOCK_SEQPACKET`` socket for requests ``(config, [event fd, stderr fd])``.
For each it forks; the child starts a new session, points stdout at
``/dev/null`` and stderr at the given file, moves into its scratch folder and
runs ``run(config)`` of the requested module: :mod:`autograder.grading.child`
(a student's checks) or, in the trusted side's own zygote, :mod:`autograder.grading.verifier`. The zygote replies with the child's
pid, and later reports its exit status (it is the child's parent).
Resource limits set on the zygote are inherited by every child.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import socket
import sys

PRELOAD = (
    "numpy", "jax", "jax.numpy", "hypothesis", "hypothesis.extra.numpy", "pytest",
    "torch", "torch.utils.data", "flax.linen", "optax", "chex", "orbax.checkpoint",
)
# Only kit modules that do not start JAX's backend at import (forking after
# that deadlocks the child); the others are imported by each child from its
# own fresh copy of the kit.
KIT = ("autograder.core.course", "autograder.core.failures", "autograder.core.submission", "autograder.grading.transcript", "autograder.grading.child")


def preload() -> None:
    """Import the libraries every grading process starts with (the same set, forked or not, so that
    a student's process and the trusted verifier generate the same inputs), with the course's
    8 CPU devices set before JAX is imported (a forked child starts JAX's backend with them)."""
    from autograder.core.devices import use_course_devices

    use_course_devices()
    for name in PRELOAD + KIT:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _send(sock: socket.socket, message: dict) -> None:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        os._exit(0)


def main() -> None:
    cfg = json.loads(sys.stdin.read())
    sys.stdin.close()
    sock = socket.socket(fileno=int(cfg["sock"]))
    preload()
    devnull = os.open(os.devnull, os.O_RDWR)
    _send(sock, {"ready": True})
    children: set[int] = set()
    while True:
        readable, _, _ = select.select([sock], [], [], 0.05)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            children.discard(pid)
            _send(sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})
        if not readable:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 2)
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                os.setsid()
                os.dup2(devnull, 0)
                os.dup2(devnull, 1)
                os.dup2(fds[1], 2)
                os.close(fds[1])
                os.chdir(request["cwd"])
                sys.path[0] = request["kit"]
                target = importlib.import_module(request.get("target", "autograder.grading.child"))
                target.run(dict(request, fd=fds[0]))
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        _send(sock, {"pid": pid})
