"""The grader's copy of a folder of plain files (``isolation.scratch.copy_plain_files``): a student's kept compilation
cache copied into their sandbox and back (``grade --jax-cache``). The grader may read what a student must not, so
nothing a submission left there makes it follow a link, wait on a pipe, descend into a folder or crash, and a copy
is bounded."""

from __future__ import annotations

import os

from autograder.grading.isolation.scratch import copy_plain_files

PROGRAMS = {"jit_scatter_max-1a2b-cache": b"\x01" * 300, "jit_clamp_at-3c4d-cache": b"\x02" * 700}


def cache(folder):
    folder.mkdir(parents=True)
    for name, data in PROGRAMS.items():
        (folder / name).write_bytes(data)
    return folder


def listing(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_the_plain_files_are_copied_into_a_private_folder(tmp_path):
    assert copy_plain_files(cache(tmp_path / "kept"), tmp_path / "box" / ".jax_cache") == (2, 1000)
    assert listing(tmp_path / "box" / ".jax_cache") == PROGRAMS
    assert oct((tmp_path / "box" / ".jax_cache").stat().st_mode & 0o777) == "0o700"


def test_what_a_submission_left_besides_plain_files_is_skipped(tmp_path):
    """A folder once crashed the copy (a student's process made one in its cache: the grader's finish raised)."""
    kept = cache(tmp_path / "kept")
    (kept / "a-folder-cache").mkdir()
    (kept / "a-folder-cache" / "deep-cache").write_bytes(b"x")
    (kept / "host-link-cache").symlink_to("/etc/passwd")
    os.mkfifo(kept / "a-pipe-cache")  # opened without waiting for a writer, then skipped
    assert copy_plain_files(kept, tmp_path / "dest") == (2, 1000)
    assert listing(tmp_path / "dest") == PROGRAMS


def test_a_source_that_is_a_link_or_missing_copies_nothing(tmp_path):
    (tmp_path / "link").symlink_to(cache(tmp_path / "real"))
    assert copy_plain_files(tmp_path / "link", tmp_path / "a") == (0, 0)
    assert copy_plain_files(tmp_path / "missing", tmp_path / "b") == (0, 0)
    assert listing(tmp_path / "a") == listing(tmp_path / "b") == {}


def test_a_copy_is_bounded_in_files_and_bytes(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    for i in range(10):
        (source / f"p{i}").write_bytes(b"x" * 100)
    assert copy_plain_files(source, tmp_path / "a", max_files=4) == (4, 400)
    assert copy_plain_files(source, tmp_path / "b", max_bytes=250) == (2, 200)
    assert copy_plain_files(source, tmp_path / "c") == (10, 1000)


def test_each_copy_keeps_the_time_it_was_written(tmp_path):
    """A kept cache copied back keeps which programs a student's processes compiled (newer) and which were planted
    (the seed's time: autograder.grading.preflight.seed)."""
    kept = cache(tmp_path / "kept")
    os.utime(kept / "jit_clamp_at-3c4d-cache", ns=(1_000_000_000, 2_000_000_000))
    copy_plain_files(kept, tmp_path / "box")
    assert (tmp_path / "box" / "jit_clamp_at-3c4d-cache").stat().st_mtime_ns == 2_000_000_000
    assert (tmp_path / "box" / "jit_scatter_max-1a2b-cache").stat().st_mtime_ns == (
        kept / "jit_scatter_max-1a2b-cache"
    ).stat().st_mtime_ns
