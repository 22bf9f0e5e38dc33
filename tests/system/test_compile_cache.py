"""The student's persistent compilation cache: on by default in the student profile, off for grading.

A re-run after an edit must not compile the whole module again; grading processes never
share compiled programs through the student's folder.
"""

import os
import subprocess
import sys

from support import ROOT


def run_checks(cache_dir, *flags):
    env = {**os.environ, "JAX_COURSE_CACHE_DIR": str(cache_dir)}
    env.pop("CI", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "exercises/test_at_updates.py",
            "--solutions",
            "-q",
            "-p",
            "no:cacheprovider",
            *flags,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_set_diagonal_student_runs_fill_the_cache_and_rerun_from_it(tmp_path):
    cache = tmp_path / "cache"
    first = run_checks(cache, "-k", "set_diagonal")
    assert first.returncode == 0, first.stdout[-3000:]
    entries = set(os.listdir(cache))
    assert entries, "the first student run wrote no compiled program to the cache"
    again = run_checks(cache, "-k", "set_diagonal")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "2/2" in again.stdout  # same verdict from cached programs


def test_set_diagonal_grading_profile_leaves_the_student_cache_alone(tmp_path):
    cache = tmp_path / "cache"
    done = run_checks(cache, "--grading", "-k", "set_diagonal")
    assert done.returncode == 0, done.stdout[-3000:]
    assert not cache.exists() or not os.listdir(cache)
