"""A scenario's expected answers depend on the instructor's seed (issue 32, 2b): a ``make_manager`` that only
does what the public check file spells (keep the newest k of steps 1 to 4) passes the published scenario and fails
the instructor's (``--grading-seed``, what ``grade --seed N`` passes), while the reference passes both."""

import subprocess
import sys

import pytest
from support import ROOT

SPELLED = '''
from pathlib import Path


class _Manager:
    """Keeps what the public check file spells, whatever it is asked."""

    def __init__(self, directory, max_to_keep):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.kept = [1, 2, 3, 4][-max_to_keep:]

    def save(self, step, args=None):
        if step in self.kept:
            (self.directory / str(step)).mkdir(parents=True, exist_ok=True)
        return True

    def wait_until_finished(self):
        pass

    def all_steps(self):
        return list(self.kept)

    def close(self):
        pass


def make_manager(directory, max_to_keep):
    return _Manager(directory, max_to_keep)
'''


def run_check(*extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "exercises" / "test_checkpointing.py"),
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "-q",
            "--grading",
            "-k",
            "make_manager_keeps_the_newest_steps",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def spelled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spelled")
    (folder / "checkpointing.py").write_text((ROOT / "solutions" / "checkpointing.py").read_text() + SPELLED)
    return folder


def test_the_published_scenario_is_spelled_by_the_public_check_file(spelled):
    assert run_check("--submission", str(spelled)).returncode == 0


@pytest.mark.parametrize("seed", [12345, 7])
def test_under_an_instructor_seed_the_spelled_answers_fail_and_the_reference_passes(spelled, seed):
    faked = run_check("--submission", str(spelled), "--grading-seed", str(seed))
    assert faked.returncode != 0, faked.stdout[-2000:]
    assert "expected" in faked.stdout
    honest = run_check("--solutions", "--grading-seed", str(seed))
    assert honest.returncode == 0, honest.stdout[-3000:]
