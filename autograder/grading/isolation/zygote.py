"""A pre-imported process that forks one grading child per run (one per worker).

Importing JAX, NumPy, hypothesis, pytest and the kit takes seconds; doing it
once per worker instead of once per submission is most of the per-student
overhead. The zygote never runs student code: it imports the libraries
(without starting JAX's backend, so forking is safe; the child imports the
rest of the kit from its own fresh copy, so a submission that rewrites the
zygote's copy on disk affects nobody), then waits on a
``SOCK_SEQPACKET`` socket for requests ``(config, [event fd, stderr fd(, checks fd)])`` (the checks' descriptor:
:class:`~autograder.grading.untrusted.child.HandedChecks`; the zygote never reads it, and closes its copy once it
forked). The zygote is not dumpable (:func:`undumpable`, kept by its children): no process of the student's reads
another's descriptors or memory through ``/proc``.
For each it forks; the child starts a new session, points stdout at
``/dev/null`` and stderr at the given file, moves into its scratch folder and
runs ``run(config)`` of the requested module: :mod:`autograder.grading.untrusted.child`
(a student's checks) or, in the trusted side's own zygote, :mod:`autograder.grading.trusted.verifier`. The zygote replies with the child's
pid, and later reports its exit status (it is the child's parent).
Resource limits set on the zygote are inherited by every child.

Nothing outlives the grader (:mod:`autograder.grading.isolation.lifeline`): the zygote
gets SIGTERM when the grader's thread that started it ends, and ends its
children (each one's process group) when it gets SIGTERM or when the socket
or the lifeline pipe closes; every child also gets SIGKILL when the zygote
ends, and watches the lifeline itself.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys

from autograder.grading.isolation import lifeline
from autograder.grading.wire import CHILD


def preload(libraries: object = None) -> None:
    """Import the libraries every grading process starts with (the same set, forked or not, so that
    a student's process and the trusted verifier generate the same inputs), with the course's
    8 CPU devices set before JAX is imported (a forked child starts JAX's backend with them).
    The list is the grader's (``libraries``: :func:`autograder.runtime.preload.grading_set` of the modules it
    grades), else :data:`autograder.runtime.preload.GRADING`.

    What the imports leave alive is then set aside from garbage collection (``gc.freeze()``): a
    forked child's full collections would otherwise walk, and copy page by page, the whole heap of
    JAX, torch and Flax it shares with the zygote. Only libraries are frozen: what a grading
    process loads later (the references, the student's module) stays visible to ``gc``."""
    import gc

    from autograder.runtime import preload as names
    from autograder.runtime.devices import use_course_backend

    use_course_backend()
    wanted = libraries if isinstance(libraries, list) and all(isinstance(n, str) for n in libraries) else None
    names.import_all(wanted if wanted is not None else names.GRADING)
    gc.freeze()


def undumpable() -> None:
    """No other process of this user may read this one's descriptors or memory through ``/proc`` (``prctl``
    ``PR_SET_DUMPABLE`` 0, kept by every fork): a student's grading process of one module cannot read a sibling's
    handed checks (``checks_fd``) there, nor the zygote's. The process itself still reads its own."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        pass


PR_SET_DUMPABLE = 4


def boot(run) -> None:
    """How a grading process started directly (not forked from a zygote) begins: read its request from
    stdin, die with the grader, import what every grading process starts with, then ``run(request)``."""
    undumpable()
    cfg = json.loads(sys.stdin.read())
    sys.stdin.close()
    lifeline.die_with_parent(cfg.get("parent"))
    lifeline.watch(cfg.get("lifeline"))
    preload(cfg.get("libraries"))
    run(cfg)


def _send(sock: socket.socket, message: dict) -> bool:
    try:
        sock.send(json.dumps(message).encode())
    except OSError:
        return False
    return True


def _reap(children: set[int], sock: socket.socket, end_children) -> None:
    """Every child of ``children`` that ended, told to the grader (``exited``; when it cannot be told, every child
    is ended)."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            break
        if pid == 0:
            break
        children.discard(pid)
        if not _send(sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)}):
            end_children()


def _forked(request: dict, fds: list[int], sock: socket.socket, devnull: int, zygote: int, lifeline_fd) -> None:
    """In a forked child: become the grading process ``request`` asks for (its stdin and stdout closed to
    ``devnull``, its stderr the handed descriptor, its own session); never returns."""
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sock.close()
        os.setsid()
        lifeline.die_with_parent(zygote)
        lifeline.watch(lifeline_fd)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(fds[1], 2)
        os.close(fds[1])
        if request.get("hold"):  # wait until the grader has moved this process into its own control group
            os.kill(os.getpid(), signal.SIGSTOP)
        os.chdir(request["cwd"])
        sys.path[0] = request["kit"]
        target = importlib.import_module(request.get("target", CHILD))
        # the handed checks' descriptor has this process's number for it now (Zygote.start)
        target.run(dict(request, fd=fds[0], **({"checks_fd": fds[2]} if len(fds) > 2 else {})))
    finally:
        os._exit(70)


def main() -> None:
    undumpable()
    cfg = json.loads(sys.stdin.read())
    sys.stdin.close()
    children: set[int] = set()

    def end_children(*_args) -> None:
        for pid in list(children):
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        os._exit(0)

    signal.signal(signal.SIGTERM, end_children)
    lifeline.die_with_parent(cfg.get("parent"), signal.SIGTERM)
    lifeline.watch(cfg.get("lifeline"), end_children)
    sock = socket.socket(fileno=int(cfg["sock"]))
    preload(cfg.get("libraries"))
    devnull = os.open(os.devnull, os.O_RDWR)
    if not _send(sock, {"ready": True}):
        end_children()
    while True:
        readable, _, _ = select.select([sock], [], [], 0.05)
        _reap(children, sock, end_children)
        if not readable:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            end_children()
        if not data:
            end_children()
        request = json.loads(data)
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            _forked(request, fds, sock, devnull, zygote, cfg.get("lifeline"))
        for fd in fds:
            os.close(fd)
        children.add(pid)
        if not _send(sock, {"pid": pid}):
            end_children()
