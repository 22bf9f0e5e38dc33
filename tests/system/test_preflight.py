"""The grader proves its environment before the first student (autograder.grading.preflight), and a crash that
is not the student's is never scored.

Real runs of ``autograder grade`` / ``autograder preflight`` in fresh interpreters: a memory limit JAX cannot
start under, an environment whose JAX cannot be imported, an XLA flag this XLA does not know, and a reference
that does not get full marks. Each stops the run before any student (exit 1, no ``grades.csv``, no student
folder) with a message naming the cause and the crashed process's own last lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from support import ROOT, TOO_LITTLE_MEMORY_MB

from autograder.grading import events, preflight
from autograder.grading.isolation.limits import Fault, RunResult

MODULE = "at_updates"
BOGUS_FLAG = "--xla_flag_no_xla_has_for_the_kits_test=true"


def run_kit(
    args: list[str],
    cwd: Path,
    root: Path = ROOT,
    python: str = sys.executable,
    env: dict | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess:
    # a run of its own, as an instructor's or a student's: not an xdist worker of the kit's suite (a child that
    # finds PYTEST_XDIST_WORKER takes itself for one and leaves its warnings to a controller that is not there)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "JAX_NUM_CPU_DEVICES"}
    environment.update(PYTHONPATH=str(root), **(env or {}))
    return subprocess.run([python, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)


def a_class(tmp_path: Path) -> Path:
    """Two students: one submits the reference of MODULE, the other the stub."""
    submissions = tmp_path / "class"
    for name, source in (("alice", "solutions"), ("bob", "exercises")):
        (submissions / name).mkdir(parents=True)
        shutil.copy(ROOT / source / f"{MODULE}.py", submissions / name / f"{MODULE}.py")
    return submissions


def assert_nothing_graded(proc: subprocess.CompletedProcess, out: Path) -> None:
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert not (out / "grades.csv").exists()
    assert not any((out / name).exists() for name in ("alice", "bob")), list(out.iterdir())
    assert proc.stderr.startswith("autograder grade: "), proc.stderr[-4000:]  # a message, not the grader's traceback
    assert "nothing was graded" in proc.stderr


def test_a_memory_limit_jax_cannot_start_under_stops_the_run_before_any_student(tmp_path):
    """``TOO_LITTLE_MEMORY_MB`` is below what the grader's zygote holds once JAX is imported: the reference
    cannot be graded under it, so no student is (today's grader gave every student 0 and exited 0)."""
    out = tmp_path / "out"
    proc = run_kit(
        [
            "-m",
            "autograder",
            "grade",
            str(a_class(tmp_path)),
            "--out",
            str(out),
            "--only",
            MODULE,
            "--course",
            str(ROOT),
            "--memory",
            str(TOO_LITTLE_MEMORY_MB),
            "--jobs",
            "2",
        ],
        cwd=tmp_path,
    )
    assert_nothing_graded(proc, out)
    assert f"memory limit {TOO_LITTLE_MEMORY_MB} MB" in proc.stderr
    # the cgroup's out-of-memory kill leaves no last lines of its own: the message says what killed it
    assert "killed by it; raise it" in proc.stderr or "the grading process's last lines:" in proc.stderr, proc.stderr


def test_the_reference_gets_full_marks_under_a_1024_mb_limit(tmp_path):
    out = tmp_path / "out"
    proc = run_kit(
        [
            "-m",
            "autograder",
            "grade",
            str(a_class(tmp_path)),
            "--out",
            str(out),
            "--only",
            MODULE,
            "--course",
            str(ROOT),
            "--memory",
            "1024",
            "--jobs",
            "2",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "pre-flight passed" in proc.stderr


def broken_python(tmp_path: Path) -> str:
    """A Python environment whose JAX cannot be imported: a venv that has every package of the kit's own
    environment except a ``jax`` that fails to import (it comes first on the path)."""
    venv = tmp_path / "broken-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "jax").mkdir()
    (site / "jax" / "__init__.py").write_text(
        "raise ImportError('this jax is broken: libjax_broken.so: cannot open shared object file')\n"
    )
    (site / "zz-kit-environment.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
    )
    return str(python)


def test_an_environment_whose_jax_cannot_be_imported_stops_the_run_with_its_error(tmp_path):
    out = tmp_path / "out"
    proc = run_kit(
        [
            "-m",
            "autograder",
            "grade",
            str(a_class(tmp_path)),
            "--out",
            str(out),
            "--only",
            MODULE,
            "--course",
            str(ROOT),
            "--jobs",
            "2",
        ],
        cwd=tmp_path,
        python=broken_python(tmp_path),
    )
    assert_nothing_graded(proc, out)
    assert "libjax_broken.so: cannot open shared object file" in proc.stderr  # the environment's own error


def kit_copy(tmp_path: Path) -> Path:
    """A copy of this kit and course to change (the grader copies its kit from where it is imported)."""
    root = tmp_path / "kit"
    shutil.copytree(ROOT / "autograder", root / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("exercises", "solutions"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
    for name in ("course.toml", "pyproject.toml", "conftest.py"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, root / name)
    return root


def test_an_xla_flag_this_xla_does_not_know_is_dropped_with_one_warning(tmp_path):
    """The kit's quick-compilation flags get one XLA does not know (as a newer XLA drops flags): the student's
    run and the grader's both run (XLA aborts every process on an unknown flag in XLA_FLAGS), each saying once
    which flag it dropped."""
    root = kit_copy(tmp_path)
    devices = root / "autograder" / "runtime" / "devices.py"
    text = devices.read_text()
    listed = '    "--xla_cpu_parallel_codegen_split_count=1",\n)'
    assert listed in text
    devices.write_text(text.replace(listed, listed[:-1] + f'    "{BOGUS_FLAG}",\n)'))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    student = run_kit(
        [
            "-m",
            "pytest",
            f"exercises/test_{MODULE}.py",
            "--solutions",
            "-p",
            "no:cacheprovider",
            "--results-json",
            str(tmp_path / "results.json"),
        ],
        cwd=root,
        root=root,
        env=env,
    )
    assert student.returncode == 0, student.stdout[-3000:] + student.stderr[-3000:]
    assert (student.stdout + student.stderr).count(BOGUS_FLAG) == 1, student.stderr[-3000:]
    grader = run_kit(["-m", "autograder", "preflight", "--only", MODULE], cwd=root, root=root, env=env)
    assert grader.returncode == 0, grader.stdout[-3000:] + grader.stderr[-3000:]
    assert "pre-flight passed" in grader.stdout
    # the answer was kept for this jaxlib: the grader's run read it, and still said it once
    assert (grader.stdout + grader.stderr).count(BOGUS_FLAG) == 1, grader.stderr[-3000:]


def test_a_reference_short_of_full_marks_or_stubs_that_score_stop_the_run(tmp_path):
    """A course whose reference does not pass its own checks here, and whose stub file is not stubs:
    `autograder preflight` exits 1 naming what the reference lost and what the stubs earned."""
    root = kit_copy(tmp_path)
    solution = root / "solutions" / f"{MODULE}.py"
    (root / "exercises" / f"{MODULE}.py").write_text(solution.read_text())  # "stubs" that are the reference
    solution.write_text(
        solution.read_text() + "\n\ndef set_diagonal(x, value):\n    raise ValueError('broken reference')\n"
    )
    proc = run_kit(["-m", "autograder", "preflight", "--only", MODULE], cwd=root, root=root)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "pre-flight passed" not in proc.stdout
    assert f"{MODULE}.set_diagonal: 0/2: " in proc.stderr and "broken reference" in proc.stderr
    assert "stubs were not all judged" in proc.stderr and f"{MODULE}.clamp_at: " in proc.stderr


def test_only_a_fault_before_the_students_import_is_the_graders():
    crashed = RunResult(fault=Fault("crash", "at_updates::test_x", None, "it crashed the Python interpreter (SIGABRT)"))
    assert preflight.fault_before_student(crashed)
    crashed.events = [events.Begin("at_updates::test_x"), events.ImportBegin(MODULE)]
    assert not preflight.fault_before_student(crashed)  # the student's code was being imported: theirs
    assert not preflight.fault_before_student(RunResult())


def test_the_last_lines_keep_xlas_fatal_line_not_the_frame_dump():
    tail = "\n".join(
        [
            "F1126 19:33:26.143339   26297 env.cc:93] Check failed: ret == 0 (11 vs. 0) Thread creation failed.",
            "*** Check failure stack trace: ***",
            *[f"    @     0x7ff0f42b8f{i:02d}  tsl::PThread::PThread()" for i in range(30)],
            "Fatal Python error: Aborted",
            "",
            "Current thread 0x00007f (most recent call first):",
            *[f'  File "/x/y{i}.py", line {i} in f' for i in range(40)],
            "Extension modules: numpy._core, jaxlib.cpu_feature_guard (total: 2)",
        ]
    )
    shown = preflight.last_lines(tail)
    assert "env.cc:93] Check failed" in shown and "Fatal Python error: Aborted" in shown
    assert "File " not in shown and "0x7ff0" not in shown
    # a fatal line further up than the last lines is kept
    assert "Unknown flag" in preflight.last_lines(
        "F0101 00:00:00.0 1 x.cc:1] Unknown flag in XLA_FLAGS: --x\n" + "\n".join(f"line {i}" for i in range(50))
    )


def test_a_pass_is_reused_only_for_the_very_same_setting(tmp_path):
    """A proof is kept by what it proved and reused by the next ``grade`` of the very same course, kit,
    environment and machine under the same limits or looser ones, whatever its jobs (said so), with grades
    byte-identical to a proving run's; ``--preflight`` proves again, and so does a tighter memory limit or a changed
    course. A student's process cannot write a
    proof: mallory's module tries both the instructor's folder and the default one, and nothing lands."""
    kept = tmp_path / "kept"
    submissions = a_class(tmp_path)
    (submissions / "mallory").mkdir()
    forge = (
        "import json, os\n"
        f"for _d in ({str(kept)!r}, os.path.expanduser('~/.cache/autograder/preflight')):\n"
        "    try:\n"
        "        os.makedirs(_d, exist_ok=True)\n"
        "        open(os.path.join(_d, 'forged.json'), 'w').write(json.dumps({'seconds': 0, 'points': 99, 'functions': 1}))\n"
        "        os.makedirs(os.path.join(_d, 'plans', 'forged'), exist_ok=True)\n"
        "        open(os.path.join(_d, 'plans', 'forged', 'plan.json'), 'w').write('[]')\n"
        "        os.makedirs(os.path.join(_d, 'confirmed', 'forged'), exist_ok=True)\n"
        "        open(os.path.join(_d, 'confirmed', 'forged', 'forged.json'), 'w').write('{}')\n"
        "        os.makedirs(os.path.join(_d, 'rehearsal', 'forged'), exist_ok=True)\n"
        "        open(os.path.join(_d, 'rehearsal', 'forged', 'request.json'), 'w').write('{}')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    (submissions / "mallory" / f"{MODULE}.py").write_text(forge + (ROOT / "solutions" / f"{MODULE}.py").read_text())

    def grade(out: str, *extra: str, root: Path = ROOT) -> subprocess.CompletedProcess:
        proc = run_kit(
            [
                "-m",
                "autograder",
                "grade",
                str(submissions),
                "--out",
                str(tmp_path / out),
                "--only",
                MODULE,
                "--course",
                str(root),
                "--jobs",
                "1",
                *extra,
            ],
            cwd=tmp_path,
            root=root,
            env={preflight.REUSE_ENV: str(kept)},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    first = grade("one")
    assert "pre-flight passed in" in first.stderr + first.stdout and preflight.REUSED not in first.stderr + first.stdout
    assert [p.name for p in kept.iterdir()] and not list(kept.glob("forged*")), list(kept.iterdir())
    assert len(list(kept.glob("*.json"))) == 1
    # the trusted side's plan is kept beside the proof (preflight.plans) and listed by no later call
    plans = list((kept / "plans").iterdir())
    assert [p.name for p in plans] == [next(kept.glob("*.json")).name.split(".")[0]], plans
    listed = (plans[0] / "plan.json").stat().st_mtime_ns
    # the same setting under looser limits (more memory, more time) and other jobs: the proof vouches for it
    again = grade("two", "--memory", "3072", "--timeout", "40", "--jobs", "2")
    assert preflight.REUSED in again.stderr + again.stdout, again.stderr[-3000:]
    assert (tmp_path / "two" / "grades.csv").read_bytes() == (tmp_path / "one" / "grades.csv").read_bytes()
    assert not list(kept.glob("forged*")) and len(list(kept.glob("*.json"))) == 1
    assert list((kept / "plans").iterdir()) == plans and (plans[0] / "plan.json").stat().st_mtime_ns == listed
    # the verifier's answers are kept beside them, by the grader alone (preflight.confirmations)
    assert [p.name for p in (kept / "confirmed").iterdir()] == [plans[0].name] and not list(kept.rglob("forged*"))
    # and the pre-flight's request of the reference, which a later call's verifier rehearses (preflight.rehearsal)
    assert [p.name for p in (kept / "rehearsal").iterdir()] == [plans[0].name]
    forced = grade("forced", "--preflight")
    assert "pre-flight passed in" in forced.stderr + forced.stdout
    assert preflight.REUSED not in forced.stderr + forced.stdout, "--preflight proves again"
    other_limit = grade("three", "--memory", "1536")
    assert preflight.REUSED not in other_limit.stderr + other_limit.stdout, "a tighter memory limit proves again"
    changed = tmp_path / "course"
    shutil.copytree(ROOT, changed, ignore=shutil.ignore_patterns(".git", ".venv", "build", "__pycache__", "device"))
    (changed / "exercises" / f"test_{MODULE}.py").write_text(
        (ROOT / "exercises" / f"test_{MODULE}.py").read_text() + "\n# changed\n"
    )
    other_course = grade("four", root=changed)
    assert preflight.REUSED not in other_course.stderr + other_course.stdout, "a changed check file proves itself again"


def test_a_failed_pre_flight_is_never_kept(tmp_path):
    kept = tmp_path / "kept"
    for out in ("one", "two"):
        proc = run_kit(
            [
                "-m",
                "autograder",
                "grade",
                str(a_class(tmp_path / out)),
                "--out",
                str(tmp_path / out / "out"),
                "--only",
                MODULE,
                "--course",
                str(ROOT),
                "--memory",
                str(TOO_LITTLE_MEMORY_MB),
                "--jobs",
                "1",
            ],
            cwd=tmp_path,
            env={preflight.REUSE_ENV: str(kept)},
        )
        assert proc.returncode == 1 and "nothing was graded" in proc.stderr, proc.stderr[-2000:]
    assert not list(kept.glob("*.json"))
