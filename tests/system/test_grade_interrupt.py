"""Stopping ``autograder grade`` (Ctrl-C, SIGTERM, SIGKILL) and ``--resume`` (issue 16).

Real runs of the command on a small fixture class (``--only`` one module): it
is interrupted once some students are done (their ``results.json`` appeared),
then

- SIGINT / SIGTERM: it exits within seconds with status 128 + signal and one
  line saying what was finished; no process of the run is left (every
  process of the run carries the run's private ``TMPDIR`` in its
  environment, and every descendant of the grader was recorded before the
  signal); no scratch folder is left in that ``TMPDIR``; the finished
  students have their ``results.json``, and ``grades.csv``/``summary.md``
  list them marked incomplete;
- SIGKILL: the grader cannot clean up, but no process outlives it (the
  zygotes and grading children die with it); its scratch folders remain
  until the next grader with the same TMPDIR starts, which removes them;

and ``--resume`` finishes the run without regrading the finished students:
every output is byte-identical to an uninterrupted run's. A resume whose
kit, course or options differ is refused.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grade_fixtures import build_class
from support import ROOT
from test_grade_command import MODULE, TIMEOUT, copy_course

STUDENTS = ["correct", "wrong_values", "faults_b", "syntax_error", "hostile_patches", "empty"]
STOP_SECONDS = 20  # generous: the machine may be busy; typical figures are printed


class Run:
    """One ``grade`` command with its own TMPDIR (so its processes and scratch folders can be found)."""

    def __init__(self, base: Path, submissions: Path, course: Path, out: Path, *extra: str, tmp: Path | None = None):
        self.tmp = tmp or base / f"tmp-{out.name}-{len(list(base.iterdir()))}"
        self.tmp.mkdir(exist_ok=True)
        self.out = out
        env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(self.tmp))
        env.pop("CI", None)
        cmd = [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out), "--only", MODULE]
        cmd += ["--timeout", TIMEOUT, "--course", str(course), "--jobs", "2", *extra]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, timeout: float = 1800) -> tuple[str, str]:
        return self.proc.communicate(timeout=timeout)

    def graded(self) -> list[str]:
        return sorted(p.parent.name for p in self.out.glob("*/results.json"))

    def wait_for_results(self, n: int = 1, timeout: float = 900) -> None:
        """Until ``n`` students that needed grading processes are done ("empty" needs none)."""
        deadline = time.monotonic() + timeout
        while len(set(self.graded()) - {"empty"}) < n:
            assert self.proc.poll() is None, f"grade ended before {n} students were done: {self.finish()}"
            assert time.monotonic() < deadline, "no student was graded in time"
            time.sleep(0.05)

    def processes(self) -> set[int]:
        """Every live process whose environment carries this run's TMPDIR (the grader and all it started)."""
        marker = f"TMPDIR={self.tmp}".encode() + b"\0"
        found = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if marker in (entry / "environ").read_bytes() and _state(int(entry.name)) != "Z":
                    found.add(int(entry.name))
            except OSError:
                continue
        return found

    def descendants(self) -> set[int]:
        """The grader's process tree, by parent pid (children in new sessions included)."""
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        tree, frontier = set(), {self.proc.pid}
        while frontier:
            frontier = {pid for pid, parent in parents.items() if parent in frontier} - tree
            tree |= frontier
        return tree

    def scratch_folders(self) -> list[str]:
        return sorted(p.name for p in self.tmp.iterdir() if p.name.startswith("autograder-"))

    def leftovers(self) -> list[str]:
        """Anything in the run's TMPDIR: the trusted side's own temporary files (pytest's ``pytest-of-<user>`` with
        the reference's checkpoints) included (issue 41)."""
        return sorted(p.name for p in self.tmp.iterdir())


def _state(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() or ["?"])[0]
    except OSError:
        return "gone"


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if _state(pid) not in ("gone", "Z")}


def _outputs(out: Path) -> dict[str, bytes]:
    files = ["grades.csv", "summary.md", *(f"{s}/results.json" for s in STUDENTS)]
    return {name: (out / name).read_bytes() for name in files}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("interrupt")
    course = copy_course(base / "course")
    full = base / "class-full"
    build_class(full, MODULE, out=base / "unused", course=course)
    submissions = base / "class"
    submissions.mkdir()
    for student in STUDENTS:
        (full / student).rename(submissions / student)
    reference = Run(base, submissions, course, base / "uninterrupted")
    _stdout, stderr = reference.finish()
    assert reference.proc.returncode == 0, stderr[-3000:]
    return base, submissions, course, _outputs(base / "uninterrupted")


def _resume_and_compare(
    base: Path,
    submissions: Path,
    course: Path,
    out: Path,
    expected: dict[str, bytes],
    tmp: Path | None = None,
) -> None:
    finished = {p.stem: p.stat().st_mtime_ns for p in (out / ".autograder-run" / "students").glob("*.json")}
    assert finished, "the interrupted run recorded no finished student"
    run = Run(base, submissions, course, out, "--resume", tmp=tmp)
    stdout, stderr = run.finish()
    assert run.proc.returncode == 0, stderr[-3000:]
    assert f"{len(finished)} already graded" in stdout, stdout
    # Finished students were not graded again (their records untouched) ...
    for student, mtime in finished.items():
        assert (out / ".autograder-run" / "students" / f"{student}.json").stat().st_mtime_ns == mtime, student
    # ... and the outputs are the uninterrupted run's, byte for byte.
    got = _outputs(out)
    for name in expected:
        assert got[name] == expected[name], name
    assert not run.leftovers() and not _alive(run.processes()), run.leftovers()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_grading_cleans_up_keeps_the_finished_and_resume_completes_it(setup, sig):
    base, submissions, course, expected = setup
    out = base / f"out-{sig.name}"
    run = Run(base, submissions, course, out)
    run.wait_for_results(1)
    started = time.monotonic()
    tree = run.descendants()
    run.proc.send_signal(sig)
    stdout, stderr = run.finish(timeout=120)
    stopped = time.monotonic() - started
    print(f"\n{sig.name}: stopped in {stopped:.2f} s ({len(tree)} processes were running)")
    assert run.proc.returncode == 128 + sig, (run.proc.returncode, stderr[-3000:])
    assert stopped < STOP_SECONDS, stopped
    assert len(tree) >= 2, f"the grader was not running its processes: {tree}"
    assert not _alive(tree), f"left running: {_alive(tree)}"
    assert not _alive(run.processes())
    assert not run.leftovers(), run.leftovers()
    lines = [line for line in stderr.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and f"interrupted ({sig.name})" in lines[0], stderr[-3000:]
    graded = run.graded()
    assert 1 <= len(graded) < len(STUDENTS), graded
    assert f"{len(graded)} of {len(STUDENTS)} students graded" in lines[0]
    rows = (out / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == graded, "no note row a spreadsheet would read as data"
    assert (out / "INCOMPLETE.txt").read_text(encoding="utf-8").startswith("INCOMPLETE: grading was interrupted after")
    assert (out / "summary.md").read_text(encoding="utf-8").startswith("> **INCOMPLETE:**")
    for student in graded:  # the finished students' results are already the final ones
        assert (out / student / "results.json").read_bytes() == expected[f"{student}/results.json"]

    _resume_and_compare(base, submissions, course, out, expected)


def test_sigkill_leaves_no_process_and_resume_completes_it(setup):
    base, submissions, course, expected = setup
    out = base / "out-SIGKILL"
    run = Run(base, submissions, course, out)
    run.wait_for_results(1)
    tree = run.descendants() | run.processes()
    made = run.scratch_folders()
    assert any((run.tmp / name / "course" / "solutions").is_dir() for name in made), made
    groups = _groups_of(run.proc.pid)
    run.proc.kill()
    run.finish(timeout=60)
    deadline = time.monotonic() + 30
    while (_alive(tree) or _alive(run.processes()) or run.leftovers() or _groups_of(run.proc.pid)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert not _alive(tree), f"outlived the grader: {_alive(tree)}"
    assert not _alive(run.processes())
    # The grader could not clean up (SIGKILL cannot be handled); its janitor did, before any other grader started:
    # no scratch folder (copies of the course with its references among them), no control group.
    assert not run.leftovers(), run.leftovers()
    assert not _groups_of(run.proc.pid), groups
    _resume_and_compare(base, submissions, course, out, expected, tmp=run.tmp)


def _groups_of(pid: int) -> list[Path]:
    """The control groups of the grader ``pid`` (``autograder-<pid>-…``), in every hierarchy of this machine."""
    return [p for p in Path("/sys/fs/cgroup").rglob(f"autograder-{pid}-*") if p.is_dir()]


def test_resume_is_refused_when_the_options_differ_or_there_is_nothing_to_resume(setup):
    base, submissions, course, _expected = setup
    out = base / "uninterrupted"
    run = Run(base, submissions, course, out, "--resume", "--timeout", "99")
    _stdout, stderr = run.finish()
    assert run.proc.returncode != 0 and "cannot resume" in stderr and "options" in stderr, stderr[-2000:]
    run = Run(base, submissions, course, base / "never-graded", "--resume")
    _stdout, stderr = run.finish()
    assert run.proc.returncode != 0 and "no interrupted run to resume" in stderr, stderr[-2000:]
