"""The trusted side's memory of the reference's answers, kept for a whole class.

Every student of a class is judged on the same inputs (the published seed or
the instructor's), so the long-lived verifier
(:mod:`autograder.grading.trusted_server`) asks the reference the same
questions student after student. While a replayed check runs, each of the
module's contracted functions answers a call it has answered before (same
function, same arguments by their digest) from memory instead of computing it
again.

Only answers nobody can change are kept: pytrees whose leaves are JAX arrays
or scalars; each caller gets its own containers around the same immutable
leaves. Anything else (a loader, a tracer inside ``jax.jit``, NumPy arrays,
arguments that are not data) is computed afresh, as is a call that raised.
This process never runs student code, so nothing a student sends reaches
another student through it: the keys are the trusted side's own inputs.
"""

from __future__ import annotations

import contextlib
import functools
from types import ModuleType
from typing import Any, Iterator

# Enough for every correctness check of the course, many times over; a class that somehow
# asks for more simply stops being remembered.
MAX_ANSWERS = 200_000


class ReferenceMemory:
    """Answers of the reference's functions by the digest of their arguments, for one process."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.hits = 0

    @contextlib.contextmanager
    def answering(self, reference: ModuleType, names: list[str], statics) -> Iterator[None]:
        """While the block runs, ``reference``'s functions ``names`` answer repeated calls from memory."""
        saved = {name: vars(reference)[name] for name in names if callable(vars(reference).get(name))}
        for name, function in saved.items():
            setattr(reference, name, self._remembering(f"{reference.__name__}.{name}", function, statics))
        try:
            yield
        finally:
            for name, function in saved.items():
                setattr(reference, name, function)

    def _remembering(self, label: str, function, statics):
        from autograder.grading import transcript

        @functools.wraps(function)
        def remembered(*args, **kwargs):
            try:
                key = transcript.digest(label, args, kwargs, statics)
            except Exception:  # noqa: BLE001 - arguments that are not data: computed, not remembered
                key = None
            if key is not None and key in self.answers:
                self.hits += 1
                return _fresh_containers(self.answers[key])
            out = function(*args, **kwargs)
            if key is not None and len(self.answers) < MAX_ANSWERS and _immutable(out):
                self.answers[key] = out
                return _fresh_containers(out)
            return out

        return remembered


def _immutable(value: Any) -> bool:
    """Whether ``value`` is a pytree of concrete JAX arrays and scalars (no tracer, no NumPy array)."""
    import jax
    import numpy as np

    leaves, _ = jax.tree_util.tree_flatten(value)
    return all(
        (isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer))
        or isinstance(leaf, (bool, int, float, complex, str, np.generic))
        for leaf in leaves
    )


def _fresh_containers(value: Any) -> Any:
    import jax

    return jax.tree_util.tree_map(lambda leaf: leaf, value)
