"""Ways a file kept beside the proofs stops being as the grader wrote it, shared by the tests of what is kept
(the verifier's answers, the rehearsal): each must make the file unread."""

from __future__ import annotations

import os
from pathlib import Path


def group_writable(path: Path) -> None:
    path.chmod(0o666)


def someone_elses(path: Path) -> None:
    """Given to another uid (needs root: :func:`needs_root`)."""
    os.chown(path, 65534, 65534)


def a_link(path: Path) -> None:
    real = path.with_name("real.json")
    path.rename(real)
    path.symlink_to(real)


def not_json(path: Path) -> None:
    path.write_text("{")


def the_folder_group_writable(path: Path) -> None:
    path.parent.chmod(0o777)


ANY_KEPT_FILE = (group_writable, someone_elses, a_link, not_json, the_folder_group_writable)


def needs_root(how) -> bool:
    """Whether ``how`` can only be done as root, and this process is not."""
    return how is someone_elses and os.geteuid() != 0
