"""Plain data across the trust boundary: encode, decode and digest pytrees of arrays.

The grading process that runs a student's code records, for each correctness
check, what the student's function returned for which arguments (a
*transcript*). The trusted verifier replays the check and looks answers up
by the digest of the arguments it generated itself. Only plain data crosses:
exact ``np.ndarray`` / JAX arrays, typed PRNG keys (as their key data), NumPy
and Python scalars, strings, None, and tuples, lists and dicts of them. Anything else becomes an *opaque* marker
— never a pickle, so decoding cannot run code.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import numpy as np

_PY = (bool, int, float, str, type(None))


def _jax_array_type():
    import jax.numpy as jnp

    return type(jnp.zeros(()))


class Opaque:
    """Stands for a value that was not plain data (an object, a tracer, a key)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} (not plain data)>"


def encode(value: Any, _depth: int = 0) -> Any:
    """A JSON-able description of ``value``; non-plain leaves become ``{"t": "opaque"}``."""
    kind = type(value)
    if _depth > 20:
        return {"t": "opaque", "type": "deeply nested"}
    if kind in _PY:
        if kind is float and value != value:
            return {"t": "float", "v": "nan"}
        if kind is float and value in (float("inf"), float("-inf")):
            return {"t": "float", "v": repr(value)}
        return {"t": kind.__name__, "v": value}
    if kind is np.ndarray or kind is _jax_array_type():
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001 - e.g. a typed PRNG key array
            return {"t": "opaque", "type": kind.__name__}
        if arr.dtype.kind not in "biufc" or arr.dtype.hasobject:
            return {"t": "opaque", "type": f"{kind.__name__}[{arr.dtype}]"}
        return {
            "t": "np" if kind is np.ndarray else "jax",
            "dtype": arr.dtype.str,
            "shape": list(arr.shape),
            "b": base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii"),
        }
    if _is_typed_key(value):
        import jax

        data = np.asarray(jax.random.key_data(value))
        return {"t": "key", "impl": str(jax.random.key_impl(value)), "data": encode(data, _depth + 1)}
    if isinstance(value, np.generic) and type(value).__module__ == "numpy" and value.dtype.kind in "biufc":
        return {"t": "npscalar", "dtype": value.dtype.str, "b": base64.b64encode(value.tobytes()).decode("ascii")}
    if kind in (tuple, list):
        return {"t": kind.__name__, "v": [encode(v, _depth + 1) for v in value]}
    if kind is dict and all(type(k) in (str, int) for k in value):
        items = sorted(value.items(), key=lambda kv: (type(kv[0]).__name__, kv[0]))
        return {"t": "dict", "v": [[encode(k), encode(v, _depth + 1)] for k, v in items]}
    return {"t": "opaque", "type": getattr(kind, "__qualname__", "object")}


def _is_typed_key(value: Any) -> bool:
    """A new-style typed PRNG key array (its exact JAX type, not a look-alike)."""
    if type(value).__name__ != "PRNGKeyArray" or type(value).__module__ != "jax._src.random.prng":
        return False
    import jax

    return isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer)


def has_opaque(encoded: Any) -> bool:
    if isinstance(encoded, dict):
        if encoded.get("t") == "opaque":
            return True
        return any(has_opaque(v) for v in encoded.values() if isinstance(v, (list, dict)))
    if isinstance(encoded, list):
        return any(has_opaque(v) for v in encoded)
    return False


def decode(encoded: Any, *, _depth: int = 0) -> Any:
    """The value ``encode`` described (arrays as the same kind: NumPy or JAX). Raises ValueError on junk."""
    if _depth > 25 or not isinstance(encoded, dict):
        raise ValueError("malformed transcript value")
    t = encoded.get("t")
    if t in ("bool", "int", "str", "NoneType"):
        v = encoded.get("v")
        expected = {"bool": bool, "int": int, "str": str, "NoneType": type(None)}[t]
        if type(v) is not expected:
            raise ValueError("malformed transcript scalar")
        return v
    if t == "float":
        v = encoded.get("v")
        if isinstance(v, str):
            return float(v)
        if type(v) not in (int, float):
            raise ValueError("malformed transcript float")
        return float(v)
    if t in ("np", "jax", "npscalar"):
        dtype = np.dtype(str(encoded["dtype"]))
        if dtype.kind not in "biufc":
            raise ValueError("malformed transcript dtype")
        raw = base64.b64decode(str(encoded["b"]), validate=True)
        if t == "npscalar":
            return np.frombuffer(raw, dtype=dtype)[0]
        shape = tuple(int(n) for n in encoded["shape"])
        arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if t == "jax":
            import jax.numpy as jnp

            return jnp.asarray(arr)
        return arr
    if t == "key":
        import jax

        data = decode(encoded["data"], _depth=_depth + 1)
        if type(data) is not np.ndarray or data.dtype != np.uint32:
            raise ValueError("malformed transcript key")
        return jax.random.wrap_key_data(data, impl=str(encoded["impl"]))
    if t in ("tuple", "list"):
        items = [decode(v, _depth=_depth + 1) for v in encoded["v"]]
        return tuple(items) if t == "tuple" else items
    if t == "dict":
        return {decode(k, _depth=_depth + 1): decode(v, _depth=_depth + 1) for k, v in encoded["v"]}
    if t == "opaque":
        return Opaque(str(encoded.get("type", "object")))
    raise ValueError(f"unknown transcript tag {t!r}")


def digest(function: str, args: tuple, kwargs: dict) -> str | None:
    """A digest of a call's arguments, or None when an argument is not plain data."""
    encoded = encode([function, list(args), dict(sorted(kwargs.items()))])
    if has_opaque(encoded):
        return None
    return hashlib.sha256(json.dumps(encoded, sort_keys=True).encode()).hexdigest()
