"""Autograder for the JAX/Flax/Optax course kit.

The tree shows the architecture, one subpackage per concern:

- :mod:`autograder.core`           the course model (``course.toml``), failures, submissions, the oracle seam
- :mod:`autograder.checks`         what ``exercises/test_*.py`` import: values, purity, tracing, keys,
                                   structure, loaders, strategies
- :mod:`autograder.pytest_plugin`  ``pytest exercises/``: hooks, profiles, the score table
- :mod:`autograder.grading`        ``autograder grade``: a class, sandboxed, verified by a trusted side
- :mod:`autograder.notebooks`      ``autograder nbgrader``: the nbgrader course and its check cells
- :mod:`autograder.cli`            the ``autograder`` command (argparse only)

Public API for check files: :class:`CheckFailure` here, and the modules of :mod:`autograder.checks`.
Importing this package does no work (no JAX, no pytest).
"""

from autograder.core.failures import CheckFailure

__all__ = ["CheckFailure"]
