"""What the tests of things kept between ``grade`` calls (proofs' plans, the verifier's answers) share: a proof
folder of the test's own, the kit's snapshot, and the options a setting is made of."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import ROOT

from autograder.grading import preflight
from autograder.grading.isolation.scratch import Snapshot


@pytest.fixture
def kept_here(monkeypatch, tmp_path) -> Path:
    """The proof folder of this test (``AUTOGRADER_PREFLIGHT_CACHE``)."""
    monkeypatch.setenv(preflight.REUSE_ENV, str(tmp_path / "proofs"))
    return tmp_path / "proofs"


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return Snapshot.take(ROOT)


@pytest.fixture
def options() -> Callable[..., SimpleNamespace]:
    """``options(**changes)``: a grader's options (those a setting reads) with ``changes``."""

    def made(**changes) -> SimpleNamespace:
        base = dict(modules=["at_updates"], timeout_per_function=60, memory_mb=2048, jobs=1, seed=7, run_as=None)
        return SimpleNamespace(**{**base, **changes})

    return made
