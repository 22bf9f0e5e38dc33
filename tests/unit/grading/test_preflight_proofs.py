"""Where the grader keeps its pre-flight proofs (autograder.grading.preflight): only in a folder of its own that
no student's process can have written, read only as a plain file of its own; the key covers the machine seen."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from autograder.grading import preflight

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")


def test_the_default_folder_is_the_graders_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(preflight.REUSE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert preflight.proof_folder() == tmp_path / "autograder" / "preflight"
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "mine"))
    assert preflight.proof_folder() == tmp_path / "mine"


def test_a_folder_of_the_graders_own_is_made_private_and_trusted(tmp_path):
    folder = tmp_path / "a" / "b"
    assert preflight.unsafe_folder(folder, SANDBOXED) is None
    assert folder.is_dir() and folder.stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "a link", "a file", "no sandbox"])
def test_a_folder_a_student_could_have_written_is_never_trusted(tmp_path, how):
    folder = tmp_path / "proofs"
    folder.mkdir()
    isolation = SANDBOXED
    if how == "world-writable":
        folder.chmod(0o777)
    elif how == "group-writable":
        folder.chmod(0o770)
    elif how == "a link":
        folder.rmdir()
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    elif how == "a file":
        folder.rmdir()
        folder.write_text("")
    else:
        isolation = SimpleNamespace(sandbox="none")  # students' processes run as the grader
    assert preflight.unsafe_folder(folder, isolation)


def test_only_a_plain_private_file_reads_as_a_proof(tmp_path):
    proof = tmp_path / "p.json"
    proof.write_text(json.dumps({"seconds": 1.5, "points": 10, "functions": 4, "timeout": 20, "memory_mb": 2048}))
    proof.chmod(0o644)
    assert preflight.read_proof(proof) == preflight.Passed(1.5, 10.0, 4, 20.0, 2048)
    proof.chmod(0o666)
    assert preflight.read_proof(proof) is None, "a file others may write is no proof"
    proof.chmod(0o644)
    link = tmp_path / "l.json"
    link.symlink_to(proof)
    assert preflight.read_proof(link) is None, "never read through a link"
    proof.write_text("{not json")
    assert preflight.read_proof(proof) is None
    proof.write_text(json.dumps({"seconds": 1}))
    assert preflight.read_proof(proof) is None
    proof.write_text(json.dumps({"seconds": 1.5, "points": 10, "functions": 4}))
    assert preflight.read_proof(proof) is None, "a proof that does not say its limits vouches for none"


def limits(timeout, memory_mb):
    return SimpleNamespace(timeout_per_function=timeout, memory_mb=memory_mb)


@pytest.mark.parametrize(
    "proven, asked, vouches",
    [
        ((20, 2048), (20, 2048), True),  # the same limits
        ((15, 2048), (20, 2048), True),  # more time per function
        ((20, 1024), (20, 2048), True),  # more memory
        ((20, 1024), (20, 0), True),  # no memory limit at all
        ((20, 2048), (15, 2048), False),  # less time: the reference might not finish
        ((20, 2048), (20, 1536), False),  # less memory: it might be killed
        ((20, None), (20, 2048), False),  # proven without a memory limit: says nothing of one
        ((20, 1024), (15, 4096), False),  # one looser, one tighter
    ],
)
def test_a_proof_vouches_for_the_same_limits_or_looser_ones(proven, asked, vouches):
    passed = preflight.Passed(1.0, 10.0, 4, *proven)
    assert preflight.vouches_for(passed, limits(*asked)) is vouches


def test_the_proof_kept_under_tighter_limits_is_found_for_looser_ones(tmp_path):
    folder = tmp_path / "proofs"
    folder.mkdir(mode=0o700)
    for timeout, memory in ((20, 2048), (10, 4096)):
        path = preflight.proof_path(folder, "abc", limits(timeout, memory))
        path.write_text(json.dumps(dict(vars(preflight.Passed(1.0, 10.0, 4, timeout, memory)))))
    path = preflight.proof_path(folder, "abcd", limits(5, 512))  # another setting, whose digest starts alike
    path.write_text(json.dumps(dict(vars(preflight.Passed(1.0, 10.0, 4, 5, 512)))))
    assert preflight.find_proof(folder, "abc", limits(30, 3000)).timeout == 20
    assert preflight.find_proof(folder, "abc", limits(12, 8192)).timeout == 10
    assert preflight.find_proof(folder, "abc", limits(12, 2048)) is None
    assert preflight.find_proof(folder, "other", limits(30, 3000)) is None


def test_the_machine_seen_is_part_of_what_a_proof_vouches_for():
    seen = preflight.machine_seen()
    assert seen["cpus"] == len(os.sched_getaffinity(0)) and seen["cpus"] >= 1
    assert isinstance(seen["memory_bytes"], int) and seen["memory_bytes"] > 0
