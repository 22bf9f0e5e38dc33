"""Datasets: a student's ``torch.utils.data.Dataset`` and what its items hold (what a ``DataLoader``'s worker
processes may build).

- :func:`not_a_dataset`           what a made object is, when it is not a ``Dataset`` (recorded as data)
- :func:`assert_kind_is_dataset`  the judgement of what :func:`not_a_dataset` recorded
- :func:`assert_numpy_sample`     a dataset item holds NumPy arrays and scalars only
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import torch
import torch.utils.data as tud

from autograder.checks.loaders import kind_of
from autograder.core.failures import CheckFailure


def not_a_dataset(dataset: Any) -> str | None:
    """None for a ``torch.utils.data.Dataset``; else what ``dataset`` is (as :func:`assert_kind_is_dataset` says it),
    recorded as data by a check decided on the trusted side."""
    return None if isinstance(dataset, tud.Dataset) else kind_of(dataset)


def assert_kind_is_dataset(not_dataset: str | None, name: str) -> None:
    """The judgement of what :func:`not_a_dataset` recorded: ``None`` (a Dataset) passes."""
    if not_dataset is not None:
        raise CheckFailure(
            f"{name} is a torch.utils.data.Dataset",
            f"{name}(...) made a {not_dataset}, not a torch.utils.data.Dataset",
            f"subclass it: class {name}(torch.utils.data.Dataset), and call super().__init__()",
        )


def assert_numpy_sample(sample: Any, *, name: str, dataset: str) -> None:
    """Every leaf of a dataset item is a NumPy array or a NumPy scalar.

    A DataLoader's worker processes call ``dataset[i]``: an item holding a
    jax.Array (or a torch tensor) starts JAX (or torch's collation) in a forked
    worker, which deadlocks or fails. The check names the first such leaf.
    """
    check = f"{dataset}'s items hold NumPy arrays and NumPy scalars only"
    for path, leaf in jax.tree_util.tree_flatten_with_path(sample)[0]:
        if isinstance(leaf, (np.ndarray, np.generic)):
            continue
        where = f"{name}{jax.tree_util.keystr(path)}"
        if isinstance(leaf, jax.Array):
            raise CheckFailure(
                check,
                f"{where} is a jax.Array, expected a NumPy array or scalar",
                "a DataLoader with workers calls dataset[i] in forked worker processes; a jax.Array there runs "
                "JAX in a forked copy of a multithreaded process, which deadlocks. Keep data and label as NumPy "
                "arrays and return (self.data[i], self.label[i]): JAX takes NumPy batches as they are",
            )
        if isinstance(leaf, torch.Tensor):
            raise CheckFailure(
                check,
                f"{where} is a torch.Tensor, expected a NumPy array or scalar",
                "keep data and label as NumPy arrays: the batches go to JAX, not to torch",
            )
        raise CheckFailure(check, f"{where} is a {kind_of(leaf)}, expected a NumPy array or scalar")
