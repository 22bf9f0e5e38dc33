"""What a grader's processes import before they fork is read from the files they run
(``Snapshot.imported_names``): every import statement, wherever a block puts it (a branch, a ``try``, a ``with``,
a class, a ``match``), and in the kit's own files only those at module level, the deferred ones (inside a function)
running where they are needed. Only statements are walked: an import is never an expression."""

from __future__ import annotations

from autograder.grading.isolation.scratch import Snapshot

STUDENT_FILE = b"""
import numpy
if True:
    import torch
try:
    import flax.linen as nn
except ImportError:
    from optax import adam
else:
    import chex
finally:
    import orbax.checkpoint
with open("x") as f:
    import scipy
class C:
    import hypothesis
match 1:
    case 1:
        import pandas
def later():
    for _ in range(1):
        import sklearn
lazy = lambda: __import__("ignored")
"""

KIT_CHILD = b"""
import pytest
def f():
    import tensorflow
"""


def test_every_import_statement_is_found_wherever_a_block_puts_it():
    kit = {"autograder/grading/untrusted/child.py": KIT_CHILD}
    names = Snapshot({"exercises/m.py": STUDENT_FILE}, kit).imported_names(["m"])
    expected = {"numpy", "torch", "flax", "optax", "chex", "orbax", "scipy", "hypothesis", "pandas", "sklearn"}
    assert expected | {"pytest"} <= names
    assert "tensorflow" not in names  # the kit's deferred import runs where it is needed
    assert "ignored" not in names


def test_a_zygote_imports_the_check_modules_its_modules_checks_import_and_no_library_more(snapshot):
    """The check modules a grade's checks import (and the course's plugin) are imported before the fork
    (``preload.grading_set``'s ``kit``); one that imports torch only where a graded module's checks use it."""
    from autograder.runtime import preload

    def preloaded(modules: list[str]) -> set[str]:
        return set(preload.grading_set(*snapshot.imports_of(modules)))

    at_updates, data = preloaded(["at_updates"]), preloaded(["data"])
    assert {"autograder.plugin", "autograder.checks.values"} <= at_updates
    assert not {"torch", "autograder.checks.datasets", "autograder.checks.loaders"} & at_updates
    assert {"torch", "autograder.checks.datasets", "autograder.checks.loaders"} <= data
    for modules in (["at_updates"], ["data"]):
        kit = snapshot.imports_of(modules)[1]
        assert kit >= {m for m in preload.KIT_CHECKS if m in preloaded(modules)}
