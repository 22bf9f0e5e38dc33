import os
import shutil
import subprocess
import sys
from pathlib import Path

import filelock  # torch's own dependency
import pytest

# The kit's own runs stay hermetic: no student compilation cache unless a test asks for one.
os.environ.setdefault("JAX_COURSE_CACHE_DIR", "")

# The course's 8 CPU devices are set by the plugin (pytest_load_initial_conftests) before this file
# imports JAX; tests/system/test_devices.py proves it.
# pytester's in-process runs drop the modules first imported during a run;
# native libraries (jaxlib, torch) must not be imported twice, and the reference
# cache must outlive the inner runs, so these imports happen here, once, before any
# inner run: the one list, autograder.runtime.preload.IN_PROCESS.
from autograder.runtime import preload

preload.import_all(preload.IN_PROCESS)

# One JAX compilation cache for this session's in-process runs, in a fresh folder removed at exit:
# gallery variants compile the same programs again and again (compiling is most of a check's time),
# and every run of the kit's tests still starts from nothing. Set in-process only, so the processes a
# test starts (students' runs, `grade`) keep their own caches as users get them.
import atexit
import tempfile

import jax

from autograder.runtime import compile_cache

_SESSION_CACHE = tempfile.mkdtemp(prefix="kit-tests-jax-cache-")
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)
for _name, _value in compile_cache.settings(Path(_SESSION_CACHE)).items():
    jax.config.update(_name, _value)

pytest_plugins = ["pytester"]


def pytest_collection_modifyitems(config, items):
    """``scripts/test.sh`` runs the kit's tests in two pytest-xdist workers with ``--dist loadfile``: a file's
    tests stay in one worker, so its module fixtures (a graded class, a generated course) are made once. The
    files listed in ``_LONGEST_FIRST`` are handed out first (a long one started last would leave the other
    worker idle at the end); the rest follow in collection order."""
    rank = {stem: i for i, stem in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))


# Scheduling order only (measured with ``--durations``); a file missing here, or listed in another
# order, runs all the same, later.
_LONGEST_FIRST = [
    "test_grade_command",
    "test_gradescope",
    "test_grade_seed",
    "test_preflight",
    "test_trusted_only",
    "test_release",
    "test_nbgrader_course",
    "test_grade_sandbox",
    "test_grade_interrupt",
    "test_grade_students_apart",
    "test_seeded_inputs",
    "test_grade_desk_class",
    "test_classroom50",
    "test_grade_desk",
    "test_class_sharing",
    "test_grade_cluster",
    "test_grade_tamper_evidence",
    "test_retrace_certificates",
    "test_source_certificates",
    "test_values_certificates_of_restores_training_and_prints",
    "test_oldest_versions",
    "test_html_report",
    "test_course_kit",
    "test_trusted_replay",
    "test_github_actions",
    "test_module_training",
]


# The modules of the release the kit's tests build (plain arrays, loaders, train states, functions passed
# as arguments, checkpoints the release cannot record): one build per run (shared by the xdist workers), used by every test of a
# released tree (tests/system/test_release.py, the GitHub Actions and Classroom 50 runs).
RELEASED = ("at_updates", "vmap_linear", "training", "autodiff", "checkpointing")


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Path:
    """A student release of this kit (RELEASED), built now, or the one AUTOGRADER_TEST_RELEASE names
    (``autograder release OUT --only ...``, to rerun the tests quickly)."""
    if os.environ.get("AUTOGRADER_TEST_RELEASE"):
        return Path(os.environ["AUTOGRADER_TEST_RELEASE"]).resolve()
    root = Path(__file__).resolve().parents[1]
    # Under pytest-xdist the workers share one build: the first to get here builds it in the run's own
    # temporary root (``basetemp/..``, fresh for every run), the others wait for it.
    shared = (
        tmp_path_factory.getbasetemp().parent
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.getbasetemp()
    )
    out, built = shared / "release" / "course", shared / "release" / "built"
    with filelock.FileLock(str(shared / "release.lock")):
        if not built.exists():
            _build_release(root, out)
            built.touch()
    return out


def _build_release(root: Path, out: Path) -> None:
    shutil.rmtree(out.parent, ignore_errors=True)
    out.parent.mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "release", str(out), "--course", str(root), "--only", ",".join(RELEASED)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)


@pytest.fixture(scope="session")
def release_env(release, tmp_path_factory) -> Path:
    """The release's own set-up, run once per run of the suite: a copy of the release where
    ``bash scripts/setup.sh`` (what a student runs, and the release's GitHub Actions workflow on a cache
    miss) built ``.venv`` from the system's Python 3.11 and nothing of the kit's venv (tests/platform_envs.py).
    The copy's path; its ``.venv`` is shared (read-only) by the tests of released trees."""
    from platform_envs import base_python, run_setup

    base = base_python()
    if base is None:
        pytest.skip("no system python3.11 to run the release's setup.sh with")
    shared = (
        tmp_path_factory.getbasetemp().parent
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.getbasetemp()
    )
    tree, built = shared / "release-env" / "repo", shared / "release-env" / "built"
    with filelock.FileLock(str(shared / "release-env.lock")):
        if not built.exists():
            shutil.rmtree(tree.parent, ignore_errors=True)
            shutil.copytree(release, tree, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
            _, seconds = run_setup(["bash", "scripts/setup.sh"], tree, base)
            (tree.parent / "seconds").write_text(f"{seconds:.0f}")
            built.touch()
    return tree


@pytest.fixture(scope="session")
def canonical_grades(tmp_path_factory) -> dict:
    """``autograder grade``'s points per function for tests/platform_envs.py's canonical submissions (a
    correct, a wrong, an untouched one), once per run: what every platform path's scores are compared with."""
    import json

    from platform_envs import MODULE, canonical_sources, grade_scores

    shared = (
        tmp_path_factory.getbasetemp().parent
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.getbasetemp()
    )
    cache = shared / "canonical-grades" / "scores.json"
    with filelock.FileLock(str(shared / "canonical-grades.lock")):
        if not cache.exists():
            work = cache.parent / "work"
            folders = {}
            for name, source in canonical_sources().items():
                (work / "in" / name).mkdir(parents=True)
                (work / "in" / name / f"{MODULE}.py").write_text(source, encoding="utf-8")
                folders[name] = work / "in" / name
            cache.write_text(json.dumps(grade_scores(folders, MODULE, work)))
    return json.loads(cache.read_text())


@pytest.fixture(scope="session")
def nbgrader_course_env(tmp_path_factory):
    """An nbgrader course of ``at_updates`` as an instructor makes it (``autograder nbgrader COURSE_DIR
    --module at_updates``, the kit's venv), whose own ``bash setup.sh`` then built ``COURSE_DIR/.venv`` from
    the system's Python 3.11 and nothing of the kit's venv or checkout (tests/platform_envs.py) and proved it,
    once per run of the suite. The course folder, before ``generate_assignment``; ``COURSE_DIR/../seconds``
    holds how long setup.sh took."""
    from platform_envs import base_python, run_setup

    base = base_python()
    if base is None:
        pytest.skip("no system python3.11 to run the nbgrader course's setup.sh with")
    root = Path(__file__).resolve().parents[1]
    shared = (
        tmp_path_factory.getbasetemp().parent
        if os.environ.get("PYTEST_XDIST_WORKER")
        else tmp_path_factory.getbasetemp()
    )
    course, built = shared / "nbgrader-env" / "course", shared / "nbgrader-env" / "built"
    with filelock.FileLock(str(shared / "nbgrader-env.lock")):
        if not built.exists():
            shutil.rmtree(course.parent, ignore_errors=True)
            made = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "nbgrader",
                    str(course),
                    "--kit",
                    str(root),
                    "--module",
                    "at_updates",
                ],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(root)},
            )
            assert made.returncode == 0, made.stdout + made.stderr
            done, seconds = run_setup(["bash", "setup.sh"], course, base)
            (course.parent / "seconds").write_text(f"{seconds:.0f}")
            (course.parent / "setup.log").write_text(done.stdout + done.stderr)
            built.touch()
    yield course
    shutil.rmtree(course / ".venv", ignore_errors=True)  # 2 GB; only tests/system/test_nbgrader_course.py uses it
