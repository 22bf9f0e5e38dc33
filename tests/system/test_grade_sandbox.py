"""``grade`` runs every student's code in a sandbox of their own (issue 31).

A hostile class (``grade_fixtures.build_sandbox_class``) graded with ``--jobs 2 --memory 1024``: students who
look for the reference through ``/proc`` (the grader's and the verifier's working folders and roots), in the
scratch folders next to their own and in the instructor's course; who SIGSTOP the zygote that forked them;
who leave a double-forked process that copies what it can read into a folder of the machine's for 5 minutes;
who leave marks in every shared place; a fork bomb; a 3 GiB allocation; submissions that are links (the
folder ``exercises``, the module file, a hard link, the student's folder itself); who look for the text of their own
module's hidden checks (issue 41, door 4) or echo a line of one; who print more than their disk quota, or without
bound. Each earns nothing for what it
reads, nothing they started outlives the run, the honest students graded with them and after them keep full
marks and their files stay private, and every student gets a row.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_fixtures import FULL, build_sandbox_class, hidden_check_lines
from support import ROOT, TOO_LITTLE_MEMORY_MB
from test_grade_command import copy_course

from autograder.core.course import load_course
from autograder.grading.isolation.scratch import squeeze

MODULE = "at_updates"


def _tree_digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


class Graded:
    def __init__(
        self,
        base: Path,
        proc: subprocess.CompletedProcess,
        expected: dict,
        leak: Path,
        marker: str,
        private: str,
        course_before: dict,
        course_after: dict,
        survivors: list[int],
    ):
        self.base, self.proc, self.expected = base, proc, expected
        self.leak, self.marker, self.private = leak, marker, private
        self.course_before, self.course_after, self.survivors = course_before, course_after, survivors
        self.out = base / "out"
        with open(self.out / "grades.csv", newline="", encoding="utf-8") as f:
            self.rows = {row["student"]: row for row in csv.DictReader(f)}

    def results(self, student: str) -> dict:
        return json.loads((self.out / student / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    base = tmp_path_factory.mktemp("sandbox")
    course = copy_course(base / "course")
    token = secrets.token_hex(6)
    leak = Path("/tmp") / f"autograder-test-leak-{token}"
    marker, private = f"OUTLIVES-{token}", f"PRIVATE-{token}"
    victim, created = (
        Path("/tmp") / f"autograder-test-victim-{token}",
        Path("/tmp") / f"autograder-test-created-{token}",
    )
    victim.write_text(f"VICTIM-{token}\n")
    os.chmod(victim, 0o600)
    expected = build_sandbox_class(
        base / "class",
        MODULE,
        course=course,
        leak=leak,
        marker=marker,
        private=private,
        victim=victim,
        created=created,
    )
    before = _tree_digest(course)
    tmp = base / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    env.pop("CI", None)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(base / "class"),
        "--out",
        str(base / "out"),
        "--only",
        MODULE,
        "--jobs",
        "2",
        "--memory",
        os.environ.get("SANDBOX_TEST_MEMORY", "1024"),
        "--timeout",
        "20",
        "--course",
        str(course),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    survivors = _processes_with(marker)
    for pid in survivors:  # (only where the sandbox failed) the test's own leftovers
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    victim_after = victim.read_text()
    victim.unlink()
    created_exists = created.exists() or created.is_symlink()
    if created_exists:
        created.unlink()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    graded = Graded(base, proc, expected, leak, marker, private, before, _tree_digest(course), survivors)
    graded.victim = (f"VICTIM-{token}", victim_after, created_exists)
    return graded


def test_the_first_line_says_which_isolation_is_in_force(graded):
    first = graded.proc.stdout.splitlines()[0]
    assert first.startswith("autograder grade: isolation: "), first
    run = json.loads((graded.out / ".autograder-run" / "run.json").read_text(encoding="utf-8"))
    assert first.removeprefix("autograder grade: isolation: ") in json.dumps(run)


def test_this_machine_grades_in_bubblewrap_with_cgroups(graded):
    """Where the kit's tests run (root, bubblewrap installed, cgroups mounted), the full sandbox is in force."""
    if os.geteuid() != 0:
        pytest.skip("the full sandbox needs root")
    first = graded.proc.stdout.splitlines()[0]
    assert "bubblewrap sandbox" in first and "an unprivileged uid per student" in first and "cgroup v" in first, first


def test_every_student_gets_a_row(graded):
    assert sorted(graded.rows) == sorted(graded.expected)


@pytest.mark.parametrize(
    "student",
    [
        "a_honest",
        "b_steals_anywhere",
        "c_stops_its_zygote",
        "d_outlives_its_run",
        "e_leaves_marks",
        "f_fork_bomb",
        "ea_rewrites_the_kit",
        "g_allocates_3g",
        "h_honest_after",
        "z_reads_classmates",
        "n_stops_zygote_and_crashes",
        "o_plants_links",
        "p_fills_its_disk",
        "q_fills_its_disk_and_exits",
        "r_reads_other_checks",
        "s_reads_own_hidden_checks",
        "t_reads_hidden_code",
        "u_echoes_hidden_line",
        "v_prints_past_quota",
        "w_prints_without_bound",
        "i_links_exercises",
        "j_links_module",
        "k_hard_links_module",
        "l_links_its_folder",
        "m_links_module_in_exercises",
    ],
)
def test_each_student_earns_what_their_own_code_earns(graded, student):
    results = graded.results(student)
    tests = {t["name"].split(".", 1)[1]: t for t in results["tests"]}
    assert set(tests) == set(graded.expected[student])
    for fn, (expect, pattern) in graded.expected[student].items():
        test = tests[fn]
        assert float(graded.rows[student][f"{MODULE}.{fn}"]) == test["score"]
        if expect == FULL and graded.rows[student].get("needs_review"):
            # flagged by the screen or the audit hook (issue 42: an attacker reaches into its process): the values
            # the trusted side confirmed keep their points, the checks witnessed in its process are withheld
            assert 0 < test["score"] <= test["max_score"], f"{student}.{fn}: {test['output']}"
            assert test["score"] == test["max_score"] or "needs review" in test["output"], test["output"]
        elif expect == FULL:
            assert test["score"] == test["max_score"], f"{student}.{fn}: {test['output']}"
        else:
            assert test["score"] == 0, f"{student}.{fn} should earn nothing: {test}"
            assert re.search(pattern, test["output"]), f"{student}.{fn}: {pattern!r} not in\n{test['output']}"


def test_honest_students_graded_beside_the_attackers_get_byte_identical_results(graded):
    """Issue 41: whatever the attackers of the class do to their own sandboxes (a stopped zygote, links, a full
    disk), the honest students' results are the same, byte for byte (``h_honest_after`` is graded after them)."""
    first, second = (graded.out / s / "results.json" for s in ("a_honest", "h_honest_after"))
    assert first.read_bytes() == second.read_bytes()
    assert {k: v for k, v in graded.rows["a_honest"].items() if k != "student"} == {
        k: v for k, v in graded.rows["h_honest_after"].items() if k != "student"
    }


def test_no_host_file_is_opened_created_or_quoted_for_a_student(graded):
    """Issue 41, door 2: the links a student planted where the grader (root) writes or reads by name led nowhere:
    the root-only file is unchanged and quoted nowhere, the other path was never created."""
    secret, after, created = graded.victim
    assert after == secret + "\n"
    assert not created
    assert secret not in graded.proc.stdout + graded.proc.stderr
    for path in graded.out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_no_hidden_check_reaches_a_students_feedback(graded):
    """Issue 41, door 4, the module's own hidden checks: handed to its grading process in a descriptor read and
    closed before the student's code runs, their text reached no student through any route tried (the check file by
    path, linecache, inspect, a loader, /proc/self/fd: ``s_reads_own_hidden_checks`` says "found through: nothing"),
    a message quoting a line of them is withheld (``u_echoes_hidden_line``), and reading their code objects is
    flagged for review (``t_reads_hidden_code``)."""
    squeezed = [squeeze(line) for line in hidden_check_lines(MODULE)]
    assert squeezed
    for student in graded.expected:
        feedback = squeeze("".join(str(t.get("output", "")) for t in graded.results(student)["tests"]))
        assert not [line for line in squeezed if line in feedback], student
    assert "__code__" in graded.rows["t_reads_hidden_code"]["needs_review"]
    assert "hidden check says" not in (graded.out / "u_echoes_hidden_line" / "results.json").read_text()


def test_the_first_line_says_each_student_has_a_disk_quota(graded):
    if os.geteuid() != 0:
        pytest.skip("a size-limited file system per student needs root")
    assert "a disk quota per student" in graded.proc.stdout.splitlines()[0]


def test_nothing_a_student_started_outlives_the_run(graded):
    assert graded.survivors == [], "a double-forked process of d_outlives_its_run outlived grade"


def test_no_classmate_file_leaks_out_of_a_sandbox(graded):
    leaked = [p for p in graded.leak.rglob("*") if p.is_file()] if graded.leak.exists() else []
    assert not any(graded.private.encode() in p.read_bytes() for p in leaked), leaked
    assert not graded.leak.exists(), "a sandboxed process wrote into the machine's /tmp"


def test_the_instructors_course_is_untouched(graded):
    assert graded.course_after == graded.course_before


def test_no_control_group_or_scratch_folder_is_left(graded):
    """No scratch folder, and no control group of a grader that is gone below the cgroups the graders of this test
    session are started in: a grader removes its own at its end, and a grader killed with SIGKILL (another test's)
    has its janitor remove it seconds later (``tests/system/test_janitor.py``). Another container's cgroups, and a
    running grader's groups, are not this run's to judge."""
    assert not [p for p in (graded.base / "tmp").iterdir() if p.name.startswith("autograder-")]
    deadline = time.monotonic() + 30
    while (left := _groups_of_gone_graders()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left


def _groups_of_gone_graders() -> list[Path]:
    """The ``autograder-<pid>-…`` groups whose grader is gone, in the cgroups this process (and so every grader it
    starts) is in: v1's ``memory`` and ``pids``, or v2's unified hierarchy."""
    left = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        hierarchy = Path("/sys/fs/cgroup")
        if controllers in ("memory", "pids"):
            hierarchy = hierarchy / controllers
        elif controllers != "":
            continue
        own = hierarchy / path.lstrip("/")
        if own.is_dir():
            left += [p for p in own.glob("autograder-*-*") if p.is_dir() and _grader_gone(p)]
    return left


def _grader_gone(path: Path) -> bool:
    pid = path.name.split("-")[1]
    return pid.isdigit() and not Path(f"/proc/{pid}").exists()


def test_grading_the_reference_under_1024_mb_gives_full_marks(graded):
    """Issue 33: ``--memory 1024`` limits resident memory (per process, by its cgroup), not address space."""
    total = sum(fn.points for fn in load_course(ROOT).module(MODULE).functions)
    for student in ("a_honest", "h_honest_after"):
        assert float(graded.rows[student]["score"]) == total


def test_a_memory_limit_below_what_the_grader_itself_needs_stops_before_any_student(tmp_path):
    """Issue 33: a limit the grader's own processes cannot start under is not the students' fault: the run stops
    before the first student (exit non-zero, no grades.csv) and the message names the memory limit."""
    course = copy_course(tmp_path / "course")
    (tmp_path / "class" / "reference").mkdir(parents=True)
    (tmp_path / "class" / "reference" / f"{MODULE}.py").write_bytes((ROOT / "solutions" / f"{MODULE}.py").read_bytes())
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(tmp_path / "class"),
        "--out",
        str(tmp_path / "out"),
        "--only",
        MODULE,
        "--memory",
        str(TOO_LITTLE_MEMORY_MB),
        "--course",
        str(course),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
    if "cgroup v" not in proc.stdout:
        pytest.skip("no control group limits resident memory here")
    assert proc.returncode != 0, proc.stdout + proc.stderr[-2000:]
    assert not (tmp_path / "out" / "grades.csv").exists()
    assert f"memory limit of {TOO_LITTLE_MEMORY_MB} MB" in proc.stderr, proc.stderr[-2000:]


def test_a_class_folder_closed_to_other_users_is_still_read_and_links_still_refused(tmp_path):
    """The instructor's class folder may be 0700 (root's): the unprivileged reader cannot open it, so the grader
    reads it with its own rights through the same descriptors (every student got "could not be read" before)."""
    import os

    from autograder.core.submission import read_submission

    closed = tmp_path / "closed"
    (closed / "alice").mkdir(parents=True)
    os.chmod(closed, 0o700)
    os.chmod(closed / "alice", 0o700)
    (closed / "alice" / "at_updates.py").write_text("x = 1\n")
    os.chmod(closed / "alice" / "at_updates.py", 0o600)
    files, missing = read_submission(closed / "alice", ("at_updates",))
    assert files == {"at_updates": b"x = 1\n"} and not missing
    os.symlink(ROOT / "solutions", closed / "alice" / "exercises")
    files, missing = read_submission(closed / "alice", ("at_updates",))
    assert not files and "symbolic link" in missing["at_updates"]
