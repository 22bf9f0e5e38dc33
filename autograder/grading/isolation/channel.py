"""Reading a grading process's event channel: hostile bytes, decoded within hard caps.

The grading process writes one JSON object per line on a pipe
(:mod:`autograder.grading.untrusted.child`); its student's code runs in that process and
can write anything there. The grader reads the pipe with an
:class:`EventDecoder`, which holds its own resources to what it received:

- **time linear in the bytes**: a line is kept as the chunks it arrived in and
  joined once, when its newline arrives (not one growing buffer split again on
  every read: 40 MB without a newline took the grader 9 s of CPU);
- **per event**: a line longer than :data:`MAX_EVENT_BYTES` is never held; what
  is left of it is dropped as it arrives, and the run is flooded;
- **per run**: at most :data:`MAX_RUN_BYTES` bytes, and at most
  ``FREE_VALUES + received // BYTES_PER_VALUE`` JSON values parsed. A line's
  values are counted (``[``, ``{``, ``,`` and ``:``, an upper bound) *before*
  it is parsed, so a line of millions of tiny values (``[[],[],...]``: 24 MB of
  it took the grader from 79 MB to 666 MB of memory) is refused, not built.
  Each parsed value costs Python some 80 bytes, so what the decoder holds stays
  within about ``2 * received + 80 * (FREE_VALUES + received // BYTES_PER_VALUE)``
  bytes: a small multiple of what it received, and a few tens of MB besides;
- parsing catches what ``json`` raises on junk, deep nesting included, and an
  event without the run's nonce is dropped;
- what is left is typed (:func:`autograder.grading.events.decode`): the decoder
  yields :data:`~autograder.grading.events.ChannelEvent` values, never the raw
  object, and one that is no event the reporter writes is
  :class:`~autograder.grading.events.Malformed` (the order check's tampering).

Once flooded (:attr:`EventDecoder.flooded`), nothing more is decoded; the
caller ends the run and blames the check that was running.
"""

from __future__ import annotations

import json

from autograder.grading import events as typed
from autograder.grading.events import ChannelEvent, Malformed
from autograder.grading.wire import Claim, Event

MAX_EVENT_BYTES = 32 * 2**20  # one line: a check's transcript (the child keeps them under 20 M characters) and more
MAX_RUN_BYTES = 256 * 2**20  # everything one grading process may write
FREE_VALUES = 1_000_000  # JSON values any run may send, on top of one per BYTES_PER_VALUE bytes received
BYTES_PER_VALUE = 8


def value_bound(line: bytes) -> int:
    """An upper bound on the number of JSON values ``line`` holds (C-speed counts, no parsing)."""
    return line.count(b"[") + line.count(b"{") + line.count(b",") + line.count(b":") + 1


class EventDecoder:
    """Feed it the channel's chunks; it returns the typed events they complete (those carrying the run's nonce)."""

    def __init__(
        self,
        nonce: str,
        max_event_bytes: int = MAX_EVENT_BYTES,
        max_run_bytes: int = MAX_RUN_BYTES,
        free_values: int = FREE_VALUES,
        bytes_per_value: int = BYTES_PER_VALUE,
    ):
        self.nonce = nonce
        self.max_event_bytes = max_event_bytes
        self.max_run_bytes = max_run_bytes
        self.free_values = free_values
        self.bytes_per_value = bytes_per_value
        self.received = 0
        self.values = 0  # values parsed (bounded above) so far
        self.flood: str | None = None  # why the channel was refused, once it was
        self._parts: list[bytes] = []  # the current line, as it arrived
        self._pending = 0  # its length
        self._dropping = False  # the current line is over the cap: dropped up to its newline

    @property
    def flooded(self) -> bool:
        return self.flood is not None

    def feed(self, chunk: bytes) -> list[ChannelEvent]:
        if self.flooded:
            return []
        self.received += len(chunk)
        if self.received > self.max_run_bytes:
            self.flood = f"more than {self.max_run_bytes // 2**20} MB in one run"
            return []
        events: list[ChannelEvent] = []
        start = 0
        while not self.flooded:
            end = chunk.find(b"\n", start)
            self._take(chunk[start:] if end < 0 else chunk[start:end])
            if end < 0:
                break
            if not self._dropping:
                event = self._decode(b"".join(self._parts))
                if event is not None:
                    events.append(event)
            self._parts, self._pending, self._dropping = [], 0, False
            start = end + 1
        return events

    def _take(self, piece: bytes) -> None:
        if self._dropping or not piece:
            return
        self._pending += len(piece)
        if self._pending > self.max_event_bytes:
            self._parts, self._dropping = [], True
            self.flood = f"an event of more than {self.max_event_bytes // 2**20} MB"
            return
        self._parts.append(piece)

    def _decode(self, line: bytes) -> ChannelEvent | None:
        values = value_bound(line)
        if self.values + values > self.free_values + self.received // self.bytes_per_value:
            self.flood = "too many values for what was sent"
            return None
        self.values += values
        try:
            event = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if not isinstance(event, dict) or event.get("nonce") != self.nonce:
            return None
        return typed.decode(event)


def out_of_order(events: list[ChannelEvent], module: str, checks: set[str]) -> list[str]:
    """What is wrong with the order of a run's events, as the grading process's own reporter writes them: the
    run's ``module`` imported once (``import_begin`` then ``import_end``, nothing between them: the student's
    code runs there), each of ``checks`` (the run's own, not skipped) begun at most once and ended exactly once
    by the next event but for the import, in order, nothing after ``done``. A student's code that writes on the
    channel (a claim at import or while a check runs, a duplicate, an unknown check or kind, a malformed event)
    breaks it: the reporter's next event no longer follows. ``tampered`` and ``review`` may come anywhere (the
    tripwires' and the audit hook's own reports). Empty: in order (a run cut short by a fault is in order up to
    where it stopped)."""
    order = _Order(module, checks)
    for event in events:
        if event.kind in (Event.TAMPERED, Event.REVIEW):
            continue
        order.take(event)
        if len(order.found) >= 5:
            break
    return order.found


class _Order:
    """The state of :func:`out_of_order` along a run's events."""

    def __init__(self, module: str, checks: set[str]):
        self.module, self.checks = module, checks
        self.found: list[str] = []
        self.begun: set[str] = set()
        self.current: str | None = None
        self.imported = self.importing = self.done = False

    def take(self, event: ChannelEvent) -> None:
        what, kind, module = typed.shown(event), event.kind, self.module
        named = event.module if isinstance(event, (typed.ImportBegin, typed.ImportEnd)) else None
        if self.done:
            self.found.append(f"{what} after 'done'")
        elif kind is None:
            self.found.append(f"an unknown event {what}")
        elif self.importing and kind != Event.IMPORT_END:
            self.found.append(f"{what} while {module}.py was being imported")
        elif kind == Event.IMPORT_BEGIN:
            if self.imported or named != module:
                shown = event.module if isinstance(event, Malformed) else repr(named)
                self.found.append(f"{what} of module {shown} (a second import, or not {module})")
            self.imported = self.importing = True
        elif kind == Event.IMPORT_END:
            if not self.importing or named != module:
                self.found.append(f"{what} without its 'import_begin'")
            self.importing = False
        elif kind == Event.BEGIN:
            check = event.check if isinstance(event, typed.Begin) else None
            if check is None or check not in self.checks or check in self.begun or self.current is not None:
                self.found.append(f"{what}: not a check of this run, a second one, or before the last one ended")
            if check is not None:
                self.begun.add(check)
            self.current = check
        elif kind == Event.END:
            if self.current is None or not isinstance(event, Claim) or event.check != self.current:
                self.found.append(f"{what} that is not the end of the check running ({self.current!r})")
            self.current = None
        elif kind == Event.DONE:
            self.done = True
