"""Autograder for the JAX/Flax/Optax course kit.

The tree shows the architecture, one subpackage per concern:

- :mod:`autograder.core`           the course model (``course.toml``), :class:`Status`, the outcome model,
                                   attribution (check -> function), failures, submissions, the oracle seam
- :mod:`autograder.checks`         what ``exercises/test_*.py`` import: values, purity, tracing, keys,
                                   structure, loaders, strategies, and the shared TrainState scenario
- :mod:`autograder.pytest_plugin`  ``pytest exercises/``: hooks, one session object, profiles, the score table
- :mod:`autograder.grading`        ``autograder grade``: a class, sandboxed, verified by a trusted side
- :mod:`autograder.notebooks`      ``autograder nbgrader``: the nbgrader course and its check cells
- :mod:`autograder.authoring`      ``autograder check-course``: every rule the kit relies on
- :mod:`autograder.cli`            the ``autograder`` command (argparse only)

The public API, what a course's check files may import (``tests/unit/checks/test_public_api.py``
holds every name ``exercises/test_*.py`` import to this list):

- ``autograder.CheckFailure``, ``autograder.Status``
- ``autograder.checks.values``, ``.purity``, ``.tracing``, ``.keys``, ``.structure``, ``.loaders``,
  ``.strategies``, ``.scenario``, ``.calls``, ``.jaxprs``, ``.output``, ``.loops``: each module's public names
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
