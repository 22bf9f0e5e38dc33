"""Fresh copies of argument trees: what a check passes to a function that may donate or write into its arguments.

Used by the purity checks (``autograder.checks.purity.fresh_copy``, the name check files call)
and by the stand-in oracle of a grading process (:class:`autograder.core.oracle.OwnAnswers`).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def fresh_copy(tree: Any) -> Any:
    """``tree`` rebuilt: new containers, every JAX and NumPy array leaf in a new buffer (other leaves shared).

    Give a function a fresh copy when it may donate its arguments
    (``jax.jit(..., donate_argnums=...)``: donation deletes the buffers it is
    given) or write into them: the check still needs the originals, and one
    impure call must not change what the next check sees.
    """
    return jax.tree_util.tree_map(_copy, tree)


def _copy(x: Any) -> Any:
    """A JAX array in a new buffer of the same sharding, put there without compiling a program (``Array.copy``
    compiles one per shape and dtype); a NumPy array copied; anything else as it is."""
    if isinstance(x, jax.Array):
        return jax.device_put(x, may_alias=False)
    if isinstance(x, np.ndarray):
        return x.copy()
    return x
