"""The limits and choices of one grading run (``autograder grade``'s options), read by every part of the grader."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class Options:
    modules: tuple[str, ...]
    timeout_per_function: float
    memory_mb: int
    jobs: int
    cache_dir: Path | None = None
    zygote: bool = True  # fork grading children from a pre-imported process per worker
    seed: int | None = None  # `grade --seed N`: inputs drawn from N (child and verifier alike), not the published ones
    run_as: str | None = None  # start untrusted processes as this unprivileged user (grader runs as root)
    prove_again: bool = False  # `grade --preflight`: prove the environment now, not from a kept proof
    # each student's sandbox folder is a file system of this size (a disk quota; where the grader may mount one)
    disk_mb: int = 256  # tmpfs pages count against the memory limit too: well under it
