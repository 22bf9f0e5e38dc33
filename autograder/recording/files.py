"""A recording's files: :class:`Recording` (one module's calls, loaders' batches and arrays) saved as
``oracle/<module>.json`` and ``oracle/<module>.npz`` and loaded back (format :data:`FORMAT`), and
:func:`write_given_modules`, the copies of the released stubs a recorded oracle takes the course's classes from.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FORMAT = 1


class Recording:
    """The calls of one module: ``calls[digest] = [function, output as plain data]``, the batches of
    its loaders (``loaders[call] = epochs``), and the arrays both refer to by index."""

    def __init__(
        self,
        module: str,
        calls: dict | None = None,
        arrays: list | None = None,
        loaders: dict | None = None,
        unrecordable: dict | None = None,
    ):
        self.module = module
        self.calls: dict[str, list] = calls or {}
        self.loaders: dict[str, list] = loaders or {}
        self.arrays: list[np.ndarray] = arrays or []
        self.unrecordable: dict[str, str] = unrecordable or {}  # function -> why its calls could not be recorded

    @classmethod
    def load(cls, folder: Path, module: str) -> Recording:
        index = json.loads((folder / f"{module}.json").read_text())
        if index.get("format") != FORMAT:
            raise ValueError(f"{folder / module}.json: recording format {index.get('format')}, expected {FORMAT}")
        with np.load(folder / f"{module}.npz", allow_pickle=False) as npz:
            buffers = {name: npz[name] for name in npz.files}
        arrays = [
            buffers[dtype][offset : offset + int(np.prod(shape, dtype=np.int64))].reshape(tuple(shape))
            for dtype, offset, shape in index["arrays"]
        ]
        return cls(module, index["calls"], arrays, index["loaders"], index.get("unrecordable", {}))

    def save(self, folder: Path) -> None:
        """One flat buffer per dtype in the ``.npz`` (few members, each array stored once), the rest as JSON."""
        folder.mkdir(parents=True, exist_ok=True)
        chunks: dict[str, list[np.ndarray]] = {}
        sizes: dict[str, int] = {}
        seen: dict[tuple, list] = {}
        table = []
        for a in self.arrays:
            a = np.asarray(a, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
            dtype = a.dtype.name
            key = (dtype, a.shape, a.tobytes())
            if key not in seen:
                seen[key] = [dtype, sizes.get(dtype, 0), list(a.shape)]
                chunks.setdefault(dtype, []).append(a.reshape(-1))
                sizes[dtype] = sizes.get(dtype, 0) + a.size
            table.append(seen[key])
        index = {
            "format": FORMAT,
            "module": self.module,
            "calls": self.calls,
            "loaders": self.loaders,
            "arrays": table,
            "unrecordable": self.unrecordable,
        }
        (folder / f"{self.module}.json").write_text(json.dumps(index, sort_keys=True, separators=(",", ":")))
        buffers = {dtype: np.concatenate(parts) for dtype, parts in chunks.items()}
        np.savez_compressed(folder / f"{self.module}.npz", **buffers)  # type: ignore[arg-type]  # keys: dtype names


def write_given_modules(course_root: Path, folder: Path) -> None:
    """Copy the stub of every module recorded in ``folder`` into ``folder/given``: the classes the course gives
    (``SimpleClassifier``), which a :class:`RecordedOracle` takes from there."""
    given = folder / "given"
    given.mkdir(parents=True, exist_ok=True)
    for index in folder.glob("*.json"):
        stub = course_root / "exercises" / f"{index.stem}.py"
        if stub.is_file():
            (given / stub.name).write_bytes(stub.read_bytes())
