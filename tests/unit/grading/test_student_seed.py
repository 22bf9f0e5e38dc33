"""The programs of JAX's own operations the pre-flight's reference compiled, kept beside the proofs and planted in each
student's sandbox (autograder.grading.preflight.seed): only the library's programs are kept (never one named after a
function of the course, nor one that can hold its caller's computation), never through a link, and each planted copy
keeps its seed file's time, so that what a student's process compiles is newer."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import ROOT

from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.preflight.seed import StudentSeed, course_names, program_name
from autograder.runtime import library_programs

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")
DIGEST = "0123456789abcdef" * 4


def entry(name: str) -> str:
    return f"jit_{name}-{DIGEST}-cache"


@pytest.fixture(scope="module")
def library() -> frozenset[str]:
    return library_programs.names()


def allowed(course: dict[str, bytes]) -> frozenset[str]:
    """What ``preflight.seed_names`` computes (its JAX names from a process of their own)."""
    return library_programs.names() - course_names(course)


def test_a_cache_files_name_says_what_it_was_compiled_from():
    assert program_name(entry("add")) == "add"
    assert program_name(entry("scatter-add")) == "scatter-add"
    assert program_name(entry("_lambda_")) == "_lambda_"
    assert program_name(f"jit_add-{DIGEST}-atime") is None
    assert program_name("jit_add-1234-cache") is None
    assert program_name("notes.txt") is None


def test_the_library_names_are_jaxs_operations_and_none_that_carries_its_callers_code(library):
    assert {"add", "dot_general", "broadcast_in_dim", "scatter-add", "_where", "_normal", "multiply", "relu"} <= library
    carried = {"cond", "while", "scan", "call_exported", "custom_jvp_call", "pure_callback", "jit", "scatter", "reduce"}
    assert not library & carried
    assert "_piecewise" not in library  # a jitted library function that takes functions
    assert not library & {"_lambda_", "_fun", "call", "apply", "f", "fn", "step"}


def test_the_course_names_are_every_function_of_its_files():
    names = course_names(Snapshot.take(ROOT).course)
    assert {"set_diagonal", "train_step", "dropout", "numpy_collate", "init_mlp"} <= names


def course_with(tmp_path: Path, source: str) -> dict[str, bytes]:
    """A course's files (a snapshot's) whose reference module is ``source``."""
    return {"solutions/m.py": source.encode(), "exercises/m.py": b"", "course.toml": b"def not_python(): pass"}


def reference_cache(tmp_path: Path, names: list[str]) -> Path:
    cache = tmp_path / "box" / ".jax_cache"
    cache.mkdir(parents=True)
    for i, name in enumerate(names):
        (cache / entry(name)).write_bytes(bytes([i]) * 64)
    return cache


def test_only_the_librarys_programs_are_kept(kept_here, tmp_path, snapshot, options):
    course = course_with(tmp_path, "import jax\n\ndef outer():\n    def add(x):\n        return x\n    return add\n")
    cache = reference_cache(tmp_path, ["dot_general", "_where", "add", "train_step", "_lambda_", "call_exported"])
    (cache / "notes.txt").write_text("not a program")
    (cache / entry("tanh")).symlink_to(cache / entry("dot_general"))
    (cache / entry("negative")).mkdir()
    seed = StudentSeed.of(snapshot, options(), SANDBOXED)
    assert seed.keep(cache, allowed(course)) == 2
    # add is a function of the course's files (nested, even): its program may be the reference's
    assert sorted(os.listdir(seed.folder)) == sorted([entry("dot_general"), entry("_where")])
    assert oct(seed.folder.stat().st_mode & 0o777) == "0o700"
    assert (seed.folder / entry("_where")).read_bytes() == bytes([1]) * 64


def test_a_planted_copy_keeps_its_time_and_a_student_never_writes_the_seed(kept_here, tmp_path, snapshot, options):
    seed = StudentSeed.of(snapshot, options(), SANDBOXED)
    assert seed.keep(reference_cache(tmp_path, ["dot_general", "_where"]), allowed(course_with(tmp_path, ""))) == 2
    for path in seed.folder.iterdir():
        os.utime(path, (1_000_000, 1_000_000))
    box = tmp_path / "student-box" / ".jax_cache"
    assert seed.plant(box) == 2
    assert {p.name: p.stat().st_mtime for p in box.iterdir()} == {
        entry("dot_general"): 1_000_000,
        entry("_where"): 1_000_000,
    }
    (box / entry("dot_general")).write_bytes(b"a student's own")  # their copy, not the seed
    (box / entry("add")).write_bytes(b"a student's program")
    assert sorted(os.listdir(seed.folder)) == sorted([entry("dot_general"), entry("_where")])
    assert (seed.folder / entry("dot_general")).read_bytes() == bytes([0]) * 64


def test_nothing_is_kept_or_planted_where_proofs_cannot_be(tmp_path, snapshot, options):
    unsafe = StudentSeed.of(snapshot, options(), SimpleNamespace(sandbox="none"))
    assert unsafe.folder is None
    assert unsafe.keep(reference_cache(tmp_path, ["add"]), frozenset({"add"})) == 0
    assert unsafe.plant(tmp_path / "box2") == 0
    assert not (tmp_path / "box2").exists()


def test_a_seed_file_that_is_not_the_graders_alone_is_not_planted(kept_here, tmp_path, snapshot, options):
    seed = StudentSeed.of(snapshot, options(), SANDBOXED)
    seed.keep(reference_cache(tmp_path, ["dot_general", "_where"]), frozenset({"dot_general", "_where"}))
    os.chmod(seed.folder / entry("_where"), 0o666)  # anyone may have written it
    box = tmp_path / "student-box" / ".jax_cache"
    assert seed.plant(box) == 1
    assert os.listdir(box) == [entry("dot_general")]
