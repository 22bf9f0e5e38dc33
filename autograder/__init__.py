"""Autograder for the JAX/Flax/Optax course kit.

One module per kind of check, each usable on its own:

- :mod:`autograder.values`     pytrees equal to the reference (structure, shape, dtype, values)
- :mod:`autograder.purity`     arguments untouched, deterministic, no hidden RNG/global state, no leaks
- :mod:`autograder.tracing`    jitted functions that do not trace or compile again once warm
- :mod:`autograder.keys`       PRNG key discipline (no reuse, right kind of key)
- :mod:`autograder.structure`  jit-compatibility, call structure (vmap spies), jaxpr facts
- :mod:`autograder.strategies` hypothesis strategies with few distinct shapes

and the plumbing around them: :mod:`autograder.course` (``course.toml``),
:mod:`autograder.oracle` (where expected values come from),
:mod:`autograder.submission` (loading a student's module),
:mod:`autograder.report` (student-facing messages and the score table),
:mod:`autograder.plugin` (pytest) and :mod:`autograder.cli`.
"""

from autograder.failures import CheckFailure

__all__ = ["CheckFailure"]
