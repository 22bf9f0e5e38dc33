"""Every process-wide mutable store of the package, registered where it is defined, listed and cleared in one place.

A store is what keeps state from one call to the next for the life of a process: a
module-level (or class-level) dict, list or set that code writes into, a cache object,
a ``functools.cache``. Each one is made known here by the line that defines it::

    _jit_cache: dict = stores.register("checks.structure.jit_once", {})

so that :func:`registered` lists them all and :func:`clear_all` empties them (a long-lived
process between runs, a test that wants a fresh process's state without a new process).
``tests/unit/runtime/test_stores.py`` reads the package and fails on a store that is not registered.
Registering does no work: it keeps a reference. A module imported again (a fresh copy of
the package in a child process) registers its new store under the same name, replacing the old.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# name -> (the store, how to empty it)
_REGISTRY: dict[str, tuple[Any, Callable[[], None]]] = {}


def register(name: str, store: T, clear: Callable[[], None] | None = None) -> T:
    """Make ``store`` known as ``name`` and return it. ``clear`` empties it (default: ``store.clear``)."""
    if clear is None:
        clear = store.clear  # type: ignore[attr-defined]  # a dict, list, set or any store with a clear() method
    _REGISTRY[name] = (store, clear)
    return store


def registered() -> dict[str, Any]:
    """Every registered store by name (the stores themselves, not copies)."""
    return {name: store for name, (store, _) in sorted(_REGISTRY.items())}


def clear_all() -> list[str]:
    """Empty every registered store; the names emptied."""
    for _, clear in _REGISTRY.values():
        clear()
    return sorted(_REGISTRY)
