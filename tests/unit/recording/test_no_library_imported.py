"""Recording a value never imports a library the process had not loaded: a ``training`` grading process records
TrainStates and arrays, and importing torch to ask whether one of them is a torch ``Dataset`` cost it seconds
(a value of a library's class can exist only where that library is loaded, so the answer is known without it)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from autograder.grading import transcript
from autograder.recording import datasets, plain_data

NOT_LOADED = ("torch.utils.data", "flax.linen")


class Refuses:
    """A meta path finder that records, and refuses, every import of a module of :data:`NOT_LOADED`."""

    def __init__(self):
        self.asked: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name in NOT_LOADED:
            self.asked.append(name)
            raise ImportError(f"{name} is not loaded in this process")
        return None


@pytest.fixture
def unloaded(monkeypatch):
    """This process as one that never imported torch's data package or flax.linen (their entries hidden)."""
    refuses = Refuses()
    for name in NOT_LOADED:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "meta_path", [refuses, *sys.meta_path])
    return refuses


class Indexes:
    def __init__(self):
        self.x = np.arange(3.0)

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return self.x[i]


def test_recording_plain_values_imports_no_library(unloaded):
    assert datasets.as_dataset([1, 2]) is None
    assert datasets.as_loader([1, 2], "f") is None
    assert datasets.as_dataset(np.zeros(3)) is None
    assert datasets.as_dataset(Indexes()) is not None  # a course's own class that indexes like a dataset
    assert not plain_data.is_flax_module(np.zeros(2))
    transcript.encode((np.zeros(2), {"a": 1.0}, [Indexes()]), transcript.statics())
    assert unloaded.asked == []
