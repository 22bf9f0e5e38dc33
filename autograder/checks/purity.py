"""Purity: the result depends only on the arguments, and nothing else changes.

Each check is its own function with its own message:

- :func:`assert_arguments_unchanged`  no argument (array, list, dict) is modified
- :func:`assert_deterministic`        the same arguments give the same result twice
- :func:`assert_no_hidden_rng`        NumPy's, Python's and torch's global RNGs do not matter
- :func:`assert_module_state_unchanged` no module-level variable is added, rebound or mutated
- :func:`assert_no_leaked_tracers`    nothing traced escapes a ``jax.jit`` of the function

:func:`assert_pure` runs them all.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import random
import sys
from types import ModuleType
from typing import Any, Callable

import jax
import numpy as np

from autograder.core.failures import CheckFailure
from autograder.checks.values import function_name, assert_trees_close, describe, is_key


def _argument_names(fn: Callable, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        return list(bound.arguments.items())
    except (TypeError, ValueError):
        return [(f"argument {i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _snapshot(value: Any) -> Any:
    """A deep copy of the mutable parts (NumPy arrays, lists, dicts) of a value."""
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if type(value) in (list, tuple):
        return type(value)(_snapshot(v) for v in value)
    if type(value) is dict:
        return {k: _snapshot(v) for k, v in value.items()}
    return value


def _changes(before: Any, after: Any, where: str) -> str | None:
    """Where ``after`` differs from the snapshot ``before``, or None."""
    if isinstance(before, np.ndarray):
        if not isinstance(after, np.ndarray) or after.shape != before.shape or after.dtype != before.dtype:
            return f"{where} was replaced or reshaped"
        same = np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
        if not same:
            idx = tuple(int(i) for i in np.argwhere(before != after)[0]) if before.ndim else ()
            return f"{where}{list(idx) if idx else ''} was {before[idx].item()!r} before the call and is {after[idx].item()!r} after it"
        return None
    if type(before) in (list, tuple):
        if type(after) is not type(before) or len(after) != len(before):
            return f"{where} changed length from {len(before)} to {len(after) if hasattr(after, '__len__') else '?'}"
        for i, (b, a) in enumerate(zip(before, after)):
            found = _changes(b, a, f"{where}[{i}]")
            if found:
                return found
        return None
    if type(before) is dict:
        if set(before) != set(after):
            return f"{where} changed keys from {sorted(map(str, before))} to {sorted(map(str, after))}"
        for k in before:
            found = _changes(before[k], after[k], f"{where}[{k!r}]")
            if found:
                return found
    return None


def assert_arguments_unchanged(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Calling ``fn`` leaves every NumPy array, list and dict it was given as it was."""
    named = _argument_names(fn, args, kwargs)
    before = [(name, _snapshot(value)) for name, value in named]
    result = fn(*args, **kwargs)
    for (name, snap), (_, value) in zip(before, named):
        found = _changes(snap, value, name)
        if found:
            raise CheckFailure(
                f"{function_name(fn)} leaves its arguments unchanged",
                f"{function_name(fn)} modified its argument: {found}",
                "JAX functions are pure: build and return a new value instead of writing into the input "
                "(for arrays: x.at[i].set(v) returns a new array)",
            )
    return result


def assert_deterministic(fn: Callable, *args: Any, **kwargs: Any) -> None:
    """Two calls with the same arguments give the same result."""
    first = fn(*_snapshot(args), **kwargs)
    second = fn(*_snapshot(args), **kwargs)
    try:
        assert_trees_close(second, first, rtol=0, atol=0, name="second result")
    except CheckFailure as failure:
        raise CheckFailure(
            f"{function_name(fn)} gives the same result when called twice with the same arguments",
            f"{function_name(fn)} returned something different the second time it was called with the same arguments",
            f"{failure.problem}\nthe function keeps hidden state between calls (a global, a counter, a cache "
            "or a random generator); make the result depend only on the arguments",
        ) from None


_RNGS: dict[str, tuple[Callable[[], Any], Callable[[Any], None], Callable[[int], None]]] = {
    "NumPy's global RNG (np.random)": (np.random.get_state, np.random.set_state, np.random.seed),
    "Python's random module": (random.getstate, random.setstate, random.seed),
}


def _torch_rng():
    """torch's global RNG, if torch is in use (importing it just for this would cost seconds)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return (torch.get_rng_state, torch.set_rng_state, torch.manual_seed)


@contextlib.contextmanager
def _preserved_global_rngs():
    rngs = dict(_RNGS)
    torch_rng = _torch_rng()
    if torch_rng:
        rngs["torch's global RNG (torch.manual_seed)"] = torch_rng
    saved = {name: get() for name, (get, _, _) in rngs.items()}
    try:
        yield rngs
    finally:
        for name, (_, set_, _) in rngs.items():
            set_(saved[name])


def assert_no_hidden_rng(fn: Callable, *args: Any, **kwargs: Any) -> None:
    """The result does not change when only a global random generator changes."""
    with _preserved_global_rngs() as rngs:

        def seed_all(value: int, differently: str | None = None) -> None:
            for rng_name, (_, _, seed) in rngs.items():
                seed(value + 1 if rng_name == differently else value)

        seed_all(1234)
        baseline = fn(*_snapshot(args), **kwargs)
        for name in rngs:
            seed_all(1234, differently=name)
            again = fn(*_snapshot(args), **kwargs)
            try:
                assert_trees_close(again, baseline, rtol=0, atol=0)
            except CheckFailure:
                raise CheckFailure(
                    f"{function_name(fn)} does not depend on hidden random state",
                    f"the result of {function_name(fn)} changed when only {name} was re-seeded",
                    "JAX randomness is explicit: take a key argument and draw with jax.random; "
                    "never use np.random, random or torch's generator inside the function",
                ) from None


def _state_snapshot(module: ModuleType) -> dict[str, Any]:
    snap = {}
    for name, value in vars(module).items():
        if name.startswith("__") or inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
            continue
        try:
            copied = copy.deepcopy(value)
        except Exception:  # noqa: BLE001 - not deep-copyable (e.g. holds a tracer): copy one level
            copied = type(value)(value) if type(value) in (list, dict, set) else None
        snap[name] = (id(value), value, copied)
    return snap


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer):
        if not isinstance(b, jax.Array) or isinstance(b, jax.core.Tracer):
            return False
        if is_key(a) or is_key(b):
            return is_key(a) and is_key(b) and np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if type(a) in (list, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(x is y or _equal(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(a[k] is b[k] or _equal(a[k], b[k]) for k in a)
    if type(a) is set:
        return type(b) is set and a == b
    if type(a) in (int, float, str, bool, bytes, type(None)):
        return type(a) is type(b) and a == b
    return a is b


def assert_module_state_unchanged(module: ModuleType, fn: Callable, *args: Any, **kwargs: Any) -> None:
    """Calling ``fn`` adds, rebinds or mutates no module-level variable of ``module``."""
    before = _state_snapshot(module)
    fn(*args, **kwargs)
    after = _state_snapshot(module)
    check = f"{function_name(fn)} reads and writes no module-level state"
    advice = "keep everything the function needs in its arguments and everything it produces in its result"
    added = sorted(set(after) - set(before))
    if added:
        raise CheckFailure(check, f"calling {function_name(fn)} created the module-level variable {added[0]!r}", advice)
    for name, (ident, value, copied) in before.items():
        if name not in after:
            raise CheckFailure(check, f"calling {function_name(fn)} deleted the module-level variable {name!r}", advice)
        new_ident, new_value, _ = after[name]
        if new_ident != ident:
            raise CheckFailure(
                check,
                f"calling {function_name(fn)} rebound the module-level variable {name!r}: "
                f"{describe(value)} before, {describe(new_value)} after",
                advice,
            )
        if copied is not None and not _equal(copied, new_value):
            raise CheckFailure(check, f"calling {function_name(fn)} changed the contents of the module-level variable {name!r}", advice)


def assert_no_leaked_tracers(
    fn: Callable,
    *args: Any,
    static_argnums: tuple[int, ...] = (),
    module: ModuleType | None = None,
    **kwargs: Any,
) -> None:
    """A ``jax.jit`` of ``fn`` leaks no tracer (``jax.checking_leaks``), not even into module globals."""
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
            jitted(*args, **kwargs)
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
                    check, f"after a jitted call of {function_name(fn)} the module-level {name!r} holds a tracer", advice
                )


def assert_pure(fn: Callable, *args: Any, module: ModuleType | None = None, **kwargs: Any) -> None:
    """All the purity checks but leaks (which need a jit-compatible function)."""
    assert_arguments_unchanged(fn, *args, **kwargs)
    assert_deterministic(fn, *args, **kwargs)
    assert_no_hidden_rng(fn, *args, **kwargs)
    if module is not None:
        assert_module_state_unchanged(module, fn, *args, **kwargs)


def _rng_states_equal(a: Any, b: Any) -> bool:
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # torch's state is a uint8 tensor
        return bool((a == b).all()) if a.shape == b.shape else False
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_rng_states_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def assert_global_rngs_untouched(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Calling ``fn`` neither draws from nor re-seeds NumPy's, Python's or torch's global RNG.

    For functions whose result cannot be compared (a dataset, a loader): a
    function seeding ``np.random`` or ``torch`` globally can reproduce the
    right numbers, but it changes the random state of everyone else.
    Returns ``fn``'s result.
    """
    with _preserved_global_rngs() as rngs:
        for _, _, seed in rngs.values():
            seed(4321)
        before = {name: get() for name, (get, _, _) in rngs.items()}
        result = fn(*args, **kwargs)
        for name, (get, _, _) in rngs.items():
            if not _rng_states_equal(before[name], get()):
                raise CheckFailure(
                    f"{function_name(fn)} leaves the global random generators alone",
                    f"calling {function_name(fn)} changed the state of {name}: it seeds or draws from a global generator",
                    "use a generator of your own, made from the seed argument "
                    "(np.random.RandomState(seed), torch.Generator().manual_seed(seed)), never the global one",
                )
    return result


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


def fresh_copy(tree: Any) -> Any:
    """``tree`` rebuilt: new containers, every JAX and NumPy array leaf in a new buffer (other leaves shared).

    Give a function a fresh copy when it may donate its arguments
    (``jax.jit(..., donate_argnums=...)``: donation deletes the buffers it is
    given) or write into them: the check still needs the originals, and one
    impure call must not change what the next check sees.
    """
    return jax.tree_util.tree_map(lambda x: x.copy() if isinstance(x, (jax.Array, np.ndarray)) else x, tree)


def _leaf_snapshot(tree: Any) -> tuple[Any, list[tuple[str, Any, Any]]]:
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    snap = []
    for path, leaf in leaves:
        copy_ = None
        if isinstance(leaf, np.ndarray):
            copy_ = np.array(leaf, copy=True)
        elif isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer) and not leaf.is_deleted():
            copy_ = np.asarray(jax.random.key_data(leaf) if is_key(leaf) else leaf).copy()
        snap.append((jax.tree_util.keystr(path), leaf, copy_))
    return treedef, snap


def assert_pytree_arguments_unchanged(
    fn: Callable, *args: Any, allow_donation: bool = True, **kwargs: Any
) -> Any:
    """Calling ``fn`` leaves every argument pytree (a TrainState, a batch) as it was; returns the result.

    Catches in-place writes into the NumPy arrays, dicts and lists inside an
    argument, and leaves swapped inside a mutable container. With
    ``allow_donation`` a JAX array the function donated (deleted) counts as
    unchanged: donation is an explicit promise that the caller will not use
    it again. Without it (an evaluation step must leave the state usable) a
    deleted buffer fails.
    """
    named = _argument_names(fn, args, kwargs)
    before = [(name, value, _leaf_snapshot(value)) for name, value in named]
    result = fn(*args, **kwargs)
    check = f"{function_name(fn)} leaves its arguments unchanged"
    advice = (
        "a train or eval step is a pure function: return a new state (state.replace(...), "
        "state.apply_gradients(...)) and never write into the one you were given"
    )
    for name, value, (treedef, snap) in before:
        treedef_after, snap_after = _leaf_snapshot(value)
        if treedef_after != treedef:
            raise CheckFailure(
                check, f"{function_name(fn)} changed the structure of its argument {name}: {describe(value)} now", advice
            )
        for (path, leaf, copied), (_, leaf_after, _) in zip(snap, snap_after):
            where = f"{name}{path}"
            if leaf_after is not leaf:
                raise CheckFailure(check, f"{function_name(fn)} replaced {where} inside its argument", advice)
            if isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer) and leaf.is_deleted():
                if copied is not None and not allow_donation:
                    raise CheckFailure(
                        check,
                        f"{function_name(fn)} deleted the buffer of {where}: it donates its argument {name}",
                        "the caller still needs this argument after the call (evaluating must not consume the "
                        "training state): remove donate_argnums",
                    )
                continue
            if copied is not None:
                now = np.asarray(jax.random.key_data(leaf) if is_key(leaf) else leaf)
                if not np.array_equal(copied, now, equal_nan=copied.dtype.kind in "fc"):
                    raise CheckFailure(check, f"{function_name(fn)} modified {where} in place", advice)
    return result


def cold(fn: Callable) -> Callable:
    """``fn`` itself, with its ``jax.jit`` caches cleared, so that its next call runs its Python body again.

    A warm jitted function runs no Python at all: a side effect of tracing (a
    tracer appended to a global list) happened during some earlier check and
    would go unseen. Clear first, then check module state or leaks.
    """
    clear = getattr(fn, "clear_cache", None)
    if callable(clear):
        clear()
    return fn
