"""Autograder for the JAX/Flax/Optax course kit.

The tree shows the architecture, one subpackage per concern (lowest layer first: ``tests/unit/test_layers.py``;
``tests/unit/test_maps.py`` holds this map to the tree):

- :mod:`autograder.runtime`        the process plumbing, knowing no course: JAX's CPU devices, lowering, the
                                   compilation cache, the preload list, process-wide stores, the monitoring listener
- :mod:`autograder.core`           the course model (``course.toml``), :class:`Status`, the outcome model,
                                   attribution (check -> function), failures, submissions, the oracle seam,
                                   library versions, a student's progress and hints
- :mod:`autograder.checks`         what ``exercises/test_*.py`` import: values, purity, tracing, keys,
                                   structure, loaders, strategies, and the shared TrainState scenario
- :mod:`autograder.recording`      the recorded oracle: the reference's answers as plain data, replayed in a release
- :mod:`autograder.pytest_plugin`  ``pytest exercises/``: hooks, one session object, profiles, the score table
- :mod:`autograder.student`        ``autograder watch``, ``status``, ``hint``, ``reset``: the student's loop
- :mod:`autograder.shipped`        what every shipped environment needs: the kit's wheel, the pinned stack, the
                                   course cut to some modules, the references and the instructor seed
- :mod:`autograder.grading`        ``autograder grade`` and ``preflight``: a class, sandboxed, verified by a trusted side
- :mod:`autograder.authoring`      ``autograder check-course``: every rule the kit relies on; ``autograder mutate``
- :mod:`autograder.platforms`      ``autograder gradescope``, ``classroom50``, ``actions-report``, ``actions-preflight``
- :mod:`autograder.notebooks`      ``autograder nbgrader``: the nbgrader course and its check cells
- :mod:`autograder.release`        ``autograder release``: the student repository, with a recorded oracle, no solutions
- :mod:`autograder.cli`            the ``autograder`` command (argparse only, one module per group of verbs;
                                   ``__main__``: ``python -m autograder``)
- :mod:`autograder.plugin`, :mod:`autograder.notebook`   thin entry points (pytest11; imported by generated notebooks)

The public API, what a course's check files may import (``tests/unit/checks/test_public_api.py``
holds every name ``exercises/test_*.py`` import to this list):

- ``autograder.CheckFailure``, ``autograder.Status``
- ``autograder.checks.values``, ``.purity``, ``.tracing``, ``.keys``, ``.structure``, ``.loaders``,
  ``.strategies``, ``.scenario``, ``.calls``, ``.jaxprs``, ``.output``, ``.loops``, ``.programs``: each module's public names
- ``autograder.core.failures.CheckFailure``, ``autograder.core.oracle.sibling``,
  ``.transformed`` and ``.continue_from``, ``autograder.runtime.devices.COURSE_CPU_DEVICES`` and ``.wrong_device_count_advice``

Everything else is internal and may move. Importing this package does no work (no JAX, no pytest).
"""

from autograder.core.failures import CheckFailure
from autograder.core.status import Status

__all__ = ["CheckFailure", "Status", "PUBLIC_MODULES", "PUBLIC_NAMES"]

# Modules whose public names check files may use: every module of autograder.checks (listed by name,
# nothing imported).
from autograder.runtime.preload import CHECK_MODULES as PUBLIC_MODULES  # noqa: E402

# Single names check files may import from internal modules.
PUBLIC_NAMES = {
    "autograder": ("CheckFailure", "Status"),
    "autograder.checks": tuple(m.rsplit(".", 1)[1] for m in PUBLIC_MODULES),
    "autograder.core.failures": ("CheckFailure",),
    "autograder.core.oracle": ("sibling", "transformed", "continue_from"),
    "autograder.runtime.devices": ("COURSE_CPU_DEVICES", "wrong_device_count_advice"),
}
