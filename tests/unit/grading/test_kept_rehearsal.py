"""The pre-flight's request of the reference kept beside its proof (autograder.grading.preflight.rehearsal): read
back only as the grader wrote it, for the very same setting, and never where a student's process could write."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import spoiled

from autograder.grading import preflight
from autograder.grading.preflight.rehearsal import (
    MAX_REQUEST_BYTES,
    REQUEST,
    KeptRehearsal,
    Rehearsal,
    answered_as_rehearsed,
)
from autograder.grading.wire import PlannedCheck, Replay, Verdict

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")
CLAIMS = ["at_updates::test_set_diagonal_matches_reference", "at_updates::test_set_diagonal_works_under_jit"]
TRANSCRIPTS = {CLAIMS[0]: {"d1": {"a": [1.0, 2.0]}}, CLAIMS[1]: {"d2": {"b": "QUdQUk9H"}}}
SOURCES = {"at_updates": "def set_diagonal(x, value):\n    return x.at[0, 0].set(value)\n"}
RETRACES = "at_updates::test_set_diagonal_does_not_retrace"


def kept_request(snapshot, options) -> tuple[KeptRehearsal, Path]:
    kept = KeptRehearsal.of(snapshot, options(), SANDBOXED)
    kept.keep(CLAIMS, TRANSCRIPTS, SOURCES)
    return kept, kept.folder / REQUEST


def test_the_request_reads_back_as_it_was_asked(kept_here, snapshot, options):
    _, path = kept_request(snapshot, options)
    assert path.parent.parent == kept_here / "rehearsal" and oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    # a later call of the same setting (other limits or jobs) reads it
    later = KeptRehearsal.of(snapshot, options(memory_mb=4096, jobs=4), SANDBOXED).load()
    assert later == Rehearsal(CLAIMS, TRANSCRIPTS, SOURCES)


def test_another_setting_has_none(kept_here, snapshot, options):
    kept_request(snapshot, options)
    for other in (options(seed=8), options(modules=["at_updates", "prng"])):
        assert KeptRehearsal.of(snapshot, other, SANDBOXED).load() is None


def test_no_claim_or_what_is_not_plain_data_is_never_kept(kept_here, snapshot, options):
    kept = KeptRehearsal.of(snapshot, options(), SANDBOXED)
    kept.keep([], TRANSCRIPTS, SOURCES)
    kept.keep(CLAIMS, {CLAIMS[0]: {"d1": object()}}, SOURCES)
    assert kept.load() is None and not list(kept_here.rglob(REQUEST))


def _no_claims(path: Path) -> None:
    path.write_text('{"claims": [], "transcripts": {}, "sources": {}}')


def _a_claim_not_text(path: Path) -> None:
    path.write_text('{"claims": [1], "transcripts": {}, "sources": {}}')


def _too_large(path: Path) -> None:
    with path.open("a") as f:
        f.truncate(MAX_REQUEST_BYTES + 1)


@pytest.mark.parametrize("how", [*spoiled.ANY_KEPT_FILE, _no_claims, _a_claim_not_text, _too_large])
def test_a_request_not_as_the_grader_wrote_it_is_not_read(kept_here, snapshot, options, how):
    if spoiled.needs_root(how):
        pytest.skip("giving a file away needs root")
    kept, path = kept_request(snapshot, options)
    assert kept.load() is not None  # the control
    how(path)
    assert kept.load() is None


def test_nothing_is_kept_where_a_students_process_could_write(monkeypatch, tmp_path, snapshot, options):
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "proofs"))
    unsandboxed = KeptRehearsal.of(snapshot, options(), SimpleNamespace(sandbox="none"))
    assert unsandboxed.folder is None
    unsandboxed.keep(CLAIMS, TRANSCRIPTS, SOURCES)
    assert unsandboxed.load() is None and not list((tmp_path / "proofs").rglob(REQUEST))


# -- the answer kept with it: the pre-flight's verdicts, given to a later claim on the very same transcript ---------

PLAN = {
    CLAIMS[0]: PlannedCheck(CLAIMS[0], "at_updates", "set_diagonal", True),
    CLAIMS[1]: PlannedCheck(CLAIMS[1], "at_updates", "set_diagonal", False, "program"),
    RETRACES: PlannedCheck(RETRACES, "at_updates", "set_diagonal", False, "program", analysed=True),
}
PASSED = Verdict(Replay.PASSED)


def rehearsed(snapshot, options) -> Rehearsal:
    kept = KeptRehearsal.of(snapshot, options(), SANDBOXED)
    claims = [*CLAIMS, RETRACES]
    kept.keep(claims, {**TRANSCRIPTS, RETRACES: {"d3": {"c": 1}}}, SOURCES, dict.fromkeys(claims, PASSED))
    found = kept.load()
    assert found is not None and found.answer == dict.fromkeys(claims, PASSED)
    return found


def test_a_claim_on_the_very_same_transcript_gets_the_verdict_the_preflight_reached(kept_here, snapshot, options):
    found = rehearsed(snapshot, options)
    claims = [*CLAIMS, RETRACES]
    same = {CLAIMS[0]: {"d1": {"a": [1.0, 2.0]}}, CLAIMS[1]: {"d2": {"b": "QUdQUk9H"}}, RETRACES: {"d3": {"c": 1}}}
    assert answered_as_rehearsed(found, PLAN, claims, same, SOURCES) == dict.fromkeys(claims, PASSED)
    # one number of one answer differs: that claim is replayed; the others keep the pre-flight's verdicts
    other = {**same, CLAIMS[0]: {"d1": {"a": [1.0, 2.000001]}}}
    assert answered_as_rehearsed(found, PLAN, claims, other, SOURCES) == {CLAIMS[1]: PASSED, RETRACES: PASSED}
    # a check decided from the source too: its verdict only for the very same source (the analysis reads it)
    mine = {"at_updates": SOURCES["at_updates"] + "# mine\n"}
    assert answered_as_rehearsed(found, PLAN, claims, same, mine) == {CLAIMS[0]: PASSED, CLAIMS[1]: PASSED}
    assert answered_as_rehearsed(found, PLAN, claims, same, {}) == {CLAIMS[0]: PASSED, CLAIMS[1]: PASSED}
    # a claim the pre-flight was not asked, or a check the plan does not know: replayed
    unknown = "at_updates::test_clamp_at_matches_reference"
    assert answered_as_rehearsed(found, PLAN, [unknown], {unknown: same[CLAIMS[0]]}, SOURCES) == {}
    assert answered_as_rehearsed(found, {}, claims, same, SOURCES) == {}
    assert answered_as_rehearsed(None, PLAN, claims, same, SOURCES) == {}


def test_an_answer_with_a_failure_is_not_kept(kept_here, snapshot, options):
    kept = KeptRehearsal.of(snapshot, options(), SANDBOXED)
    kept.keep(CLAIMS, TRANSCRIPTS, SOURCES, {CLAIMS[0]: PASSED, CLAIMS[1]: Verdict(Replay.FAILED, "the machine")})
    found = kept.load()
    assert found == Rehearsal(CLAIMS, TRANSCRIPTS, SOURCES)  # the request still rehearses; no verdict is given
    assert answered_as_rehearsed(found, PLAN, CLAIMS, TRANSCRIPTS, SOURCES) == {}


def _a_failure_written_in(path: Path) -> None:
    data = json.loads(path.read_text())
    data["answer"][CLAIMS[0]] = {"outcome": "failed", "message": "planted"}
    path.write_text(json.dumps(data))


def test_an_answer_not_as_the_grader_wrote_it_is_not_read(kept_here, snapshot, options):
    rehearsed(snapshot, options)
    kept = KeptRehearsal.of(snapshot, options(), SANDBOXED)
    _a_failure_written_in(kept.folder / REQUEST)
    assert kept.load() is None
