"""The events a grading process writes on its channel, typed: what the grader reads past the decoder.

The grading process (:mod:`autograder.grading.untrusted.child`) writes one JSON object per line; the grader's
:class:`~autograder.grading.isolation.channel.EventDecoder` parses each line within its caps, drops one without
the run's nonce, and hands the object to :func:`decode`, which makes it one of the :data:`ChannelEvent` types
below. The student's code runs in that process and can write anything, so :func:`decode` never raises and never
trusts: an object of a known kind whose fields are not what the reporter writes (a ``begin`` whose check is not
text, an ``import_end`` without its module) becomes :class:`Malformed`, and so does one of a kind the reporter
never writes; the order check (:func:`~autograder.grading.isolation.channel.out_of_order`) counts a malformed
event as tampering, as it counted the raw one. A claim (``end``) is :class:`~autograder.grading.wire.Claim`,
decoded as it always was (an outcome that is not claimable is a failure).

Every type has ``to_event()`` (the object the producer writes, without the nonce the sandbox adds) and ``kind``
(its :class:`~autograder.grading.wire.Event`; ``None`` for a malformed event of an unknown kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from autograder.grading.wire import Claim, Event


@dataclass(frozen=True)
class Begin:
    """A check starts (its time is counted from here)."""

    check: str
    kind: ClassVar[Event] = Event.BEGIN

    def to_event(self) -> dict:
        return {"event": str(self.kind), "check": self.check}


@dataclass(frozen=True)
class ImportBegin:
    """The student's module is being imported (their code runs from here)."""

    module: str
    kind: ClassVar[Event] = Event.IMPORT_BEGIN

    def to_event(self) -> dict:
        return {"event": str(self.kind), "module": self.module}


@dataclass(frozen=True)
class ImportEnd:
    module: str
    kind: ClassVar[Event] = Event.IMPORT_END

    def to_event(self) -> dict:
        return {"event": str(self.kind), "module": self.module}


@dataclass(frozen=True)
class Tampered:
    """The tripwires' report: the grader's code the student's module changed (``what``: anything that is not a
    list says nothing, and still reports tampering)."""

    what: tuple[str, ...] = ()
    kind: ClassVar[Event] = Event.TAMPERED

    def to_event(self) -> dict:
        return {"event": str(self.kind), "what": list(self.what)}


@dataclass(frozen=True)
class Review:
    """The audit hook saw the student's code reach into the process: what, at which line of their module."""

    what: str
    line: int
    kind: ClassVar[Event] = Event.REVIEW

    def to_event(self) -> dict:
        return {"event": str(self.kind), "what": self.what, "line": self.line}


@dataclass(frozen=True)
class Done:
    """The run ended as planned."""

    kind: ClassVar[Event] = Event.DONE

    def to_event(self) -> dict:
        return {"event": str(self.kind)}


@dataclass(frozen=True)
class Malformed:
    """An object with the run's nonce that is no event the reporter writes: ``kind`` is its kind when it is one
    of :class:`~autograder.grading.wire.Event` (its fields are wrong), None when it is not. ``shown`` names it
    as the order check says it (``'begin' of 5``), ``module`` is its module field as written (``repr``)."""

    kind: Event | None
    shown: str
    module: str = "None"

    def to_event(self) -> dict:
        return {"event": None if self.kind is None else str(self.kind), "shown": self.shown}


ChannelEvent = Claim | Begin | ImportBegin | ImportEnd | Tampered | Review | Done | Malformed
_KINDS = {str(kind): kind for kind in Event}


def decode(event: dict) -> ChannelEvent:
    """The typed event of one decoded object of the channel (hostile: never raises, see the module docstring)."""
    raw_kind, check, module = event.get("event"), event.get("check"), event.get("module")
    kind = _KINDS.get(raw_kind) if isinstance(raw_kind, str) else None
    shown = f"{raw_kind!r}" + (f" of {check!r}" if check is not None else "")
    malformed = Malformed(kind, shown, repr(module))
    if kind == Event.END:
        return Claim.from_event(event) or malformed
    if kind == Event.BEGIN:
        return Begin(check) if isinstance(check, str) else malformed
    if kind in (Event.IMPORT_BEGIN, Event.IMPORT_END):
        if not isinstance(module, str):
            return malformed
        return ImportBegin(module) if kind == Event.IMPORT_BEGIN else ImportEnd(module)
    if kind == Event.TAMPERED:
        what = event.get("what")
        return Tampered(tuple(str(w) for w in what) if isinstance(what, list) else ())
    if kind == Event.REVIEW:
        what, line = event.get("what"), event.get("line")
        return Review(what, line) if isinstance(what, str) and isinstance(line, int) else malformed
    if kind == Event.DONE:
        return Done()
    return malformed


def shown(event: ChannelEvent) -> str:
    """How the order check names ``event`` (``'end' of 'm::test_a'``), as it named the raw object."""
    if isinstance(event, Malformed):
        return event.shown
    check = event.check if isinstance(event, (Claim, Begin)) else None
    return f"{str(event.kind)!r}" + (f" of {check!r}" if check is not None else "")
