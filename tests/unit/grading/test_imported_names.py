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
