"""JAX's persistent compilation cache: where it lives and how it is switched on.

A student re-runs the same module dozens of times; every run compiles the same
programs again unless XLA's executables are kept on disk. Locally the cache is
a git-ignored folder of the student's own repository (``.jax_cache/``): on by
default, safe to delete, never shared between students. ``grade`` gives every
student their own folder, for all of their grading processes, and the trusted
side another one: a cache is executables that every process using it writes and
runs, so one submission must never load what another one's code compiled.

``JAX_COURSE_CACHE_DIR`` overrides the folder (benchmarks, tests); set it to
the empty string to switch the cache off. This module only computes settings:
it imports nothing heavy, so both the pytest plugin and the grader use it.
"""

from __future__ import annotations

import os
from pathlib import Path

FOLDER = ".jax_cache"
OVERRIDE = "JAX_COURSE_CACHE_DIR"


def settings(cache_dir: Path) -> dict[str, str | int]:
    """JAX config options (lower-case names) that keep every compiled program in ``cache_dir``."""
    return {
        "jax_compilation_cache_dir": str(cache_dir),
        # Cache everything: the course's programs are small, and small ones are most of the wait.
        "jax_persistent_cache_min_compile_time_secs": 0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        # No XLA cache beside it (JAX turns on GPU autotuning's by default): its folder, a path under this one, goes
        # into every program's key, so a copy of the cache in another folder (a kept --jax-cache, copied into the
        # student's new sandbox; a student's repository moved) would never find one program. With none, the key is
        # the program, the compile options, the backend and the versions, wherever the cache lies.
        "jax_persistent_cache_enable_xla_caches": "none",
    }


def switch_on(cache_dir: Path) -> None:
    """Keep this process's compiled programs in ``cache_dir`` (before it compiles anything; imports JAX)."""
    import jax

    for name, value in settings(cache_dir).items():
        jax.config.update(name, value)


def environment(cache_dir: Path | None) -> dict[str, str]:
    """The same settings as environment variables, for a process that has not imported JAX yet."""
    if cache_dir is None:
        return {}
    return {name.upper(): str(value) for name, value in settings(cache_dir).items()}


def student_cache_dir(course_root: Path) -> Path | None:
    """The student's cache folder, or ``None`` when switched off with ``JAX_COURSE_CACHE_DIR=``."""
    override = os.environ.get(OVERRIDE)
    if override is not None:
        return Path(override) if override else None
    return Path(course_root) / FOLDER
