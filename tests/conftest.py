import os
import subprocess
import sys
from pathlib import Path

import pytest

# The kit's own runs stay hermetic: no student compilation cache unless a test asks for one.
os.environ.setdefault("JAX_COURSE_CACHE_DIR", "")

# The course's 8 CPU devices are set by the plugin (pytest_load_initial_conftests) before this file
# imports JAX; tests/test_devices.py proves it.
# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, and the reference
# cache must outlive the inner runs, so these imports happen here, once, before any
# inner run: the one list, autograder.core.preload.IN_PROCESS.
from autograder.core import preload

preload.import_all(preload.IN_PROCESS)

# One JAX compilation cache for this session's in-process runs, in a fresh folder removed at exit:
# gallery variants compile the same programs again and again (compiling is most of a check's time),
# and every run of the kit's tests still starts from nothing. Set in-process only, so the processes a
# test starts (students' runs, `grade`) keep their own caches as users get them.
import atexit
import shutil
import tempfile

import jax

from autograder.core import compile_cache

_SESSION_CACHE = tempfile.mkdtemp(prefix="kit-tests-jax-cache-")
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)
for _name, _value in compile_cache.settings(Path(_SESSION_CACHE)).items():
    jax.config.update(_name, _value)

pytest_plugins = ["pytester"]


def pytest_collection_modifyitems(config, items):
    """``scripts/test.sh`` runs the kit's tests in two pytest-xdist workers (``--dist loadgroup``): a file's
    tests stay in one worker, so its module fixtures (a graded class, a generated course) are made once,
    and the files that use the session's ``release`` share one worker, so it is built once. Files whose
    tests start whole ``grade`` runs go first (a long one started last would leave the other worker idle)."""
    files: dict[Path, list] = {}
    for item in items:
        files.setdefault(item.path, []).append(item)
    for path, file_items in files.items():
        uses_release = any("release" in item.fixturenames for item in file_items)
        group = "release" if uses_release else path.stem
        for item in file_items:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _LONGEST_FIRST.index(item.path.stem) if item.path.stem in _LONGEST_FIRST else len(_LONGEST_FIRST))


# Scheduling order only (measured with ``--durations``): a file missing here runs after these, in
# collection order; every test runs whatever this says.
_LONGEST_FIRST = ["test_grade_command", "test_release", "test_grade_interrupt", "test_grade_seed", "test_grade_cluster",
                  "test_nbgrader_course", "test_module_training", "test_gradescope", "test_classroom50", "test_github_actions"]


# The modules of the release the kit's tests build (plain arrays, loaders, train states, functions passed
# as arguments, checkpoints the release cannot record): one build per session, shared by every test of a
# released tree (tests/test_release.py, the GitHub Actions and Classroom 50 runs).
RELEASED = ("at_updates", "vmap_linear", "training", "autodiff", "checkpointing")


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Path:
    """A student release of this kit (RELEASED), built now, or the one AUTOGRADER_TEST_RELEASE names
    (``autograder release OUT --only ...``, to rerun the tests quickly)."""
    if os.environ.get("AUTOGRADER_TEST_RELEASE"):
        return Path(os.environ["AUTOGRADER_TEST_RELEASE"]).resolve()
    root = Path(__file__).resolve().parents[1]
    out = tmp_path_factory.mktemp("release") / "course"
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "release", str(out), "--course", str(root), "--only", ",".join(RELEASED)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    return out
