"""What grading processes import before anything else: module *names* only, imported by the caller.

One list, used by the zygote (before it forks; :func:`autograder.grading.isolation.zygote.preload`
also sets the course's devices first), by a grading child or the trusted
verifier started without a zygote (through the same function), and by the kit's own tests
(``tests/conftest.py``). A student's process and the trusted verifier must
start from the same set, so that both generate the same inputs.
``tests/unit/runtime/test_preload.py`` checks that it covers every library the check
modules and ``exercises/test_*.py`` import.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from pathlib import Path

# Third-party libraries every grading process imports first: seconds to import, once per process.
CORE_LIBRARIES = (
    "numpy",
    "jax",
    "jax.numpy",
    "hypothesis",
    "hypothesis.extra.numpy",
    "pytest",
    # What JAX's CPU backend loads the first time a process lowers a call of an exported program (jax.export:
    # every is_jitted and retrace check, and the verifier's replays): its LAPACK kernels come from SciPy, half a
    # second a process, paid once in the zygote instead (importing it starts no JAX backend).
    "scipy.linalg.cython_lapack",
)

# The others, by the top-level name a module's files import: a grader imports them before it forks only where the
# modules it grades import them (:func:`grading_set`): torch alone costs about two seconds, which a grade of
# ``at_updates`` has no use for (a submission that imports one anyway imports it in its own process).
LIBRARIES_BY_IMPORT = {
    "torch": ("torch", "torch.utils.data"),
    "flax": ("flax.linen",),
    "optax": ("optax",),
    "chex": ("chex",),
    "orbax": ("orbax.checkpoint",),
}

# Every library of the checks (the kit's own tests and a grading process that is told no set import them all).
LIBRARIES = CORE_LIBRARIES + tuple(name for names in LIBRARIES_BY_IMPORT.values() for name in names)

# Kit modules a zygote may import before it forks: they must not start JAX's
# backend at import (forking after that deadlocks the child). With KIT_CHECKS below, what a zygote imports of the
# kit; the rest of it (the references, the handed checks) is imported by each child from its own fresh copy.
FORK_SAFE_KIT = (
    "autograder.core.course",
    "autograder.core.failures",
    "autograder.core.submission",
    "autograder.grading.transcript",
    "autograder.grading.untrusted.child",
)

# What ``exercises/test_*.py`` import from the kit (see ``autograder.__init__``): every module of
# ``autograder/checks/``, listed from the folder (nothing imported here), so a new check module
# cannot be forgotten.
CHECK_MODULES = tuple(
    f"autograder.checks.{info.name}"
    for info in sorted(
        pkgutil.iter_modules([str(Path(__file__).resolve().parents[1] / "checks")]), key=lambda i: i.name
    )
)

# What a grading process imports of the kit once its checks run: the check modules and the course's pytest plugin.
# Importing them starts no JAX backend either (tests/system/test_preload_processes.py), so a zygote imports those its
# modules' checks import once, for all of a student's grading processes (each compiled them from its fresh copy).
KIT_CHECKS = CHECK_MODULES + ("autograder.plugin",)


def grading_set(imported: Iterable[str], kit: Iterable[str] = ()) -> tuple[str, ...]:
    """What a grading process imports first when the files of the modules it grades import the top-level names
    ``imported`` and the kit's modules ``kit`` (:meth:`~autograder.grading.isolation.scratch.Snapshot.imports_of`):
    the core libraries, the others those files import, the kit's fork-safe modules and its check modules among
    ``kit`` (a check module of the data loaders imports torch: a grade of ``at_updates`` imports neither). The
    student's processes and the trusted side of one grader get the same set (they generate the same inputs)."""
    wanted, reached = set(imported), set(kit)
    optional = tuple(name for top, names in LIBRARIES_BY_IMPORT.items() if top in wanted for name in names)
    return CORE_LIBRARIES + optional + FORK_SAFE_KIT + tuple(m for m in KIT_CHECKS if m in reached)


# A grading process (zygote, or a child / verifier started directly) told no set: everything.
GRADING = LIBRARIES + FORK_SAFE_KIT + KIT_CHECKS


# A process that runs many pytest sessions in-process (the kit's tests with pytester,
# which drops the modules first imported during a run): native libraries must not be
# imported twice, and the reference cache (autograder.core.oracle) must outlive the runs.
IN_PROCESS = LIBRARIES + ("autograder.pytest_plugin.hooks", "autograder.core.oracle") + CHECK_MODULES


def import_all(names: Iterable[str]) -> None:
    """Import ``names`` in order; a library that is not installed is skipped."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
