"""The objects a recorder adds to plain data: a dataset the reference returned, kept as its attributes and items
(:class:`RecordedDataset`, :func:`as_dataset`), and a loader, kept as the batches of each pass over it
(:class:`RecordedLoader`, :func:`as_loader`); both digest alike live (while recording) and replayed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

from autograder.recording import plain_data
from autograder.recording.misses import not_recorded


class RecordedDataset:
    """A dataset the reference returned, as data: its attributes, length and items.

    Its ``plain_data`` names it by what it holds, so the same dataset digests
    alike whether it is the live one (while recording) or the replayed one.
    """

    def __init__(self, attributes: dict[str, Any], items: list, ref: list[str]):
        self.__dict__.update(attributes)
        self._items, self._ref = items, ref

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int):
        return self._items[i]

    def plain_data(self, enc: Callable) -> list:
        attributes = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return ["dataset", self._ref, enc(attributes), enc(self._items)]


# Modules whose classes are never a course's dataset (containers, arrays, library data classes).
_NOT_DATASETS = ("builtins", "collections", "numpy", "jax", "jaxlib", "flax", "optax", "torch")


def as_dataset(live: Any) -> RecordedDataset | None:
    """A live ``torch.utils.data.Dataset`` with array attributes, as a :class:`RecordedDataset`; or an object of a
    course's own class that indexes like one (``__len__``, ``__getitem__``) without subclassing it (that it
    should is another check's finding: its data and items are still what they are)."""
    # Only a process that imported torch's data package can hold a torch Dataset: one that did not is not made to
    # import it here (seconds of every ``training`` grading process, whose files never import torch).
    data = sys.modules.get("torch.utils.data")
    kind = type(live)
    indexes_like_one = (
        kind.__module__.split(".")[0] not in _NOT_DATASETS
        and hasattr(live, "__dict__")
        and callable(getattr(kind, "__getitem__", None))
        and not isinstance(live, (list, tuple, dict, str, bytes))
        and not hasattr(live, "__array__")
    )
    is_torch_dataset = data is not None and isinstance(live, data.Dataset)
    if not (is_torch_dataset or indexes_like_one) or not hasattr(live, "__len__"):
        return None
    attributes = {k: v for k, v in vars(live).items() if not k.startswith("_") and _is_data(v)}
    return RecordedDataset(attributes, [live[i] for i in range(len(live))], plain_data.class_ref(type(live)))


def _is_data(value: Any) -> bool:
    """Whether ``value`` is stored as data (a dataset's own generator, say, is not: it is left out)."""
    try:
        plain_data.encode(value, [], plain_data.Statics(plain_data.no_course_classes))
    except plain_data.Unencodable:
        return False
    return True


class RecordedLoader:
    """A loader the reference returned: the batches of each pass over it, in order.

    While recording it iterates the live loader and keeps each epoch's
    batches (``{"complete": bool, "batches": [...]}``: a check may stop
    early, as ``next(iter(loader))`` does); replayed, epoch ``k`` yields the
    ``k``-th recorded epoch, and asking for more than was recorded is not judged.
    """

    def __init__(self, call: str, length: int, epochs: list[dict], live: Any = None):
        self.call, self.length, self.epochs, self.live, self.started = call, length, epochs, live, 0

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator:
        epoch, self.started = self.started, self.started + 1
        if self.live is not None:
            recorded: dict[str, Any] = {"complete": False, "batches": []}
            if epoch == len(self.epochs):
                self.epochs.append(recorded)
            for batch in self.live:
                recorded["batches"].append(batch)
                yield batch
            recorded["complete"] = True
            return
        if epoch >= len(self.epochs):
            not_recorded(f"epoch {epoch + 1} of a loader")
        yield from self.epochs[epoch]["batches"]
        if not self.epochs[epoch]["complete"]:
            not_recorded(f"the rest of epoch {epoch + 1} of a loader")

    def plain_data(self, enc: Callable) -> list:
        return ["loader", self.call, self.length, self.started]


def as_loader(live: Any, call: str) -> RecordedLoader | None:
    """A live ``torch.utils.data.DataLoader``, as a :class:`RecordedLoader` that records its batches (or None)."""
    data = sys.modules.get("torch.utils.data")  # no process that never imported it holds a DataLoader
    if data is None or not isinstance(live, data.DataLoader):
        return None
    return RecordedLoader(call, len(live), [], live)
