"""What the trusted side computes once per class: the reference's results, shared by every student it verifies.

The long-lived verifier (:func:`autograder.grading.trusted.verifier.serve`) re-runs the correctness checks a
student claims to pass with the real reference on the inputs it generates itself (hypothesis, derandomized,
seeded). Those inputs, and so the reference's results, are the same for every student of the class: only the
replayed answers of the student differ. :class:`ClassResults` keeps each result the reference returned, keyed by
(seed, check, function, digest of the arguments), in the server's own memory, for the life of the server: the
second student's check asks the reference nothing it was asked before. And a check it replays (decided from values
or from a program) claimed on a transcript it judged before, byte for byte, gets the verdict it reached then
(:meth:`ClassResults.known_verdicts`): the same answers replayed on the same inputs. A check decided from the module's
source too (the retrace checks) is keyed by the source as well, since its analysis may fail a source whose transcript
is the reference's own.

Safe because the cache lives only in a trusted process that never runs student code and only ever holds the
reference's own results: a key is a digest of plain data the verifier generated (arrays, scalars, strings and
their containers; no function, object or tracer, so a student's replayed function passed as an argument is never
a key), and a result is kept only when every leaf is immutable (a JAX array, a NumPy scalar, a Python number or
string; a NumPy array is kept as a copy and handed out as a fresh copy each time); the containers are rebuilt
for every caller. A call that is not data (traced, an object) goes to the reference every time.

``grade`` turns it off with ``AUTOGRADER_CLASS_SHARING=0`` (for measuring, and for the test that grades a class
both ways and finds the same bytes), and with it the trusted side's compilation cache kept between calls
(:func:`autograder.grading.preflight.kept_compile_cache`): the trusted side then shares nothing beyond one student.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from autograder.core.oracle import Reference

SWITCH = "AUTOGRADER_CLASS_SHARING"
MAX_BYTES = 512 * 2**20  # the results kept, at most (a class's whole course holds a few MB)
REPLAYED = ("values", "program")  # autograder.pytest_plugin.decided: VALUES, PROGRAM
_GONE = object()  # a kept result whose JAX array was deleted since (donated to a jitted call)


def sharing_enabled(environ: dict[str, str] | None = None) -> bool:
    """Whether ``grade`` shares the reference's results between the students of a class (on unless ``=0``)."""
    return (os.environ if environ is None else environ).get(SWITCH, "1") != "0"


class ClassResults:
    """The reference's results for one class (one seed), kept by one trusted process across students."""

    def __init__(self, seed: int | None, max_bytes: int = MAX_BYTES) -> None:
        self.seed = seed
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._results: dict[tuple, tuple[Any, list]] = {}  # key -> (treedef, leaves)
        # the check being replayed (set by the verifier before it runs), read by every reference function's stand-in
        self.check = ""
        self.statics: Any = None
        # one stand-in per reference function for the server's life: a check that jits what it is given
        # (``jitted(reference.f)``, keyed by the function) compiles it once, not once per access
        self._stand_ins: dict[str, tuple[Callable, Callable]] = {}
        # the checks the verifier replays (decided from values or a program), as the first request collected them:
        # whether each is decided from the source too (its verdict's key then holds the module's source)
        self.replayed: dict[str, bool] = {}
        self._verdicts: dict[tuple, Any] = {}  # (seed, check, digest of the transcript[, of the source]) -> Verdict
        self.verdicts_reused = 0

    # -- whole checks: the same transcript gets the same verdict ------------------------------------------------
    def known_verdicts(self, claims: set[str], transcripts: dict, sources: dict | None = None) -> dict[str, Any]:
        """The verdicts already reached for ``claims`` of a replayed check on the same transcript (what the
        student's process recorded of it, byte for byte; and the same module source where the check is decided
        from the source too): a replay of the same answers on the same inputs, the same verdict."""
        found = {}
        for check in sorted(claims):
            key = self._verdict_key(check, transcripts, sources)
            if key is not None and key in self._verdicts:
                found[check] = self._verdicts[key]
        self.verdicts_reused += len(found)
        return found

    def learn(self, plan: list, verdicts: dict[str, Any], transcripts: dict, sources: dict | None = None) -> None:
        """Keep the verdicts of this request's replayed checks (``plan``: what it collected; the verdict of a check
        decided from the source too, ``analysed``, is kept by the source as well)."""
        for entry in plan:
            if entry.decided in REPLAYED and entry.id not in self.replayed:
                self.replayed[entry.id] = entry.analysed
        for check, verdict in verdicts.items():
            key = self._verdict_key(check, transcripts, sources)
            if key is not None:
                self._verdicts[key] = verdict

    def _verdict_key(self, check: str, transcripts: dict, sources: dict | None) -> tuple | None:
        import hashlib

        from autograder.grading.wire import verdict_evidence

        if check not in self.replayed:
            return None
        evidence = verdict_evidence(check, transcripts, sources, self.replayed[check])
        return None if evidence is None else (self.seed, check, hashlib.sha256(evidence.encode()).hexdigest())

    # -- the reference's calls ----------------------------------------------------------------------------------

    def shared(self, reference: Any, check: str, statics: Any) -> SharedReference:
        """``reference`` (a module's oracle) as ``check`` (the one about to run) sees it, answering from this
        class's results."""
        self.check, self.statics = check, statics
        return SharedReference(reference, self)

    def stand_in(self, label: str, function: Callable) -> Callable:
        """The reference's ``function`` (named ``label``) answering from this class's results for the current check:
        the same object for the same function every time."""
        found = self._stand_ins.get(label)
        if found is None or found[0] != function:

            @functools.wraps(function)
            def answering(*args, **kwargs):
                return self.call(label, function, self.check, self.statics, args, kwargs)

            found = self._stand_ins[label] = (function, answering)
        return found[1]

    def call(self, label: str, function: Callable, check: str, statics: Any, args: tuple, kwargs: dict) -> Any:
        """``function(*args, **kwargs)`` (the reference's ``label``), or what it returned before for this check."""
        key = self._key(label, check, statics, args, kwargs)
        if key is not None and key in self._results:
            found = _rebuilt(*self._results[key])
            if found is not _GONE:
                self.hits += 1
                return found
        out = function(*args, **kwargs)
        if key is not None:
            self.misses += 1
            kept = _kept(out)
            if kept is not None and self.bytes + kept[2] <= self.max_bytes:
                self._results[key] = (kept[0], kept[1])
                self.bytes += kept[2]
        return out

    def _key(self, label: str, check: str, statics: Any, args: tuple, kwargs: dict) -> tuple | None:
        from autograder.grading import transcript

        if not _all_data((args, kwargs)):
            return None
        try:
            found = transcript.digest(label, args, kwargs, statics)
        except Exception:  # noqa: BLE001 - arguments that are not data: asked every time
            return None
        return None if found is None else (self.seed, check, found)


class SharedReference(Reference):
    """A module's reference whose functions answer from :class:`ClassResults` (classes and constants as they are)."""

    def __init__(self, then: Any, results: ClassResults) -> None:
        self.then, self.results = then, results
        self.module_name = getattr(then, "module_name", "")
        self.knows_only_its_own_path = getattr(then, "knows_only_its_own_path", False)

    @property
    def __name__(self) -> str:
        return getattr(self.then, "__name__", self.module_name)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self.then, name)
        if not callable(value) or isinstance(value, type):
            return value
        return self.results.stand_in(f"{self.module_name}.{name}", value)

    def __repr__(self) -> str:
        return repr(self.then)

    def sibling(self, module: str) -> SharedReference:
        return SharedReference(self.then.sibling(module), self.results)

    def transformed(self, name: str, label: str, transform: Callable) -> Callable:
        function = self.then.transformed(name, label, transform)
        return self.results.stand_in(f"{self.module_name}.{name}|{label}", function)


def _is_data_leaf(leaf: Any) -> bool:
    import jax
    import numpy as np

    if isinstance(leaf, jax.core.Tracer):
        return False
    return leaf is None or isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float, complex, str, bytes))


def _all_data(tree: Any) -> bool:
    """Whether every leaf of ``tree`` is plain data (no function, object or tracer)."""
    import jax

    return all(_is_data_leaf(leaf) for leaf in jax.tree_util.tree_leaves(tree))


def _kept(out: Any) -> tuple[Any, list, int] | None:
    """``out`` as (treedef, leaves, bytes) to keep, or None when a leaf could change after it is handed out."""
    import jax
    import numpy as np

    leaves, treedef = jax.tree_util.tree_flatten(out)
    kept, size = [], 0
    for leaf in leaves:
        if not _is_data_leaf(leaf) or leaf is None:
            return None
        if isinstance(leaf, jax.Array) and leaf.is_deleted():
            return None
        if isinstance(leaf, np.ndarray):
            leaf = leaf.copy()
        kept.append(leaf)
        size += int(getattr(leaf, "nbytes", 8))
    return treedef, kept, size


def _rebuilt(treedef: Any, leaves: list) -> Any:
    """A fresh copy of a kept result (fresh containers and NumPy arrays; JAX arrays are immutable), or ``_GONE`` when
    one of its JAX arrays was deleted (donated) since."""
    import jax
    import numpy as np

    fresh = []
    for leaf in leaves:
        if isinstance(leaf, jax.Array) and leaf.is_deleted():
            return _GONE
        fresh.append(leaf.copy() if isinstance(leaf, np.ndarray) else leaf)
    return jax.tree_util.tree_unflatten(treedef, fresh)
