"""The one seam through which expected values reach the checks.

Checks ask ``reference.<function>(...)`` and never import ``solutions``
themselves, so a student release can ship another oracle (e.g. one that
replays recorded outputs) without touching a single check.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from autograder.submission import load_module


class Oracle:
    """The instructor's reference for one module, loaded from ``solutions/``.

    Attribute access returns the reference's function or class. The module is
    imported under a private name that student code cannot ``import``.
    """

    def __init__(self, solutions_dir: Path, module: str):
        self.module_name = module
        self._module: ModuleType = load_module(
            Path(solutions_dir) / f"{module}.py", f"_course_reference_.{module}"
        )

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def __repr__(self) -> str:
        return f"<reference for {self.module_name}>"
