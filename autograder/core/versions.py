"""The library versions the kit supports, and one warning line for a newer one than it was tested with.

``SUPPORTED`` is the range ``pyproject.toml`` declares (``tests/unit/core/test_versions.py`` keeps the two equal):
the course was checked on the oldest (:data:`OLDEST`, ``scripts/oldest_versions.sh`` in CI: the
reference at full marks, every stub "not started") and on the newest (:data:`TESTED`, the kit's own
environment). A newer release than :data:`TESTED` may work: the course runs with one warning line
(:func:`newer_than_tested`), never a silent abort. Nothing here imports the libraries (their installed
metadata is read).
"""

from __future__ import annotations

import functools
import importlib.metadata
import re

from autograder.runtime import stores

# name -> (oldest supported, newest tested); the upper bound of the range is the next minor release
SUPPORTED: dict[str, tuple[str, str]] = {
    "jax": ("0.10.0", "0.10.2"),
    "jaxlib": ("0.10.0", "0.10.2"),
    "flax": ("0.12.0", "0.12.8"),
    "optax": ("0.2.5", "0.2.8"),
    "orbax-checkpoint": ("0.12.0", "0.12.8"),
}
OLDEST = {name: low for name, (low, _high) in SUPPORTED.items()}
TESTED = {name: high for name, (_low, high) in SUPPORTED.items()}


def _key(version: str) -> tuple[int, ...]:
    """``0.10.2`` -> (0, 10, 2); what follows the release numbers (``rc1``, ``.dev0``, ``+local``) is ignored."""
    match = re.match(r"\d+(\.\d+)*", version.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def requirement(name: str) -> str:
    """The requirement ``pyproject.toml`` declares for ``name``: from the oldest supported release to the next minor."""
    low, _high = SUPPORTED[name]
    major, minor = _key(low)[:2]
    return f"{name}>={low},<{major}.{minor + 1}"


def oldest_pins() -> list[str]:
    """``name==version`` for every library at its oldest supported release (``scripts/oldest_versions.sh``)."""
    return [f"{name}=={version}" for name, version in OLDEST.items()]


@functools.cache
def _installed() -> tuple[tuple[str, str], ...]:
    found = []
    for name in SUPPORTED:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            pass
    return tuple(found)


stores.register("core.versions.installed", _installed, clear=_installed.cache_clear)


def installed() -> dict[str, str]:
    """The installed version of each supported library (those installed), read once per process: a library
    upgraded in place later is not the one this process runs (every key of a ``grade`` call's proofs and kept
    caches reads it, a few hundredths of a second each time)."""
    return dict(_installed())


def newer_than_tested(found: dict[str, str] | None = None) -> str | None:
    """One line naming the libraries newer than the kit was tested with (None when there are none)."""
    found = installed() if found is None else found
    newer = [f"{name} {v} (tested up to {TESTED[name]})" for name, v in found.items() if _key(v) > _key(TESTED[name])]
    if not newer:
        return None
    return (
        f"autograder: warning: {', '.join(newer)} is newer than this kit was tested with; the course runs, "
        "but check that the reference still gets full marks (`pytest exercises/ --solutions`)"
    )


def older_than_supported(found: dict[str, str] | None = None) -> str | None:
    """One line naming the libraries older than the kit supports (None when there are none)."""
    found = installed() if found is None else found
    older = [f"{name} {v} (supported from {OLDEST[name]})" for name, v in found.items() if _key(v) < _key(OLDEST[name])]
    return f"autograder: warning: {', '.join(older)} is older than this kit supports" if older else None
