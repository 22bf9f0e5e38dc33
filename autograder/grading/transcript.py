"""Plain data across the trust boundary: what a student's function returned, for which arguments.

The grading process that runs a student's code records, for each correctness
check, what the student's function returned for which arguments (a
*transcript*). The trusted verifier replays the check and looks answers up
by the digest of the arguments it generated itself.

Values are written as the recorded oracle writes the reference's
(:mod:`autograder.recording.plain_data`): arrays, typed keys, scalars,
containers, named tuples, flax modules, ``TrainState``-like structs (their
``apply_fn`` and ``tx`` as recipes), datasets as their items; arguments that
are the check's own functions are digested by their source. A value that is
none of these is *opaque*. Nothing is pickled, and decoding — which runs in
the trusted verifier on data a student's process wrote — builds only numeric
arrays and the classes :func:`allowed_class` accepts, so decoding cannot run
code.
"""

from __future__ import annotations

import base64
import collections
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.recording import plain_data
from autograder.recording.recorded import RecordedDataset, as_dataset

# Libraries whose data classes (optimizer states, flax structs and modules, dict types) may be decoded.
NAMED_CLASS_PACKAGES = ("flax", "optax", "jax", "collections", "builtins")


class Opaque:
    """Stands for a value that was not plain data (an object, a tracer, a function)."""

    def __init__(self, why: str):
        self.why = why

    def __repr__(self) -> str:
        return f"<{self.why} (not plain data)>"


def statics(course_class: Callable[[str, str], type] | None = None) -> plain_data.Statics:
    """The recipes of one process's static fields. ``course_class`` (trusted side only) names the
    course's own classes; class references in decoded data are checked by :func:`allowed_class`."""

    def unknown(module: str, qualname: str) -> type:
        raise plain_data.Unencodable(f"the course class {module}.{qualname}")

    known = course_class or unknown
    return plain_data.Statics(known, resolve=lambda ref: allowed_class(ref, known))


def allowed_class(ref: Any, course_class: Callable[[str, str], type]) -> type:
    """The class ``ref`` names, if decoding may build it: a course module's own class, or a data
    class of :data:`NAMED_CLASS_PACKAGES` (a plain dict type, a named tuple, a flax module or struct).

    Nothing a reference names is imported or called to find it: a library class is looked up in
    the modules this process has *already* loaded, through their ``__dict__`` only (no ``getattr``,
    which runs a module's ``__getattr__`` or a descriptor); a module that is not loaded is refused."""
    if not (isinstance(ref, list) and len(ref) in (2, 3) and all(type(part) is str for part in ref)):
        raise ValueError("malformed class reference")
    if ref[0] == "course" and len(ref) == 3:
        found = course_class(ref[1], ref[2])
    elif (
        len(ref) == 2
        and ref[0].split(".")[0] in NAMED_CLASS_PACKAGES
        and all(p.isidentifier() for p in ref[0].split("."))
    ):
        found = _loaded_class(ref[0], ref[1])
    else:
        raise ValueError(f"a class of {ref[0]} is not data")
    if not isinstance(found, type) or not _is_data_class(found):
        raise ValueError(f"{ref} is not a data class")
    return found


def _loaded_class(module_name: str, qualname: str) -> Any:
    """``module_name.qualname`` from :data:`sys.modules` and ``__dict__`` lookups, importing and calling nothing."""
    module = sys.modules.get(module_name)
    if not isinstance(module, types.ModuleType):
        raise ValueError(f"{module_name} is not a module the grader loaded")
    found: Any = module
    for part in qualname.split("."):
        if not part.isidentifier() or not isinstance(found, (types.ModuleType, type)):
            raise ValueError(f"{module_name}.{qualname} is not a class")
        namespace = found.__dict__
        if part not in namespace:
            raise ValueError(f"{module_name} has no {qualname}")
        found = namespace[part]
    return found


# The dict types decoding builds (their constructors are the interpreter's own); any other dict subclass
# runs code of its own when called, so it is not data.
DICT_TYPES = (dict, collections.OrderedDict)


def _is_data_class(cls: type) -> bool:
    import dataclasses

    if issubclass(cls, dict):
        return cls in DICT_TYPES
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return True
    nn = sys.modules.get("flax.linen")  # a flax module class was found, so flax.linen is loaded if it is one
    if nn is not None and issubclass(cls, nn.Module):
        return True
    return dataclasses.is_dataclass(cls) and any("pytree_node" in f.metadata for f in dataclasses.fields(cls))


def digest(name: str, args: tuple, kwargs: dict, statics: plain_data.Statics) -> str | None:
    """A digest of a call's arguments, or None when one has no value to look it up by (an object, a tracer)."""
    try:
        tree = plain_data.encode([name, list(args), dict(sorted(kwargs.items()))], None, statics)
    except plain_data.Unencodable:  # a traced argument
        return None
    if plain_data.unknown_in(tree) is not None:
        return None
    return plain_data.hash_tree(tree)


def encode(value: Any, statics: plain_data.Statics, hints: Sequence[float] = ()) -> dict:
    """A JSON-able description of ``value`` (``{"opaque": why}`` when it is not plain data)."""
    dataset = as_dataset(value)
    arrays: list = []
    try:
        tree = plain_data.encode(value if dataset is None else dataset, arrays, statics, hints, opaque_statics=True)
        packed = [_pack(a) for a in arrays]
    except plain_data.Unencodable as err:
        return {"opaque": f"a result holding {err}"}
    return {"tree": tree, "arrays": packed}


def _pack(a: np.ndarray) -> dict:
    a = np.asarray(a)
    if a.dtype.kind not in "biufc" or a.dtype.hasobject:
        raise plain_data.Unencodable(f"an array of {a.dtype}")
    return {
        "dtype": a.dtype.str,
        "shape": list(a.shape),
        "b": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii"),
    }


def _unpack(packed: Any) -> np.ndarray:
    dtype = np.dtype(str(packed["dtype"]))
    if dtype.kind not in "biufc" or dtype.hasobject:
        raise ValueError("malformed transcript dtype")
    raw = base64.b64decode(str(packed["b"]), validate=True)
    return np.frombuffer(raw, dtype=dtype).reshape(tuple(int(n) for n in packed["shape"])).copy()


def is_opaque(encoded: Any) -> bool:
    return isinstance(encoded, dict) and "opaque" in encoded


def decode(encoded: Any, statics: plain_data.Statics) -> Any:
    """The value :func:`encode` described (an :class:`Opaque` for an opaque one). Raises ValueError on junk."""
    if not isinstance(encoded, dict):
        raise ValueError("malformed transcript value")
    if is_opaque(encoded):
        return Opaque(str(encoded["opaque"])[:200])
    try:
        arrays = [_unpack(p) for p in encoded["arrays"]]
        return plain_data.decode(encoded["tree"], arrays, statics, _datasets)
    except Exception as err:  # noqa: BLE001 - hostile data: whatever it breaks, it is malformed
        raise ValueError(f"malformed transcript value ({type(err).__name__})") from None


def _datasets(tree: list, dec: Callable) -> Any:
    if tree[0] == "dataset":
        return RecordedDataset(dec(tree[2]), dec(tree[3]), tree[1])
    raise plain_data.Unencodable(f"unknown kind {tree[0]!r}")
