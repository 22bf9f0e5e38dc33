"""Issue 41's doors, each in process: what a student's sandbox folder is made of (the grader's folder, the student's
folders in it, a root-only sibling for what the grader opens by name, a size limit), the course a grading process
sees, the grader quoting a process's stderr, and the seed a run keeps. The whole class: ``test_grade_sandbox.py``."""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest
from support import ROOT

from autograder.grading.isolation.bubblewrap import Box, Isolation
from autograder.grading.isolation.janitor import detach_mounts
from autograder.grading.isolation.limits import next_uid
from autograder.grading.isolation.scratch import (
    WITHHELD,
    Snapshot,
    limit_size,
    no_space,
    remove_folder,
    withhold_hidden,
)
from autograder.grading.outputs import run_state
from autograder.grading.preflight import last_lines, no_terminal_control

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a uid per student and mounts need root")


@root_only
def test_a_box_folder_is_the_graders_and_only_what_it_hands_over_is_the_students(tmp_path):
    folder, private = tmp_path / "box", tmp_path / "private"
    folder.mkdir()
    private.mkdir(mode=0o700)
    uid = next_uid()
    box = Box(Isolation("user", None, True, quota=True), folder, None, None, uid, uid, 512, private, disk_mb=8)
    try:
        top = folder.lstat()
        assert (top.st_uid, stat.S_IMODE(top.st_mode)) == (0, 0o755)  # no name in it can be replaced by the student
        for given in ("home", "tmp", ".shm"):
            info = (folder / given).lstat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (uid, 0o700), given
        assert box.home == folder / "home"
        assert private.lstat().st_uid == 0 and stat.S_IMODE(private.lstat().st_mode) == 0o700
        # a tree laid out by the grader is handed over whole, links included, none followed
        run = folder / "run-1"
        (run / "work" / "deep").mkdir(parents=True)
        (run / "work" / "deep" / "f.txt").write_text("x")
        outside = tmp_path / "outside.txt"
        outside.write_text("root's")
        (run / "work" / "link").symlink_to(outside)
        box.give(run / "work")
        assert all(p.lstat().st_uid == uid for p in (run / "work").rglob("*"))
        assert outside.stat().st_uid == 0 and run.lstat().st_uid == 0
        # the size limit: a write past it fails with ENOSPC, and nothing of it reaches the machine's disk
        assert box.quota_mb == 8
        with pytest.raises(OSError) as err, open(folder / "home" / "filler", "wb") as f:
            for _ in range(64):
                f.write(b"x" * 2**20)
                f.flush()
        assert err.value.errno == errno.ENOSPC and no_space(err.value)
    finally:
        box.close()
        remove_folder(folder)
    assert not folder.exists()


@root_only
def test_a_size_limited_folder_is_detached_before_it_is_removed(tmp_path):
    folder = tmp_path / "limited"
    folder.mkdir()
    assert limit_size(folder, 1)
    assert os.path.ismount(folder)
    remove_folder(folder)
    assert not folder.exists()
    detach_mounts([folder])  # nothing mounted: nothing done


def test_a_grading_process_sees_its_own_modules_checks_only(tmp_path):
    snapshot = Snapshot.take(ROOT)
    course = snapshot.module_course(tmp_path, "at_updates")
    files = sorted(p.relative_to(course).as_posix() for p in course.rglob("*") if p.is_file())
    assert "exercises/test_at_updates.py" in files and "course.toml" in files
    assert not [f for f in files if f.startswith("solutions/")]
    assert [f for f in files if "test_" in f] == ["exercises/test_at_updates.py"]
    # the shared folder every sandbox shows holds the kit, and no check at all
    kit_only = tmp_path / "shared"
    snapshot.materialize(kit_only, course=False)
    assert not (kit_only / "course").exists() and (kit_only / "kit" / "autograder").is_dir()


def test_student_text_quoted_by_the_grader_carries_no_terminal_control():
    hostile = "boom\x1b[2J\x1b[1;1H\x1b]0;PWNED\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\x08\x07\x9b31m done\n"
    clean = no_terminal_control(hostile)
    assert "\x1b" not in clean and not any(ord(c) < 32 and c not in "\n\t" for c in clean)
    assert "boom" in clean and "link" in clean and "done" in clean
    quoted = last_lines("first line\n" + hostile)
    assert "\x1b" not in quoted and "PWNED" not in quoted


def test_the_seed_a_run_drew_from_is_read_back_for_resume_and_student(tmp_path):
    assert run_state.recorded_seed(tmp_path) is None
    state = tmp_path / run_state.STATE
    state.mkdir()
    fingerprint = {"options": json.dumps({"seed": 1234, "modules": ["at_updates"]})}
    (state / "run.json").write_text(json.dumps({"format": run_state.FORMAT, "fingerprint": fingerprint}))
    assert run_state.recorded_seed(tmp_path) == 1234
    (state / "run.json").write_text(json.dumps({"fingerprint": {"options": json.dumps({"seed": "1"})}}))
    assert run_state.recorded_seed(tmp_path) is None


def test_grade_without_a_seed_draws_the_instructor_seed_of_the_references():
    """As the Gradescope bundle does (``instructor_seed`` of the references): never None, never the published."""
    from autograder.grading.api import default_seed
    from autograder.shipped.references import instructor_seed

    snapshot = Snapshot.take(ROOT)
    references = {p.name: p.read_bytes() for p in sorted((ROOT / "solutions").glob("*.py"))}
    assert default_seed(snapshot) == instructor_seed(references)
    assert isinstance(default_seed(snapshot), int)
    changed = Snapshot(dict(snapshot.course, **{"solutions/at_updates.py": b"# another reference\n"}), snapshot.kit)
    assert default_seed(changed) != default_seed(snapshot)


CHECKS = b'''"""Checks of m."""


def test_f_values(student):
    assert student.f(1) == 2


def test_f_is_secret(student):
    """SECRET-DOCSTRING of a hidden check."""
    assert student.f(2) == 3, "a message of the hidden check"
    SECRET_NAME_IN_THE_BODY = student.f(3)
    return SECRET_NAME_IN_THE_BODY
'''
COURSE_TOML = b"""title = "t"

[[modules]]
name = "m"
topic = "t"

  [[modules.functions]]
  name = "f"
  points = 1
  hidden = ["test_f_is_secret"]
"""


def test_a_modules_checks_are_handed_over_compiled_and_only_a_placeholder_is_on_disk(tmp_path):
    """Issue 41, door 4: the check file at its path in the sandbox holds none of the checks' text; what is handed over
    is their code, compiled with that path (so pytest's locations stay), with a hidden check's docstring dropped."""
    import marshal

    snapshot = Snapshot({"course.toml": COURSE_TOML, "exercises/test_m.py": CHECKS, "exercises/m.py": b""}, {})
    course = snapshot.module_course(tmp_path, "m")
    handed = snapshot.hand_checks(course, "m")
    assert handed is not None
    on_disk = (course / "exercises" / "test_m.py").read_bytes()
    assert b"SECRET" not in on_disk and b"def " not in on_disk and b"handed" in on_disk
    code = marshal.loads(handed)
    assert code.co_filename == str(course / "exercises" / "test_m.py")
    functions = {c.co_name: c for c in code.co_consts if hasattr(c, "co_name")}
    assert set(functions) == {"test_f_values", "test_f_is_secret"}
    assert "SECRET_NAME_IN_THE_BODY" in functions["test_f_is_secret"].co_varnames  # the code itself: the residual
    assert not [c for c in functions["test_f_is_secret"].co_consts if isinstance(c, str) and "SECRET-DOC" in c]
    namespace: dict = {}
    exec(code, namespace)
    assert namespace["test_f_is_secret"].__doc__ is None and namespace["test_f_values"].__name__ == "test_f_values"


def test_a_message_quoting_a_hidden_checks_line_is_withheld_however_it_is_spaced():
    snapshot = Snapshot({"course.toml": COURSE_TOML, "exercises/test_m.py": CHECKS}, {})
    hidden = snapshot.hidden_lines("m")
    assert 'assertstudent.f(2)==3,"amessageofthehiddencheck"' in hidden
    assert "assertstudent.f(1)==2" not in hidden  # a public check's line: not withheld
    quoted = 'look: assert  student.f(2)\u200b == 3, "a message of the hidden\x07 check"'
    assert withhold_hidden(quoted, hidden) == WITHHELD
    honest = "m.f raised AssertionError: a message of the hidden check"
    assert withhold_hidden(honest, hidden) == honest


def test_the_handed_descriptor_is_read_and_closed_before_pytest_and_named_by_no_path():
    import marshal

    from autograder.grading.isolation.supervise import handed_descriptor
    from autograder.grading.untrusted.handed import HandedChecks
    from autograder.grading.wire import ChildRequest

    code = compile("X = 1\n", "/x/exercises/test_m.py", "exec")
    fd = handed_descriptor(marshal.dumps(code))
    link = os.readlink(f"/proc/self/fd/{fd}")
    assert link.startswith("/memfd:") and link.endswith("(deleted)"), link
    request = ChildRequest("/x", "/s", ["m"], [], "/k", handed_checks="/x/exercises/test_m.py", checks_fd=fd)
    handed = HandedChecks.read(request)
    assert handed is not None and handed.path == "/x/exercises/test_m.py"
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    namespace: dict = {}
    exec(handed.take(), namespace)
    assert namespace["X"] == 1 and handed.take() is None  # taken once


def test_what_a_check_prints_is_discarded_and_bounded(monkeypatch):
    """Issue 41: what a check prints is never kept (pytest's capture kept it in a file inside the student's disk quota,
    then in memory); past the limit, while a check runs, ``print`` raises; stderr's first characters go through."""
    import io

    from autograder.grading.untrusted import output

    monkeypatch.setattr(output, "OUTPUT_LIMIT", 100)
    counter = output.OutputCounter()
    kept = io.StringIO()
    out, err = output.Output(counter), output.Output(counter, kept, keep=10, fileno=2)
    for _ in range(50):
        print("x" * 40, file=out)  # outside a check's phases: never refused
    counter.pytest_runtest_logstart("n", None)
    counter.active = True
    print("0123456789abc", file=err)
    assert kept.getvalue() == "0123456789" and err.fileno() == 2
    assert out.buffer.write(b"z" * 30) == 30
    with pytest.raises(output.OutputLimit, match="printed more than"):
        print("y" * 200, file=out)
