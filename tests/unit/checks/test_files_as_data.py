"""Files as data (``autograder/checks/files.py``): what a checkpointing function wrote crosses the trust boundary
as names and bytes, and the trusted side (root, on Gradescope) puts it back on disk. Whatever the names say,
nothing is written outside the new folder; links, pipes and devices are never followed or read."""

import os
import signal

import numpy as np
import pytest

from autograder.checks import files


def data(text: bytes) -> np.ndarray:
    return np.frombuffer(text, dtype=np.uint8).copy()


def everything_under(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, dirs, names in os.walk(root) for n in dirs + names)


def test_a_snapshot_comes_back_as_it_was(tmp_path):
    source = tmp_path / "source"
    (source / "1" / "state").mkdir(parents=True)
    (source / "1" / "state" / "array").write_bytes(b"\x00\x01\x02")
    (source / "_METADATA").write_bytes(b"{}")
    taken = files.snapshot(source)
    assert list(taken) == ["1", "1/state", "1/state/array", "_METADATA"]
    back = files.materialise(taken, tmp_path / "back")
    assert everything_under(back) == everything_under(source)
    assert (back / "1" / "state" / "array").read_bytes() == b"\x00\x01\x02"
    single = files.materialise(files.snapshot(source / "_METADATA"), tmp_path / "one" / "file")
    assert single.read_bytes() == b"{}"


HOSTILE = {
    "an absolute name": {"/tmp/planted.pth": data(b"import os")},
    "a parent": {"../planted.pth": data(b"import os")},
    "a parent inside": {"a": None, "a/../../planted.pth": data(b"x")},
    "a dot": {"./a": data(b"x")},
    "an empty part": {"a//b": data(b"x")},
    "a trailing slash": {"a/": None},
    "a backslash": {"..\\planted": data(b"x")},
    "a NUL": {"a\0b": data(b"x")},
    "a name that is not text": {1: data(b"x")},
    "content that is not bytes": {"a": np.arange(3, dtype=np.int64)},
    "content that is an object": {"a": "text"},
    "the folder itself and more": {"": data(b"x"), "b": data(b"y")},
    "too many files": {f"f{i}": data(b"") for i in range(files.MAX_ENTRIES + 1)},
    "too many bytes": {"a": np.zeros(files.MAX_BYTES, np.uint8), "b": np.zeros(1, np.uint8)},
    "not a mapping": [("a", data(b"x"))],
}


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_names_that_leave_the_folder_or_exceed_the_caps_are_refused_and_nothing_is_written(hostile, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "next-to-it").write_text("untouched")
    with pytest.raises(files.UnsafeFiles):
        files.materialise(hostile, tmp_path / "run" / "ckpt")
    assert everything_under(tmp_path) == ["next-to-it", "run"]
    assert (tmp_path / "next-to-it").read_text() == "untouched"
    assert not os.path.exists("/tmp/planted.pth")


def test_writing_never_follows_a_link_or_opens_what_exists(tmp_path, monkeypatch):
    """Even if a name got through, entries are created relative to the new folder with O_NOFOLLOW and O_EXCL:
    a link planted where the folder is made is refused, never written through."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "run").mkdir()
    os.symlink(target, tmp_path / "run" / "ckpt")
    with pytest.raises(FileExistsError):
        files.materialise({"a": data(b"x")}, tmp_path / "run" / "ckpt")
    os.symlink(target / "file", tmp_path / "run" / "single")
    with pytest.raises(FileExistsError):
        files.materialise({"": data(b"x")}, tmp_path / "run" / "single")
    assert list(target.iterdir()) == []


def test_a_snapshot_records_regular_files_and_folders_only(tmp_path):
    """Links (to files or folders outside), pipes and sockets are not read: a pipe would hang the reader, a
    link would read what the writer may not."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("secret")
    source = tmp_path / "source"
    source.mkdir()
    (source / "kept").write_bytes(b"ok")
    os.symlink(secret / "key", source / "file-link")
    os.symlink(secret, source / "folder-link")
    os.mkfifo(source / "pipe")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("the snapshot waited on a pipe")))
    signal.alarm(20)
    try:
        taken = files.snapshot(source)
    finally:
        signal.alarm(0)
    assert list(taken) == ["kept"]
    assert files.snapshot(source / "file-link") == {}
    assert files.snapshot(source / "folder-link") == {}


def test_a_libraries_message_names_the_checks_folder_the_same_way_every_run():
    """A folder of the check's own has a random name; a message quoting it (Orbax's 'does not exist at
    /tmp/check-x1y2/ckpt') would give the same submission other bytes on every run."""
    seen = set()
    for _ in range(2):
        with files.new_directory() as folder:
            seen.add(files.without_scratch_paths(f"Metadata file does not exist at {folder}/ckpt. (also {folder})"))
    assert seen == {f"Metadata file does not exist at {files.SCRATCH_NAME}/ckpt. (also {files.SCRATCH_NAME})"}
    assert files.without_scratch_paths("/home/ada/check-list/ckpt") == "/home/ada/check-list/ckpt"
