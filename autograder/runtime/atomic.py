"""One atomic write: a reader never sees half a file, and a crash leaves the old file whole.

The folders written to may have held a student's files (a Gradescope ``results/`` folder a harness left
world-writable): the temporary file is made new by this process (``O_EXCL``) and never opened through a
link (``O_NOFOLLOW``), so a link planted under its name cannot make the grader write elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a new temporary file of this process beside it, then replace."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # whatever is there (a link included) is not ours
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
