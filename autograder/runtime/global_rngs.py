"""The process's global random generators (NumPy's, Python's, torch's CPU one), and keeping them as they were.

Used by the purity checks (a function must not draw from them) and by the
stand-in oracle of a grading process (:class:`autograder.core.oracle.OwnAnswers`),
whose calls must leave them as a reference's would: untouched.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

# name -> (get state, set state, seed)
Rng = tuple[Callable[[], Any], Callable[[Any], None], Callable[[int], None]]


def global_rngs() -> dict[str, Rng]:
    """Every global generator in use, by the name a student knows it by (NumPy is imported here, not at
    import: the runtime imports nothing heavy)."""
    import numpy as np

    rngs: dict[str, Rng] = {
        "NumPy's global RNG (np.random)": (np.random.get_state, np.random.set_state, np.random.seed),
        "Python's random module": (random.getstate, random.setstate, random.seed),
    }
    torch = sys.modules.get("torch")  # importing torch just for this would cost seconds
    if torch is not None:
        # The CPU generator only: ``torch.manual_seed`` also queues a seeding of every accelerator backend
        # (recording a formatted stack each time), which made the purity checks several times slower.
        rngs["torch's global RNG (torch.manual_seed)"] = (
            torch.get_rng_state,
            torch.set_rng_state,
            torch.default_generator.manual_seed,
        )
    return rngs


@contextlib.contextmanager
def preserved() -> Iterator[dict[str, Rng]]:
    """The global generators are restored on exit to their state on entry (yields them)."""
    rngs = global_rngs()
    saved = {name: get() for name, (get, _, _) in rngs.items()}
    try:
        yield rngs
    finally:
        for name, (_, set_, _) in rngs.items():
            set_(saved[name])
