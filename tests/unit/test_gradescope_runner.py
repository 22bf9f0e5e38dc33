"""The Gradescope runner's exit status is its verdict on the ``results.json`` it wrote: 0 only when the file has
Gradescope's shape, so that ``run_autograder`` checks again, and writes its own valid one, only where the runner
crashed, was stopped, or wrote something Gradescope cannot read (``tests/system/test_gradescope.py``)."""

from __future__ import annotations

import json

import pytest

from autograder.platforms import gradescope


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        ({"score": 1.5, "tests": [{"score": 1.5, "name": "f"}]}, 0),
        ({"score": "1.5", "tests": []}, 1),
        ({"score": 1.0, "tests": [{"name": "f"}]}, 1),
    ],
    ids=["valid", "score not a number", "a test without a score"],
)
def test_the_runner_exits_0_only_for_results_gradescope_can_read(tmp_path, monkeypatch, payload, status):
    monkeypatch.setattr(gradescope, "run", lambda root, run_as: payload)
    assert gradescope.main(["--root", str(tmp_path)]) == status
    assert json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8")) == payload
