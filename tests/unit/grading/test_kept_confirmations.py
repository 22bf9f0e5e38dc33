"""The trusted side's answers kept beside the proofs (autograder.grading.preflight.confirmations): given back only for
the very same request of the very same setting, only as the grader wrote them, never a failure, and nowhere a
student's process could write."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import spoiled

from autograder.grading import preflight
from autograder.grading.preflight.confirmations import KeptConfirmations
from autograder.grading.wire import Replay, Verdict

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")
CLAIMS = ["at_updates::test_set_diagonal_matches_reference", "at_updates::test_set_diagonal_works_under_jit"]
TRANSCRIPTS = {CLAIMS[0]: {"d1": {"a": [1.0, 2.0]}}, CLAIMS[1]: {"d2": {"b": "QUdQUk9H"}}}
SOURCES = {"at_updates": "def set_diagonal(x, value):\n    return x.at[0, 0].set(value)\n"}
PASSED = {c: Verdict(Replay.PASSED) for c in CLAIMS}


def key(**changes) -> str | None:
    asked = dict(claims=CLAIMS, transcripts=TRANSCRIPTS, sources=SOURCES, seed=7, givens=False)
    asked.update(changes)
    return KeptConfirmations.key(**asked)


def kept_answer(kept_here, snapshot, options) -> tuple[KeptConfirmations, Path]:
    kept = KeptConfirmations.of(snapshot, options(), SANDBOXED)
    kept.keep(key(), CLAIMS, PASSED)
    return kept, kept.folder / f"{key()}.json"


def test_an_answer_is_given_back_for_the_very_same_request(kept_here, snapshot, options):
    kept, path = kept_answer(kept_here, snapshot, options)
    assert path.parent.parent == kept_here / "confirmed" and oct(path.stat().st_mode & 0o777) == "0o600"
    assert KeptConfirmations.of(snapshot, options(), SANDBOXED).load(key(), CLAIMS) == PASSED
    # a later call with other limits or jobs asks the same verifier the same thing
    assert KeptConfirmations.of(snapshot, options(memory_mb=4096, jobs=4), SANDBOXED).load(key(), CLAIMS) == PASSED


@pytest.mark.parametrize(
    "change",
    [
        dict(transcripts={**TRANSCRIPTS, CLAIMS[0]: {"d1": {"a": [1.0, 2.000001]}}}),  # one recorded value
        dict(transcripts={**TRANSCRIPTS, CLAIMS[1]: {"d2": {"b": "QUdQUk9I"}}}),  # one program's bytes
        dict(sources={"at_updates": SOURCES["at_updates"] + "# a comment\n"}),  # the file checks are decided from
        dict(claims=CLAIMS[:1]),  # fewer claims
        dict(seed=8),
        dict(givens=True),
    ],
)
def test_another_request_is_asked_again(kept_here, snapshot, options, change):
    kept, _ = kept_answer(kept_here, snapshot, options)
    other = key(**change)
    assert other != key() and kept.load(other, change.get("claims", CLAIMS)) is None


def test_another_setting_has_answers_of_its_own(kept_here, snapshot, options):
    kept_answer(kept_here, snapshot, options)
    for other in (options(seed=8), options(modules=["at_updates", "prng"])):
        assert KeptConfirmations.of(snapshot, other, SANDBOXED).load(key(), CLAIMS) is None


@pytest.mark.parametrize("outcome", [Replay.FAILED, None])
def test_an_answer_with_a_failure_or_a_claim_unanswered_is_never_kept(kept_here, snapshot, outcome, options):
    """A failed replay may be the machine's (a verifier short of memory): it is asked again on every call."""
    kept = KeptConfirmations.of(snapshot, options(), SANDBOXED)
    answered = dict(PASSED)
    if outcome is None:
        del answered[CLAIMS[1]]
    else:
        answered[CLAIMS[1]] = Verdict(outcome, "it differs")
    kept.keep(key(), CLAIMS, answered)
    assert kept.load(key(), CLAIMS) is None and not list(kept_here.rglob("*.json"))


def test_an_unverifiable_claim_is_kept_with_its_answer(kept_here, snapshot, options):
    kept = KeptConfirmations.of(snapshot, options(), SANDBOXED)
    answered = {**PASSED, CLAIMS[1]: Verdict(Replay.UNVERIFIABLE, "a loader is not data")}
    kept.keep(key(), CLAIMS, answered)
    assert kept.load(key(), CLAIMS) == answered


def _a_failure_written_in(path: Path) -> None:
    path.write_text(path.read_text().replace('"passed"', '"failed"', 1))


def _a_claim_missing(path: Path) -> None:
    path.write_text("{}")


@pytest.mark.parametrize("how", [*spoiled.ANY_KEPT_FILE, _a_failure_written_in, _a_claim_missing])
def test_an_answer_not_as_the_grader_wrote_it_is_asked_again(kept_here, snapshot, options, how):
    if spoiled.needs_root(how):
        pytest.skip("giving a file away needs root")
    kept, path = kept_answer(kept_here, snapshot, options)
    how(path)
    assert kept.load(key(), CLAIMS) is None


def test_nothing_is_kept_where_a_students_process_could_write(monkeypatch, tmp_path, snapshot, options):
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "proofs"))
    unsandboxed = KeptConfirmations.of(snapshot, options(), SimpleNamespace(sandbox="none"))
    assert unsandboxed.folder is None
    unsandboxed.keep(key(), CLAIMS, PASSED)
    assert unsandboxed.load(key(), CLAIMS) is None and not list((tmp_path / "proofs").rglob("*.json"))


def test_a_request_that_is_not_plain_data_has_no_key():
    assert key(transcripts={CLAIMS[0]: {"d1": object()}}) is None


DIGEST = "ab" * 32


def test_a_submission_whose_answer_was_kept_is_noted_for_its_setting_only(kept_here, snapshot, options):
    kept, _ = kept_answer(kept_here, snapshot, options)
    assert not kept.answered(DIGEST)
    kept.mark_answered(DIGEST)
    assert KeptConfirmations.of(snapshot, options(jobs=4), SANDBOXED).answered(DIGEST)
    assert not KeptConfirmations.of(snapshot, options(seed=8), SANDBOXED).answered(DIGEST)
    assert not kept.answered("cd" * 32)
    kept.mark_answered("../../escaped")  # not a digest: nothing is written
    assert not kept.answered("../../escaped") and not list(kept_here.rglob("*escaped*"))


@pytest.mark.parametrize("how", [spoiled.group_writable, spoiled.someone_elses, spoiled.a_link])
def test_a_note_not_as_the_grader_wrote_it_is_not_read(kept_here, snapshot, options, how):
    if spoiled.needs_root(how):
        pytest.skip("giving a file away needs root")
    kept, _ = kept_answer(kept_here, snapshot, options)
    kept.mark_answered(DIGEST)
    how(kept.folder / f"submission-{DIGEST}")
    assert not kept.answered(DIGEST)
