"""The reference's compiled programs, every student's first cache (``autograder.grading.preflight.compiled``).

Taken from the pre-flight's reference when its processes ended, kept beside the proof only after a pass, copied into
a student's cache folder: plain files only (no link followed, no folder), bounded, and from the kept folder only the
grader's own files in a folder of the grader's own."""

from __future__ import annotations

import os

import pytest
from spoiled import needs_root, someone_elses

from autograder.grading.isolation.scratch import copy_plain_files
from autograder.grading.preflight import compiled
from autograder.grading.preflight.compiled import KeptCompiled

PROGRAMS = {"jit_scatter_max-1a2b-cache": b"\x01" * 300, "jit_clamp_at-3c4d-cache": b"\x02" * 700}


def reference_cache(folder):
    folder.mkdir(parents=True)
    for name, data in PROGRAMS.items():
        (folder / name).write_bytes(data)
    return folder


def listing(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_student_cache_starts_with_what_the_reference_compiled_and_nothing_else(tmp_path):
    kept = KeptCompiled(None)  # where proofs cannot be kept: this run's copy only
    kept.take(reference_cache(tmp_path / "reference" / ".jax_cache"))
    assert kept.seed(tmp_path / "alice" / ".jax_cache") == len(PROGRAMS)
    assert listing(tmp_path / "alice" / ".jax_cache") == PROGRAMS
    assert oct((tmp_path / "alice" / ".jax_cache").stat().st_mode & 0o777) == "0o700"
    # what alice's processes write is hers: bob's copy is the reference's
    (tmp_path / "alice" / ".jax_cache" / "jit_clamp_at-3c4d-cache").write_bytes(b"planted")
    kept.seed(tmp_path / "bob" / ".jax_cache")
    assert listing(tmp_path / "bob" / ".jax_cache") == PROGRAMS
    assert kept.keep() is False  # nowhere to keep it
    kept.close()
    assert kept.seed(tmp_path / "carol" / ".jax_cache") == 0


def test_nothing_taken_nothing_kept_nothing_seeded(tmp_path):
    kept = KeptCompiled(tmp_path / "proofs" / compiled.COMPILED / "setting")
    assert kept.keep() is False
    assert kept.seed(tmp_path / "alice" / ".jax_cache") == 0
    assert not (tmp_path / "proofs" / compiled.COMPILED / "setting").exists()


def test_kept_after_a_pass_it_seeds_a_later_call_and_replaces_what_was_kept(tmp_path):
    folder = tmp_path / "proofs" / compiled.COMPILED / "setting"
    first = KeptCompiled(folder)
    first.take(reference_cache(tmp_path / "reference" / ".jax_cache"))
    assert first.keep() is True
    first.close()
    assert listing(folder) == PROGRAMS
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    later = KeptCompiled(folder)  # a later call of the setting: the proof reused, no pre-flight run
    assert later.seed(tmp_path / "alice" / ".jax_cache") == len(PROGRAMS)
    assert listing(tmp_path / "alice" / ".jax_cache") == PROGRAMS
    # proved again (--preflight): what this run's reference compiled replaces what was kept, whole
    again = KeptCompiled(folder)
    newer = tmp_path / "again" / ".jax_cache"
    newer.mkdir(parents=True)
    (newer / "jit_other-9f-cache").write_bytes(b"\x03")
    again.take(newer)
    assert again.keep() is True
    assert listing(folder) == {"jit_other-9f-cache": b"\x03"}
    assert sorted(p.name for p in folder.parent.iterdir()) == ["setting"]  # nothing staged left behind


def kept_folder(tmp_path):
    folder = tmp_path / "proofs" / compiled.COMPILED / "setting"
    kept = KeptCompiled(folder)
    kept.take(reference_cache(tmp_path / "reference" / ".jax_cache"))
    assert kept.keep()
    kept.close()
    return folder


def a_link_to_a_host_file(folder):
    os.unlink(folder / "jit_clamp_at-3c4d-cache")
    (folder / "jit_clamp_at-3c4d-cache").symlink_to("/etc/passwd")


def group_writable(folder):
    (folder / "jit_clamp_at-3c4d-cache").chmod(0o666)


def a_folder(folder):
    os.unlink(folder / "jit_clamp_at-3c4d-cache")
    (folder / "jit_clamp_at-3c4d-cache").mkdir()


def someone_elses_file(folder):
    someone_elses(folder / "jit_clamp_at-3c4d-cache")


@pytest.mark.parametrize("spoil", [a_link_to_a_host_file, group_writable, a_folder, someone_elses_file])
def test_a_kept_file_not_as_the_grader_wrote_it_is_not_copied(tmp_path, spoil):
    if needs_root(someone_elses) and spoil is someone_elses_file:
        pytest.skip("needs root to give a file to another uid")
    folder = kept_folder(tmp_path)
    spoil(folder)
    KeptCompiled(folder).seed(tmp_path / "alice" / ".jax_cache")
    assert listing(tmp_path / "alice" / ".jax_cache") == {
        "jit_scatter_max-1a2b-cache": PROGRAMS["jit_scatter_max-1a2b-cache"]
    }


def the_folder_group_writable(folder):
    folder.chmod(0o777)


def the_folder_a_link(folder):
    real = folder.with_name("real")
    folder.rename(real)
    folder.symlink_to(real)


def the_folder_someone_elses(folder):
    someone_elses(folder)


@pytest.mark.parametrize("spoil", [the_folder_group_writable, the_folder_a_link, the_folder_someone_elses])
def test_a_kept_folder_not_the_graders_own_seeds_nothing(tmp_path, spoil):
    if needs_root(someone_elses) and spoil is the_folder_someone_elses:
        pytest.skip("needs root to give a folder to another uid")
    folder = kept_folder(tmp_path)
    spoil(folder)
    assert KeptCompiled(folder).seed(tmp_path / "alice" / ".jax_cache") == 0
    assert list((tmp_path / "alice" / ".jax_cache").glob("*")) == []


def test_what_the_reference_left_besides_plain_files_is_not_taken(tmp_path):
    cache = reference_cache(tmp_path / "reference" / ".jax_cache")
    (cache / "sub").mkdir()
    (cache / "sub" / "deep-cache").write_bytes(b"x")
    (cache / "host-link").symlink_to("/etc/passwd")
    os.mkfifo(cache / "a-pipe")  # opened without waiting for a writer, then skipped
    kept = KeptCompiled(None)
    kept.take(cache)
    kept.seed(tmp_path / "alice" / ".jax_cache")
    assert listing(tmp_path / "alice" / ".jax_cache") == PROGRAMS
    kept.close()


def test_a_copy_is_bounded_in_files_and_bytes(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for i in range(10):
        (source / f"p{i}").write_bytes(b"x" * 100)
    assert copy_plain_files(source, tmp_path / "a", max_files=4) == (4, 400)
    assert copy_plain_files(source, tmp_path / "b", max_bytes=250) == (2, 200)
    assert copy_plain_files(source, tmp_path / "c") == (10, 1000)


def test_a_source_that_is_a_link_is_not_followed(tmp_path):
    source = reference_cache(tmp_path / "real")
    (tmp_path / "link").symlink_to(source)
    assert copy_plain_files(tmp_path / "link", tmp_path / "dest") == (0, 0)
    assert listing(tmp_path / "dest") == {}
