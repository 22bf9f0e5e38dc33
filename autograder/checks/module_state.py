"""Module state: what a call of the student's function leaves in the module's globals, and what a jitted call
lets escape (observed in the student's process; values cannot show either).

A check that calls these is marked ``@pytest.mark.decided("source", "module_state")``: the trusted side decides it
from the submission's source (:mod:`autograder.core.state_writes`: no write that outlives the call), and the
student's process runs the same analysis before the check's body (the same message); what is observed here
still fails a check the analysis passes (a failure is never forged in a student's favour).

- :func:`assert_module_state_unchanged` no module-level variable is added, rebound or mutated
- :func:`assert_no_leaked_tracers`    nothing traced escapes a ``jax.jit`` of the function
- :func:`tracer_ids`                  the JAX tracers a value holds
"""

from __future__ import annotations

import dataclasses
import inspect
import random
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, cast

import jax
import numpy as np

from autograder.checks.values import describe, function_name, is_key
from autograder.core.failures import CheckFailure
from autograder.core.oracle import is_reference_function


class _Opaque:
    """Stands for a value whose contents cannot be read or compared: never evidence of a change."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Opaque)

    def __hash__(self) -> int:
        return 0


_OPAQUE = _Opaque()
_PICTURE_DEPTH = 8
_PICTURE_NODES = 20_000


def _array_picture(kind: str, a: np.ndarray) -> tuple:
    return (kind, a.dtype.str, a.shape, a.tobytes() if a.dtype != object else tuple(map(id, a.ravel())))


def _generator_state(value: Any) -> Any:
    """The state of a random generator object (torch, NumPy), or None if ``value`` is not one."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Generator):
        return bytes(value.get_state().numpy().tobytes())
    if isinstance(value, np.random.RandomState):
        kind, keys, pos, has_gauss, gauss = cast(tuple, value.get_state())  # legacy=True: a tuple, not a dict
        return (kind, keys.tobytes(), pos, has_gauss, gauss)
    if isinstance(value, np.random.Generator):
        return repr(value.bit_generator.state)
    if isinstance(value, random.Random):
        return value.getstate()
    return None


def _picture(value: Any, depth: int = 0, path: frozenset = frozenset(), budget: list | None = None) -> Any:
    """A comparable picture of what ``value`` holds: equal pictures, same contents.

    Arrays (NumPy, JAX, torch) by dtype, shape and bytes; PRNG keys by their
    key data; random generators by their state; lists, tuples, dicts and sets
    item by item; dataclasses (a Flax model, a TrainState) field by field;
    plain objects (a dataset) by their ``__dict__``; functions, classes and
    modules by identity. What cannot be read (a C object, too deep, a cycle)
    is opaque: it compares equal to itself, so it never counts as a change.
    """
    budget = [_PICTURE_NODES] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0 or depth > _PICTURE_DEPTH or id(value) in path:
        return _OPAQUE
    if value is None or type(value) in (bool, int, str, bytes, complex):
        return (type(value).__name__, value)
    if type(value) is float:
        return ("float", repr(value))
    if isinstance(value, jax.core.Tracer):
        return ("tracer", id(value))
    if isinstance(value, jax.Array):
        if value.is_deleted():
            return ("deleted array", id(value))
        if is_key(value):
            return _array_picture("key", np.asarray(jax.random.key_data(value)))
        return _array_picture("jax.Array", np.asarray(value))
    if isinstance(value, (np.ndarray, np.generic)):
        return _array_picture(type(value).__name__, np.asarray(value))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _array_picture("torch.Tensor", value.detach().cpu().numpy())
    state = _generator_state(value)
    if state is not None:
        return (type(value).__qualname__, state)
    if inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value) or is_reference_function(value):
        return ("object", id(value))
    inner = path | {id(value)}

    def sub(v: Any) -> Any:
        return _picture(v, depth + 1, inner, budget)

    kind = type(value).__qualname__
    if isinstance(value, (list, tuple)):
        return ("items", kind, tuple((f"[{i}]", sub(v)) for i, v in enumerate(value)))
    if isinstance(value, dict):
        return ("items", kind, tuple((f"[{k!r}]", sub(k), sub(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return ("set", kind, frozenset(sub(v) for v in value))
    if dataclasses.is_dataclass(value):
        return (
            "items",
            kind,
            tuple((f".{f.name}", sub(getattr(value, f.name, None))) for f in dataclasses.fields(value)),
        )
    attributes = getattr(value, "__dict__", None)
    if type(attributes) is dict:
        return ("items", kind, tuple((f".{k}", sub(v)) for k, v in attributes.items()))
    return _OPAQUE


def _first_difference(before: Any, after: Any, where: str) -> str:
    """Where two different pictures first differ: ``where`` extended with the index, key or attribute."""
    if not (isinstance(before, tuple) and isinstance(after, tuple) and before[:2] == after[:2] == ("items", before[1])):
        return where
    labels_before = [item[0] for item in before[2]]
    labels_after = [item[0] for item in after[2]]
    if labels_before != labels_after:
        new = [label for label in labels_after if label not in labels_before]
        return f"{where}{new[0]}" if new else where
    for b, a in zip(before[2], after[2]):
        if b != a:
            return _first_difference(b[-1], a[-1], where + b[0])
    return where


def _module_state(module: ModuleType) -> dict[str, tuple[int, Any, Any]]:
    """name -> (identity, value, picture) of every module-level variable (functions, classes, modules left out)."""
    state = {}
    for name, value in vars(module).items():
        if name.startswith("__") or inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
            continue
        state[name] = (id(value), value, _picture(value))
    return state


def assert_module_state_unchanged(module: ModuleType, fn: Callable, *args: Any, **kwargs: Any) -> None:
    """Calling ``fn`` adds, rebinds or changes the contents of no module-level variable of ``module``.

    Judged by what the call changes: the same objects must be bound to the
    same names, and hold what they held (compared as :func:`_picture` reads
    them). Demo objects the functions leave alone (a dataset, a Flax model,
    an optax optimizer) pass, whatever their type.
    """
    before = _module_state(module)
    fn(*args, **kwargs)
    after = _module_state(module)
    check = f"{function_name(fn)} reads and writes no module-level state"
    advice = "keep everything the function needs in its arguments and everything it produces in its result"
    added = sorted(set(after) - set(before))
    if added:
        raise CheckFailure(check, f"calling {function_name(fn)} created the module-level variable {added[0]!r}", advice)
    for name, (ident, value, picture) in before.items():
        if name not in after:
            raise CheckFailure(check, f"calling {function_name(fn)} deleted the module-level variable {name!r}", advice)
        new_ident, new_value, new_picture = after[name]
        if new_ident != ident:
            raise CheckFailure(
                check,
                f"calling {function_name(fn)} rebound the module-level variable {name!r}: "
                f"{describe(value)} before, {describe(new_value)} after",
                advice,
            )
        if new_picture != picture:
            where = _first_difference(picture, new_picture, name)
            raise CheckFailure(
                check,
                f"calling {function_name(fn)} changed the contents of the module-level variable {name!r}"
                + (f" (at {where})" if where != name else ""),
                advice,
            )


def assert_no_leaked_tracers(
    fn: Callable,
    *args: Any,
    static_argnums: tuple[int, ...] = (),
    module: ModuleType | None = None,
    **kwargs: Any,
) -> None:
    """A ``jax.jit`` of ``fn`` leaks no tracer (``jax.checking_leaks``), not even into module globals.

    Leaks are found while tracing: the jitted function is traced under the leak checker, not compiled nor run
    (a program per shape that nothing else runs; and a function that donates its arguments keeps them)."""
    check = f"{function_name(fn)} lets no traced value escape when jitted"
    advice = (
        "a value computed inside jit is a tracer: return it instead of storing it in a global, "
        "a list outside the function or an attribute"
    )
    from autograder.checks.structure import jit_once

    jitted = fn if hasattr(fn, "lower") else jit_once(fn, static_argnums)
    # tracers some other function leaked earlier are not this function's fault
    before = {name: tracer_ids(value) for name, value in vars(module).items()} if module is not None else {}
    try:
        with jax.checking_leaks():
            getattr(jitted, "trace", jitted)(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - JAX reports leaks as plain exceptions
        if "leak" in str(err).lower():
            raise CheckFailure(check, f"{function_name(fn)} leaked a tracer out of jax.jit", advice) from None
        from autograder.checks.structure import jit_error_explanation

        if jit_error_explanation(err) is None:
            raise
        return  # not jit-compatible at all: the jit check reports that, not this one
    if module is not None:
        for name, value in vars(module).items():
            if not name.startswith("__") and tracer_ids(value) - before.get(name, set()):
                raise CheckFailure(
                    check,
                    f"after a jitted call of {function_name(fn)} the module-level {name!r} holds a tracer",
                    advice,
                )


def tracer_ids(value: Any) -> set[int]:
    """Ids of the JAX tracers in ``value`` (looking a few levels into lists, tuples, sets and dicts)."""
    found: set[int] = set()

    def visit(v: Any, seen: set[int], depth: int) -> None:
        if isinstance(v, jax.core.Tracer):
            found.add(id(v))
            return
        if depth > 4 or id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, (list, tuple, set)):
            for item in v:
                visit(item, seen, depth + 1)
        elif isinstance(v, dict):
            for item in v.values():
                visit(item, seen, depth + 1)

    visit(value, set(), 0)
    return found
