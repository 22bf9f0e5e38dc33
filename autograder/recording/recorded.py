"""The recorded oracle: the reference's answers without the reference.

A release ships, per course module, ``oracle/<module>.json`` (calls: function
and digest of the arguments -> output, as plain data) and
``oracle/<module>.npz`` (the arrays), plus ``oracle/given/<module>.py``, a copy
of the released stub, for the classes the course gives (``SimpleClassifier``).
:class:`RecordingOracle` writes them while the checks run against the live
reference (``autograder release``); :class:`RecordedOracle` answers from them.

Checks do not change: ``reference.<fn>(...)`` answers from the recording. An
input that was not recorded (hypothesis shrinking or exploring) is *not
judged*: inside a hypothesis test the example is rejected (the shrinker keeps a
recorded failing example, so a failure still shows input, expected and got);
elsewhere the check is skipped with :data:`NOT_RECORDED`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from autograder.core.oracle import Reference, StandIn
from autograder.core.submission import load_module
from autograder.recording import plain_data
from autograder.runtime import stores

FORMAT = 1
UNRECORDABLE = "unrecordable"  # a call whose output is not plain data: [UNRECORDABLE, why]
NOT_RECORDED = (
    "not judged: the course's recorded answers do not cover this input "
    "(the release recorded the inputs of the student and grading profiles only)"
)


class NotRecorded(Exception):
    """The recording has no answer for this call."""


def _traced(args: tuple, kwargs: dict) -> bool:
    import jax

    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=lambda x: isinstance(x, jax.core.Tracer))
    return any(isinstance(x, jax.core.Tracer) for x in leaves)


def not_recorded(what: str) -> None:
    """Leave the current input unjudged (see the module docstring)."""
    from hypothesis import control, reject

    _MISSES.append(what)
    if control.currently_in_test_context():
        reject()
    import pytest

    pytest.skip(f"{NOT_RECORDED}: {what}")


_MISSES: list[str] = stores.register("recording.recorded.misses", [])  # one check's: the plugin clears it before each


def misses() -> list[str]:
    """Inputs left unjudged in this process (the plugin turns a check with no judged example into a skip)."""
    return _MISSES


def clear_misses() -> None:
    """Forget the inputs left unjudged so far (before each check: the list never holds more than one check's)."""
    _MISSES.clear()


def call_text(args: tuple, kwargs: dict, limit: int = 120) -> str:
    """The call's arguments in a line (for the reason a check was not judged)."""
    text = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    text = " ".join(text.split())
    return f"({text[:limit]}{'...' if len(text) > limit else ''})"


# Objects a recorder adds to plain data: a dataset's items and a loader's batches --------------------


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
    try:
        from torch.utils.data import Dataset
    except ImportError:
        return None
    kind = type(live)
    indexes_like_one = (
        kind.__module__.split(".")[0] not in _NOT_DATASETS
        and hasattr(live, "__dict__")
        and callable(getattr(kind, "__getitem__", None))
        and not isinstance(live, (list, tuple, dict, str, bytes))
        and not hasattr(live, "__array__")
    )
    if not (isinstance(live, Dataset) or indexes_like_one) or not hasattr(live, "__len__"):
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


def _as_loader(live: Any, call: str) -> RecordedLoader | None:
    try:
        from torch.utils.data import DataLoader
    except ImportError:
        return None
    if not isinstance(live, DataLoader):
        return None
    return RecordedLoader(call, len(live), [], live)


# The recording: one per module ----------------------------------------------------------------------


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


def _course_classes(given: Callable[[str], ModuleType]) -> Callable[[str, str], type]:
    def course_class(module: str, qualname: str) -> type:
        obj: Any = given(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return obj

    return course_class


class RecordedOracle(Reference):
    """A module's reference answered from its recording (the student release's ``reference``)."""

    knows_only_its_own_path = True  # see oracle.continue_from

    _given: dict[Path, ModuleType] = stores.register("recording.recorded.RecordedOracle.given", {})
    _statics: dict[Path, plain_data.Statics] = stores.register("recording.recorded.RecordedOracle.statics", {})
    _recordings: dict[tuple[Path, str], Recording] = stores.register("recording.recorded.RecordedOracle.recordings", {})

    def __init__(self, folder: Path, module: str):
        self.folder, self.module_name = Path(folder).resolve(), module
        key = (self.folder, module)
        if key not in RecordedOracle._recordings:
            RecordedOracle._recordings[key] = Recording.load(self.folder, module)
        self.recording = RecordedOracle._recordings[key]
        if self.folder not in RecordedOracle._statics:
            RecordedOracle._statics[self.folder] = plain_data.Statics(_course_classes(self._given_module))
        self.statics = RecordedOracle._statics[self.folder]
        self.functions = {entry[0].split("|")[0] for entry in self.recording.calls.values()}
        self._stubs: set[str] | None = None

    def _given_module(self, module: str) -> ModuleType:
        path = self.folder / "given" / f"{module}.py"
        if path not in RecordedOracle._given:
            loaded = load_module(path, f"_course_given_.{module}")
            plain_data.name_classes_by_course_module(loaded, module)
            RecordedOracle._given[path] = loaded
        return RecordedOracle._given[path]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.functions or name in self._contracted():
            return RecordedFunction(self, name)
        given = self._given_module(self.module_name)
        if hasattr(given, name) and name not in self._contracted():
            return getattr(given, name)
        raise AttributeError(f"the recorded reference of {self.module_name} has no {name!r}")

    def _contracted(self) -> set[str]:
        from autograder.core.submission import stub_functions

        if self._stubs is None:
            self._stubs = stub_functions(self.folder / "given" / f"{self.module_name}.py")
        return self._stubs

    def sibling(self, module: str) -> RecordedOracle:
        return RecordedOracle(self.folder, module)

    def transformed(self, name: str, label: str, transform: Callable) -> RecordedFunction:
        return RecordedFunction(self, f"{name}|{label}")

    def decode(self, tree: Any) -> Any:
        return plain_data.decode(tree, self.recording.arrays, self.statics, self._objects)

    def _objects(self, tree: list, dec: Callable) -> Any:
        kind = tree[0]
        if kind == "dataset":
            return RecordedDataset(dec(tree[2]), dec(tree[3]), tree[1])
        if kind == "loader":
            call = tree[1]
            epochs = [
                {"complete": e["complete"], "batches": [dec(b) for b in e["batches"]]}
                for e in self.recording.loaders.get(call, [])
            ]
            return RecordedLoader(call, tree[2], epochs)
        raise plain_data.Unencodable(f"unknown kind {kind!r}")

    def __repr__(self) -> str:
        return f"<recorded reference for {self.module_name}>"


class RecordedFunction(StandIn):
    """One reference function answered from the recording. ``jax.jit`` of it is itself (see ``jit_once``)."""

    reference_function = True  # a function to the checks (see oracle.is_reference_function)

    def __init__(self, oracle: RecordedOracle, name: str):
        self.oracle, self.name = oracle, name
        self.__name__ = self.__qualname__ = name.split("|")[0]

    def jit_stand_in(self, static_argnums: tuple) -> RecordedFunction:
        return RecordedFunction(self.oracle, f"{self.name}|jit{list(static_argnums)}")

    def transform_stand_in(self, label: str, transform: Callable) -> Callable:
        return _transformed_once(self, label, transform)

    def lookup(self, args: tuple, kwargs: dict) -> Any:
        key = plain_data.digest(self.name, args, kwargs, self.oracle.statics)
        entry = self.oracle.recording.calls.get(key)
        if entry is None:
            raise NotRecorded(self.name)
        if entry[1][0] == UNRECORDABLE:
            not_recorded(f"the release cannot record reference.{self.__name__}{call_text(args, kwargs)}: {entry[1][1]}")
        return self.oracle.decode(entry[1])

    def __call__(self, *args, **kwargs):
        if _traced(args, kwargs):
            raise TypeError(
                f"the recorded reference's {self.__name__} cannot run under a JAX transformation "
                "(it answers recorded inputs only)"
            )
        try:
            return self.lookup(args, kwargs)
        except NotRecorded:
            why = self.oracle.recording.unrecordable.get(self.name)
            if why is not None:
                not_recorded(f"the release cannot record reference.{self.__name__}: {why}")
            not_recorded(f"reference.{self.__name__}{call_text(args, kwargs)}")

    def __repr__(self) -> str:
        return f"<recorded reference {self.name}>"


def _transformed_once(function: RecordedFunction | RecordingFunction, label: str, transform: Callable) -> Callable:
    """``transform(function)``, made once per function object and ``label`` (a recorded or recording function
    is transformed as any function is; a reference's transforms are asked of its oracle, ``oracle.transformed``)."""
    made = function.__dict__.setdefault("_transforms", {})
    if label not in made:
        made[label] = transform(function)
    return made[label]


# Recording ------------------------------------------------------------------------------------------


class RecordingOracle(Reference):
    """The live reference, writing down every concrete call while the checks run (release builds)."""

    knows_only_its_own_path = True  # it records the reference's path (see oracle.continue_from)

    _recordings: dict[tuple[Path, str], Recording] = stores.register(
        "recording.recorded.RecordingOracle.recordings", {}
    )
    _loaders: dict[tuple[Path, str], dict[str, list[RecordedLoader]]] = stores.register(
        "recording.recorded.RecordingOracle.loaders", {}
    )
    _statics: plain_data.Statics | None = None

    def __init__(self, live: Any, folder: Path, contracted: set[str]):
        self.live, self.folder, self.contracted = live, Path(folder).resolve(), contracted
        self.jitted: dict[str, Callable] = {}
        self.module_name = live.module_name
        key = (self.folder, self.module_name)
        self.recording = RecordingOracle._recordings.setdefault(key, Recording(self.module_name))
        self.loaders = RecordingOracle._loaders.setdefault(key, {})
        if RecordingOracle._statics is None:
            RecordingOracle._statics = plain_data.Statics(plain_data.no_course_classes)
        self.statics = RecordingOracle._statics

    @classmethod
    def save_all(cls) -> list[Path]:
        """Write every module's recording (the batches of its loaders as plain data)."""
        written = []
        for (folder, module), recording in cls._recordings.items():
            for call, loaders in cls._loaders.get((folder, module), {}).items():
                epochs = max((loader.epochs for loader in loaders), key=_recorded_batches)
                assert cls._statics is not None  # set by the first RecordingOracle, which recorded this
                recording.loaders[call] = [
                    {
                        "complete": epoch["complete"],
                        "batches": [plain_data.encode(b, recording.arrays, cls._statics) for b in epoch["batches"]],
                    }
                    for epoch in epochs
                ]
            recording.save(folder)
            written.append(folder / f"{module}.json")
        return written

    @classmethod
    def reset(cls) -> None:
        cls._recordings.clear()
        cls._loaders.clear()
        cls._statics = None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self.live, name)
        if isinstance(value, type) and name not in self.contracted:
            return value  # a given class (SimpleClassifier): the release takes it from the stub
        if callable(value):
            return RecordingFunction(self, name, value)
        return value

    def sibling(self, module: str) -> RecordingOracle:
        from autograder.core.oracle import sibling

        return RecordingOracle(sibling(self.live, module), self.folder, self.contracted_of(module))

    def contracted_of(self, module: str) -> set[str]:
        from autograder.core.course import find_root, load_course
        from autograder.core.submission import stub_functions

        root = find_root(Path(self.live._module.__file__).parent)
        assert root is not None  # the live reference is a module of the course's solutions/
        course = load_course(root, verify_files=False)
        if module in {m.name for m in course.modules}:
            return {fn.name for fn in course.module(module).functions}
        # a release of part of the course (--only) still builds scenarios with the other modules
        return stub_functions(course.root / "exercises" / f"{module}.py")

    def transformed(self, name: str, label: str, transform: Callable) -> RecordingFunction:
        return RecordingFunction(self, f"{name}|{label}", self.live.transformed(name, label, transform))

    def record(self, name: str, key: str, hints: list[float], output: Any, unfindable: str | None = None) -> Any:
        """Store ``output`` for the call ``key``; return what the release will return (datasets and loaders as data).

        A call whose arguments (``unfindable``) or output cannot be stored as plain
        data is written down as such: the release skips the checks that need it,
        saying why, and ``autograder release`` lists it.
        """
        if unfindable is not None:
            self.recording.unrecordable.setdefault(name, f"its arguments hold {unfindable}")
            return output
        output = self._as_data(output, key)
        arrays = self.recording.arrays
        start = len(arrays)
        try:
            tree = plain_data.encode(output, arrays, self.statics, hints)
        except plain_data.Unencodable as err:
            del arrays[start:]
            tree = [UNRECORDABLE, f"it returns {err}"]  # this call only: the function's other calls are recorded
        if key in self.recording.calls:
            del arrays[start:]  # the same call again: keep the first recording
        else:
            self.recording.calls[key] = [name, tree]
        return output

    def _as_data(self, output: Any, call: str) -> Any:
        loader = _as_loader(output, call)
        if loader is not None:
            self.loaders.setdefault(call, []).append(loader)  # its epochs are filled in as checks iterate it
            return loader
        dataset = as_dataset(output)
        return dataset if dataset is not None else output

    def __repr__(self) -> str:
        return f"<recording reference for {self.module_name}>"


def _recorded_batches(epochs: list[dict]) -> int:
    return sum(len(epoch["batches"]) for epoch in epochs)


class RecordingFunction(StandIn):
    """A live reference function that records its concrete calls (calls under a JAX transformation pass through)."""

    reference_function = True  # a function to the checks (see oracle.is_reference_function)

    def __init__(self, oracle: RecordingOracle, name: str, live: Callable):
        self.oracle, self.name, self.live = oracle, name, live
        self.__name__ = self.__qualname__ = name.split("|")[0]
        self.__wrapped__ = live

    def jit_stand_in(self, static_argnums: tuple) -> RecordingFunction:
        import jax

        name = f"{self.name}|jit{list(static_argnums)}"
        if name not in self.oracle.jitted:  # one jax.jit per function: it compiles per shape, not per call
            self.oracle.jitted[name] = jax.jit(self.live, static_argnums=tuple(static_argnums))
        return RecordingFunction(self.oracle, name, self.oracle.jitted[name])

    def transform_stand_in(self, label: str, transform: Callable) -> Callable:
        return _transformed_once(self, label, transform)

    def __call__(self, *args, **kwargs):
        if _traced(args, kwargs):  # a helper inside a jitted step: nothing concrete to record
            return self.live(*args, **kwargs)
        key = plain_data.digest(self.name, args, kwargs, self.oracle.statics)  # before the call moves a loader on
        unfindable = plain_data.unknown_parts(self.name, args, kwargs, self.oracle.statics)
        hints = plain_data.float_hints(list(args) + list(kwargs.values()))
        output = self.live(*args, **kwargs)
        return self.oracle.record(self.name, key, hints, output, unfindable)
