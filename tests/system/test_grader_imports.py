"""The grader's own process imports none of the libraries its students' and verifier's processes run (issue 43).

Every ``grade`` call, Gradescope submission and Dask worker starts the grader's process first, and the first
student's sandbox is started only once it has read the course: a library imported there is seconds on the critical
path of every call (pytest and its assertion machinery alone were half a second here, imported for one regular
expression). Checks, JAX and pytest run only in the processes that grade and verify."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT

HEAVY = ("pytest", "_pytest", "hypothesis", "jax", "numpy", "torch", "flax", "optax", "orbax", "jinja2", "distributed")
ENTRIES = (
    "autograder.cli",  # the `autograder` command
    "autograder.grading.command",  # its `grade` and `preflight` handlers
    "autograder.grading:grade_class",  # the library entry (imported on first use)
    "autograder.platforms.gradescope",  # Gradescope's runner, and what its run() imports
    "autograder.grading.isolation.bubblewrap",
)

PROBE = """
import importlib, json, sys
module, _, attribute = sys.argv[1].partition(":")
loaded = importlib.import_module(module)
if attribute:
    getattr(loaded, attribute)
print(json.dumps(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)))
"""


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_graders_entry_imports_no_library_a_check_needs(entry):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, entry, json.dumps(HEAVY)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == [], f"{entry} imports {done.stdout.strip()}"
