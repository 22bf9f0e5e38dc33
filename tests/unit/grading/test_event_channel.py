"""The grader's event channel (``autograder/grading/isolation/channel.py``, read by ``supervise.supervise``): what a grading
process writes there is hostile, and the grader's memory and CPU stay bounded by a small multiple of what it
received, with hard caps per event and per run. ``benchmarks/hostile_channel.py`` measures the same floods."""

import json
import subprocess
import sys
import time
import tracemalloc

from autograder.core.status import Status
from autograder.grading.events import Begin, ChannelEvent, Done, decode
from autograder.grading.isolation import channel, limits, supervise
from autograder.grading.wire import Claim

NONCE = "n" * 32


def line(**event) -> bytes:
    return (json.dumps(dict(event, nonce=NONCE)) + "\n").encode()


def test_events_come_out_whole_however_the_pipe_cuts_them():
    stream = (
        line(event="begin", check="m::test_a")
        + b"junk\n"
        + line(event="end", check="m::test_a", outcome="passed")
        + b'{"event": "done", "nonce": "someone else"}\n'
        + b"[" * 100_000
        + b"\n"
        + line(event="done")
    )
    for size in (1, 7, 4096, len(stream)):
        decoder = channel.EventDecoder(NONCE)
        got = [e for i in range(0, len(stream), size) for e in decoder.feed(stream[i : i + size])]
        assert got == [Begin("m::test_a"), Claim("m::test_a", Status.PASSED), Done()], size
        assert not decoder.flooded


def test_a_line_over_the_event_cap_is_never_held():
    decoder = channel.EventDecoder(NONCE, max_event_bytes=1000)
    assert decoder.feed(b"x" * 600) == [] and not decoder.flooded
    assert decoder.feed(b"x" * 600) == [] and decoder.flooded
    assert decoder.feed(line(event="done")) == []  # nothing more is decoded once flooded
    assert "event of more than" in decoder.flood


def test_a_run_over_the_run_cap_is_flooded():
    decoder = channel.EventDecoder(NONCE, max_run_bytes=10_000)
    events = []
    for _ in range(200):
        events += decoder.feed(line(event="begin", check="m::test_a"))
    assert decoder.flooded and 0 < len(events) < 200


def test_values_are_counted_before_they_are_parsed(monkeypatch):
    """A line of millions of tiny values is refused without building them (json is never called on it)."""
    parsed = []
    monkeypatch.setattr(channel.json, "loads", lambda data: parsed.append(len(data)) or {})
    decoder = channel.EventDecoder(NONCE)
    decoder.feed(b'{"junk": [' + b"[]," * 2_000_000 + b"[]]}\n")
    assert decoder.flooded and parsed == []
    honest = channel.EventDecoder(NONCE)
    honest.feed(line(event="end", transcript={"d": {"tree": ["np", 0], "arrays": [{"b": "A" * 10_000_000}]}}))
    assert not honest.flooded


WRITER = r"""
import os, sys
fd, nonce, case, mb = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
write(('{"event": "begin", "check": "m::test_x", "nonce": "%s"}\n' % nonce).encode())
if case == "brackets":
    write(('{"event": "end", "check": "m::test_x", "outcome": "passed", "nonce": "%s", "junk": [' % nonce).encode()
          + b"[]," * (mb * 2**20 // 3) + b"[]]}\n")
else:
    for _ in range(mb):
        write(b"x" * 2**20)
write(('{"event": "done", "nonce": "%s"}\n' % nonce).encode())
"""


def supervised(tmp_path, case: str, mb: int):
    def start(cwd, cfg, fd, stderr_path):
        return subprocess.Popen([sys.executable, "-c", WRITER, str(fd), cfg["nonce"], case, str(mb)], pass_fds=(fd,))

    (tmp_path / "work").mkdir()
    tracemalloc.start()
    cpu = time.process_time()
    try:
        result = supervise.supervise(
            start, tmp_path / "work", {}, limits.Limits(600, 0, total_timeout=600), {"m::test_x": "m.x"}
        )
        return result, tracemalloc.get_traced_memory()[1], time.process_time() - cpu
    finally:
        tracemalloc.stop()


def test_a_flood_of_tiny_values_costs_the_grader_little_memory_and_the_check_its_points(tmp_path):
    """8 MB of ``[],`` in one event: the old reader parsed it into ~200 MB of lists and took the event."""
    result, peak, _ = supervised(tmp_path, "brackets", 8)
    assert result.fault is not None and result.fault.kind == "flood" and result.fault.check == "m::test_x"
    assert not [e for e in result.events if isinstance(e, Claim)]
    assert peak < 3 * 8 * 2**20, f"the grader held {peak / 2**20:.0f} MB for 8 MB received"


def test_a_line_without_end_costs_the_grader_time_linear_in_it(tmp_path):
    """64 MB without a newline: the old reader joined and split a growing buffer on every read (quadratic:
    40 MB took it 9 s of CPU)."""
    result, peak, cpu = supervised(tmp_path, "newline-less", 64)
    assert result.fault is not None and result.fault.kind == "flood"
    assert peak < 2 * channel.MAX_EVENT_BYTES + 2**20
    assert cpu < 2.0, f"the grader spent {cpu:.1f} s of CPU"


# The order of a run's events (channel.out_of_order): exactly one end per begin, in order, for the run's own module
# and checks. Issue 42: the grader kept the first claim per check, so lines written at import came first.
A, B, C = "m::test_a", "m::test_b", "m::test_c"
CHECKS = {A, B, C}


def ev(kind: str, check: str | None = None, **extra) -> ChannelEvent:
    """The typed event the channel's decoder makes of this object."""
    return decode({"event": kind, **({"check": check} if check else {}), **extra})


HONEST = [
    ev("begin", A),
    ev("import_begin", module="m"),
    ev("review", what="walks the heap (gc.get_objects)", line=3),
    ev("import_end", module="m"),
    ev("end", A, outcome="failed"),
    ev("begin", B),
    ev("tampered", what=[]),
    ev("end", B, outcome="passed"),
    ev("begin", C),
    ev("end", C, outcome="passed"),
    ev("done"),
]

FORGED = {
    "an end written at import, before the reporter's": [
        *HONEST[:2],
        ev("end", A, outcome="passed"),
        *HONEST[3:],
    ],
    "whole claims written at import (a forged import_end first)": [
        *HONEST[:2],
        ev("import_end", module="m"),
        ev("end", A, outcome="passed"),
        ev("begin", B),
        ev("end", B, outcome="passed"),
        *HONEST[3:],
    ],
    "a second end of the check running, at call time": [*HONEST[:8], ev("end", B, outcome="passed"), *HONEST[8:]],
    "the end of another check, at call time": [*HONEST[:6], ev("end", C, outcome="passed"), *HONEST[6:]],
    "an end and a begin of the next check written ahead of the reporter's": [
        *HONEST[:6],
        ev("end", B, outcome="passed"),
        ev("begin", C),
        ev("end", C, outcome="passed"),
        *HONEST[6:],
    ],
    "a check of another module": [*HONEST[:5], ev("begin", "other::test_x"), ev("end", "other::test_x"), *HONEST[5:]],
    "a check begun twice": [*HONEST[:10], ev("begin", C), ev("end", C, outcome="passed"), ev("done")],
    "an import of another module": [ev("begin", A), ev("import_begin", module="other"), *HONEST[3:]],
    "a claim after done": [*HONEST, ev("end", C, outcome="passed")],
    "an unknown kind": [*HONEST[:5], ev("verdict", A, outcome="passed"), *HONEST[5:]],
}


def test_the_reporters_own_order_is_in_order_even_cut_short_by_a_fault():
    assert channel.out_of_order(HONEST, "m", CHECKS) == []
    for cut in range(len(HONEST)):
        assert channel.out_of_order(HONEST[:cut], "m", CHECKS) == [], cut
    # checks judged by an earlier run are not begun again
    assert channel.out_of_order(HONEST[5:], "m", {B, C}) == []


def test_a_claim_the_students_code_writes_on_the_channel_breaks_the_order():
    for name, events in FORGED.items():
        assert channel.out_of_order(events, "m", CHECKS), name
    assert channel.out_of_order(HONEST, "m", {B, C}), "a check skipped by this run is not one of its own"


def test_a_claim_followed_at_once_by_the_process_ending_is_not_taken():
    """A student's code that writes the running check's ``end`` and exits at once leaves a run in order: the
    grader takes no claim that was a process's last word before it ended on its own, no check running."""
    from autograder.grading.verdicts import last_claim
    from autograder.grading.wire import FaultKind

    run = limits.RunResult(events=HONEST[:8], fault=limits.Fault(FaultKind.CRASH, None, None))
    assert last_claim(run) == B
    run.events.append(ev("review", what="opens a file descriptor by number (os.fdopen)", line=3))
    assert last_claim(run) == B
    for fault in (limits.Fault(FaultKind.TIMEOUT, None, None), limits.Fault(FaultKind.CRASH, C, None), None):
        assert last_claim(limits.RunResult(events=HONEST[:8], fault=fault)) is None
    assert last_claim(limits.RunResult(events=HONEST[:9], fault=limits.Fault(FaultKind.CRASH, None, None))) is None
