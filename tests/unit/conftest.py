"""The unit tier's guard: a unit test during which a Python interpreter is started (by the test, or by the code it
calls: ``autograder mutate``'s runner starts pytest) errors at teardown, naming the tier it belongs in
(``tests/system/``). ``tests/unit/test_tiers.py`` reads the test files for the same, before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import UNIT_TESTS_STARTING_PROCESSES

UNIT = Path(__file__).resolve().parent


def starts_python(args, shell: bool) -> bool:
    """Whether a command line ``subprocess.Popen`` is given starts a Python interpreter."""
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        first = text.split()[0] if shell and text.split() else text
    else:
        first = os.fsdecode(next(iter(args), ""))
    return first == sys.executable or Path(first).name.startswith("python")


@pytest.fixture(autouse=True)
def no_interpreter_started(request, monkeypatch):
    if request.path.relative_to(UNIT).as_posix() in UNIT_TESTS_STARTING_PROCESSES:
        yield
        return
    started = []
    popen_init = subprocess.Popen.__init__

    def noting(self, args, *rest, **kwargs):
        if starts_python(args, kwargs.get("shell", False)):
            started.append(args)  # noted, not refused: a refusal raised in a worker thread could go unseen
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", noting)
    yield
    if started:
        pytest.fail(
            f"{request.node.nodeid} started {len(started)} Python interpreter(s) (the first: {started[0]!r}); "
            "the unit tier runs in process: move the test to tests/system/",
            pytrace=False,
        )
