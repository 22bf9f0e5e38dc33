"""The trusted side's compilation cache kept between ``grade`` calls (``preflight.kept_compile_cache``): beside the
proofs, the grader's own and private, the same folder for the same interpreter, libraries and machine, and none
where a student's process could write there (the run then compiles into a scratch folder of its own)."""

from __future__ import annotations

from types import SimpleNamespace

from autograder.grading import preflight

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")


def test_the_trusted_cache_is_kept_beside_the_proofs_private_and_the_same_for_the_same_setting(monkeypatch, tmp_path):
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "proofs"))
    kept = preflight.kept_compile_cache(SANDBOXED)
    assert kept is not None and kept.parent == tmp_path / "proofs" / preflight.TRUSTED_COMPILED
    assert kept.is_dir() and kept.stat().st_mode & 0o077 == 0
    assert preflight.kept_compile_cache(SANDBOXED) == kept
    monkeypatch.setattr(preflight.proofs, "machine_seen", lambda: {"cpus": 999, "memory_bytes": 1})
    assert preflight.kept_compile_cache(SANDBOXED) not in (None, kept)  # another machine: another folder


def test_no_trusted_cache_is_kept_where_a_student_could_write_it(monkeypatch, tmp_path):
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "proofs"))
    assert preflight.kept_compile_cache(SimpleNamespace(sandbox="none")) is None  # students run as the grader
    (tmp_path / "proofs").mkdir(mode=0o700)
    (tmp_path / "proofs").chmod(0o777)
    assert preflight.kept_compile_cache(SANDBOXED) is None
    (tmp_path / "proofs").chmod(0o700)
    kept = preflight.kept_compile_cache(SANDBOXED)
    assert kept is not None
    kept.chmod(0o770)
    assert preflight.kept_compile_cache(SANDBOXED) is None
