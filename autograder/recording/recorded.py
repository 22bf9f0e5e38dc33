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

The recording's files are :mod:`.files`, the inputs left unjudged :mod:`.misses`, the datasets and loaders a
recorder keeps :mod:`.datasets`; the names the plugin, the grader and the release take from here are re-exported
(``name as name``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from autograder.core.oracle import Reference, StandIn
from autograder.core.submission import load_module
from autograder.recording import plain_data
from autograder.recording.datasets import RecordedDataset, RecordedLoader, as_dataset, as_loader
from autograder.recording.files import Recording
from autograder.recording.files import write_given_modules as write_given_modules
from autograder.recording.misses import NOT_RECORDED as NOT_RECORDED
from autograder.recording.misses import NotRecorded, call_text, not_recorded
from autograder.recording.misses import clear_misses as clear_misses
from autograder.recording.misses import misses as misses
from autograder.runtime import stores

UNRECORDABLE = "unrecordable"  # a call whose output is not plain data: [UNRECORDABLE, why]


def _traced(args: tuple, kwargs: dict) -> bool:
    import jax

    leaves = jax.tree_util.tree_leaves((args, kwargs), is_leaf=lambda x: isinstance(x, jax.core.Tracer))
    return any(isinstance(x, jax.core.Tracer) for x in leaves)


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
        loader = as_loader(output, call)
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
