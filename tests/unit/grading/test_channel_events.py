"""The channel's events typed at the decoder (issue 45): what a grading process writes is hostile, and what the
grader reads past :class:`~autograder.grading.isolation.channel.EventDecoder` is one of the typed events of
:mod:`autograder.grading.events`, never the raw object: unknown fields dropped, wrong types malformed (the order
check's tampering), a claim decoded as it always scored."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.core.status import Status
from autograder.grading import preflight
from autograder.grading.events import (
    Begin,
    ChannelEvent,
    Done,
    ImportBegin,
    ImportEnd,
    Malformed,
    Review,
    Tampered,
    decode,
)
from autograder.grading.isolation import channel, limits
from autograder.grading.verdicts import last_claim, reviewed
from autograder.grading.wire import Claim, Event, FaultKind

NONCE = "n" * 32
TYPES = (Claim, Begin, ImportBegin, ImportEnd, Tampered, Review, Done, Malformed)


def fed(*objects: object) -> list[ChannelEvent]:
    """What the decoder makes of ``objects`` written on the channel, each with the run's nonce."""
    decoder = channel.EventDecoder(NONCE)
    data = b"".join((json.dumps({**o, "nonce": NONCE} if isinstance(o, dict) else o) + "\n").encode() for o in objects)
    return decoder.feed(data)


def test_the_reporters_own_events_come_out_typed_with_unknown_fields_dropped():
    got = fed(
        {"event": "import_begin", "module": "m", "extra": [1, 2]},
        {"event": "import_end", "module": "m"},
        {"event": "begin", "check": "m::test_a", "outcome": "passed"},
        {"event": "end", "check": "m::test_a", "outcome": "passed", "transcript": {"d": 1}, "verdict": "passed"},
        {"event": "review", "what": "opens a file (open)", "line": 3},
        {"event": "tampered", "what": ["pytest", 5]},
        {"event": "done", "why": "all"},
    )
    assert got == [
        ImportBegin("m"),
        ImportEnd("m"),
        Begin("m::test_a"),
        Claim("m::test_a", Status.PASSED, "", {"d": 1}),
        Review("opens a file (open)", 3),
        Tampered(("pytest", "5")),
        Done(),
    ]
    assert not any(isinstance(e, dict) for e in got)


def test_wrong_types_are_malformed_or_score_as_they_always_did():
    got = fed(
        {"event": "begin", "check": 5},
        {"event": "import_begin", "module": ["m"]},
        {"event": "import_end"},
        {"event": "review", "what": "x", "line": "3"},
        {"event": "end", "check": ["m::test_a"], "outcome": "passed"},
        {"event": "verdict", "check": "m::test_a"},
        {"event": 7},
        [1, 2],  # not an object: dropped
    )
    assert got == [
        Malformed(Event.BEGIN, "'begin' of 5"),
        Malformed(Event.IMPORT_BEGIN, "'import_begin'", "['m']"),
        Malformed(Event.IMPORT_END, "'import_end'"),
        Malformed(Event.REVIEW, "'review'"),
        Malformed(Event.END, "'end' of ['m::test_a']"),
        Malformed(None, "'verdict' of 'm::test_a'"),
        Malformed(None, "7"),
    ]
    # a claim's fields of the wrong type: what they always scored (a failure, no message, no transcript)
    [claim] = fed({"event": "end", "check": "m::t", "outcome": "verdict", "message": 5, "transcript": {"d": 1}})
    assert claim == Claim("m::t", Status.FAILED, "", None)
    assert fed({"event": "tampered", "what": "pytest"}) == [Tampered(())]  # still tampering, saying nothing


def test_malformed_duplicate_and_out_of_order_events_break_the_order():
    begin, end, done = (
        {"event": "begin", "check": "m::test_a"},
        {"event": "end", "check": "m::test_a"},
        {"event": "done"},
    )
    imported = [{"event": "import_begin", "module": "m"}, {"event": "import_end", "module": "m"}]
    assert channel.out_of_order(fed(*imported, begin, end, done), "m", {"m::test_a"}) == []
    broken = {
        "a duplicate end": [*imported, begin, end, end, done],
        "an end before its begin": [*imported, end, begin, done],
        "a second import": [*imported, *imported, begin, end, done],
        "a begin of an unhashable check": [*imported, {"event": "begin", "check": ["m::test_a"]}, end, done],
        "an end of a check that is not text": [*imported, begin, {"event": "end", "check": 5}, done],
        "an import_begin of a module that is not text": [{"event": "import_begin", "module": 1}, begin, end, done],
        "an unknown kind": [*imported, {"event": "verdict"}, begin, end, done],
    }
    for name, objects in broken.items():
        assert channel.out_of_order(fed(*objects), "m", {"m::test_a"}), name
    # named as the raw object was
    assert channel.out_of_order(fed(*imported, begin, {"event": "end", "check": 5}), "m", {"m::test_a"}) == [
        "'end' of 5 that is not the end of the check running ('m::test_a')"
    ]


def test_a_malformed_review_is_not_reviewed_nor_the_last_claim():
    run = limits.RunResult(
        events=fed(
            {"event": "end", "check": "m::test_a", "outcome": "passed"},
            {"event": "review", "what": "x", "line": "3"},
        ),
        fault=limits.Fault(FaultKind.CRASH, None, None),
    )
    assert reviewed(run, "m") == []
    assert last_claim(run) == "m::test_a"


def test_a_fault_before_the_typed_import_begin_is_the_graders():
    """The pre-flight reads the typed events: a fault before ``import_begin`` is the grader's."""
    fault = limits.Fault(FaultKind.CRASH, None, None)
    assert preflight.fault_before_student(
        limits.RunResult(events=fed({"event": "begin", "check": "m::t"}), fault=fault)
    )
    assert not preflight.fault_before_student(
        limits.RunResult(events=fed({"event": "import_begin", "module": "m"}), fault=fault)
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
KINDS = st.sampled_from([*(str(k) for k in Event), "verdict"]) | JSON
FIELDS = st.fixed_dictionaries(
    {"event": KINDS},
    optional={k: JSON for k in ("check", "module", "what", "line", "outcome", "message", "transcript")},
)


@settings(max_examples=300, deadline=None)
@given(st.lists(FIELDS, max_size=8))
def test_whatever_a_process_writes_decodes_to_typed_events_and_an_order_verdict(objects):
    events = [decode(o) for o in objects]
    assert all(isinstance(e, TYPES) for e in events)
    assert isinstance(channel.out_of_order(events, "m", {"m::test_a"}), list)
