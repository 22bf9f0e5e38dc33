"""Runs of pytest in one process (a notebook kernel, a release build) that do not see each other's modules."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path


def _imported_from(module, folders: tuple[Path, ...]) -> bool:
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file:
        return False
    return any(Path(file).resolve().is_relative_to(folder) for folder in folders)


@contextlib.contextmanager
def own_imports(*folders: Path):
    """A pytest run in this process leaves no module of ``folders`` behind, and meets none of another run's.

    pytest imports ``exercises/test_<module>.py`` as the top-level module
    ``test_<module>``. A second run in the same process would otherwise meet
    the first run's module: from another kit, pytest stops ("import file
    mismatch"); from the same kit, it reuses the module, whose ``@given``
    checks kept the hypothesis profile of the first run (a release recording
    the student profile, then the grading one, recorded the student inputs
    twice). Modules named like the files in ``folders`` are set aside for
    the run and restored after it.
    """
    folders = tuple(Path(f).resolve() for f in folders)
    names = {p.stem for folder in folders for p in folder.glob("*.py")}
    set_aside = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    before = set(sys.modules)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if name in names or _imported_from(sys.modules[name], folders):
                del sys.modules[name]
        sys.modules.update(set_aside)
