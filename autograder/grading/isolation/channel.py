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
  event without the run's nonce is dropped.

Once flooded (:attr:`EventDecoder.flooded`), nothing more is decoded; the
caller ends the run and blames the check that was running.
"""

from __future__ import annotations

import json

MAX_EVENT_BYTES = 32 * 2**20  # one line: a check's transcript (the child keeps them under 20 M characters) and more
MAX_RUN_BYTES = 256 * 2**20  # everything one grading process may write
FREE_VALUES = 1_000_000  # JSON values any run may send, on top of one per BYTES_PER_VALUE bytes received
BYTES_PER_VALUE = 8


def value_bound(line: bytes) -> int:
    """An upper bound on the number of JSON values ``line`` holds (C-speed counts, no parsing)."""
    return line.count(b"[") + line.count(b"{") + line.count(b",") + line.count(b":") + 1


class EventDecoder:
    """Feed it the channel's chunks; it returns the events (dicts carrying ``nonce``) they complete."""

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

    def feed(self, chunk: bytes) -> list[dict]:
        if self.flooded:
            return []
        self.received += len(chunk)
        if self.received > self.max_run_bytes:
            self.flood = f"more than {self.max_run_bytes // 2**20} MB in one run"
            return []
        events: list[dict] = []
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

    def _decode(self, line: bytes) -> dict | None:
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
        return event


# The kinds of event a grading process writes (autograder.grading.wire.Event), named here as plain strings: this
# module reads hostile bytes and imports nothing of the kit.
_KNOWN = ("begin", "end", "import_begin", "import_end", "tampered", "review", "done")


def out_of_order(events: list[dict], module: str, checks: set[str]) -> list[str]:
    """What is wrong with the order of a run's events, as the grading process's own reporter writes them: the
    run's ``module`` imported once (``import_begin`` then ``import_end``, nothing between them: the student's
    code runs there), each of ``checks`` (the run's own, not skipped) begun at most once and ended exactly once
    by the next event but for the import, in order, nothing after ``done``. A student's code that writes on the
    channel (a claim at import or while a check runs, a duplicate, an unknown check or kind) breaks it: the
    reporter's next event no longer follows. ``tampered`` may come anywhere (the tripwires' own report). Empty:
    in order (a run cut short by a fault is in order up to where it stopped)."""
    found: list[str] = []
    begun: set[str] = set()
    current: str | None = None
    imported = importing = done = False
    for event in events:
        kind, check = event.get("event"), event.get("check")
        what = f"{kind!r}" + (f" of {check!r}" if check is not None else "")
        if kind in ("tampered", "review"):  # the tripwires' and the audit hook's own reports
            continue
        if done:
            found.append(f"{what} after 'done'")
        elif kind not in _KNOWN:
            found.append(f"an unknown event {what}")
        elif importing and kind != "import_end":
            found.append(f"{what} while {module}.py was being imported")
        elif kind == "import_begin":
            if imported or event.get("module") != module:
                found.append(f"{what} of module {event.get('module')!r} (a second import, or not {module})")
            imported = importing = True
        elif kind == "import_end":
            if not importing or event.get("module") != module:
                found.append(f"{what} without its 'import_begin'")
            importing = False
        elif kind == "begin":
            if check not in checks or check in begun or current is not None:
                found.append(f"{what}: not a check of this run, a second one, or before the last one ended")
            begun.add(str(check))
            current = check if isinstance(check, str) else None
        elif kind == "end":
            if current is None or check != current:
                found.append(f"{what} that is not the end of the check running ({current!r})")
            current = None
        elif kind == "done":
            done = True
        if len(found) >= 5:
            break
    return found
