"""Recorders: transforms of the student's function whose outputs are what a check decided by values needs (its
result twice, the arguments as the call left them, the global generators after it), recorded as data by the
grading process and read alike on the trusted side.

- :func:`cold`                     the function as a first call sees it (no warm cache of its own)
- :func:`called_twice`             ``(result, result again, arguments left, results with a generator re-seeded)``
- :func:`arguments_after_the_call` the result and the arguments as the call left them
- :func:`called_twice_on_copies`   two calls on copies of the same arguments
- :func:`global_rngs_after`        the global generators' states after the call
- :func:`changes`, :func:`rng_states_equal`  what two recorded values differ by
- :func:`assert_arguments_unchanged_as_values`, :func:`assert_as_before`  the arguments left by the call, judged
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from autograder.checks.values import describe, function_name, is_key
from autograder.core.failures import CheckFailure
from autograder.runtime import global_rngs
from autograder.runtime.copies import fresh_copy


def changes(before: Any, after: Any, where: str) -> str | None:
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
            found = changes(b, a, f"{where}[{i}]")
            if found:
                return found
        return None
    if type(before) is dict:
        if set(before) != set(after):
            return f"{where} changed keys from {sorted(map(str, before))} to {sorted(map(str, after))}"
        for k in before:
            found = changes(before[k], after[k], f"{where}[{k!r}]")
            if found:
                return found
    return None


def rng_states_equal(a: Any, b: Any) -> bool:
    """Two states of a random generator (torch's tensor, NumPy's and Python's tuples) are the same."""
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # torch's state is a uint8 tensor
        return bool((a == b).all()) if a.shape == b.shape else False
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(rng_states_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


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


# Decided on the trusted side, from values (issue 42) --------------------------------------------------------
#
# The checks above watch the function in the student's process: their verdict is the process's word. The
# helpers below make the evidence *values*: a form of the function (``called_twice``) whose outputs the
# grading process records (``structure.transformed_once``) and the trusted side compares, replayed, with the
# same form of the reference (``oracle.transformed``). What values cannot show (a write to module state, a
# leaked tracer) stays with the checks above.

CALLED_TWICE = "called twice"
_FIRST_SEED, _SECOND_SEED = 1234, 1235


def _as_left(tree: Any) -> Any:
    """The arguments as they are after a call, as data: NumPy arrays (which a call can write into) copied; a
    JAX array whose buffer the call deleted (donated) becomes the text ``"<deleted>"``; an argument that is a
    function (the check's own ``f``) is left out (``None``: it is not data, and not the function's to change)."""
    if isinstance(tree, tuple):
        return tuple(None if callable(x) and not hasattr(x, "shape") else _as_left_tree(x) for x in tree)
    return _as_left_tree(tree)


def _as_left_tree(tree: Any) -> Any:
    def leaf(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return np.array(x, copy=True)
        if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.is_deleted():
            return "<deleted>"
        return x

    return jax.tree_util.tree_map(leaf, tree)


ARGUMENTS_LEFT = "the arguments as the call left them"


def arguments_left(fn: Callable) -> Callable:
    """The transform (label :data:`ARGUMENTS_LEFT`) that calls ``fn`` and returns only its arguments as the call left
    them (:func:`called_twice`'s third part, alone): a check of the arguments does not record the result, so a
    result that is not data (a torch tensor) fails only the checks of results."""

    def called(*args: Any) -> tuple:
        fn(*args)
        return _as_left(args)

    return called


def called_twice(fn: Callable) -> Callable:
    """The form of ``fn`` that :func:`assert_pure_by_values` records: called on the arguments with every global
    random generator seeded alike, then again on fresh copies of them, seeded alike again, and once more for each
    generator with that one alone seeded differently. It returns ``(first result, second result, the arguments as
    the first call left them, {generator: the result with only that generator seeded differently})``.

    A pure function gives the same result every time and leaves its arguments as they were."""

    def twice(*args: Any) -> tuple:
        originals = fresh_copy(args)
        with global_rngs.preserved() as rngs:

            def seed_all(differently: str | None = None) -> None:
                for name, (_, _, seed) in rngs.items():
                    seed(_SECOND_SEED if name == differently else _FIRST_SEED)

            seed_all()
            first = fn(*args)
            left = _as_left(args)
            seed_all()
            second = fn(*fresh_copy(originals))
            reseeded = {}
            for name in rngs:
                seed_all(differently=name)
                reseeded[name] = fn(*fresh_copy(originals))
        return first, second, left, reseeded

    return twice


# Arguments unchanged, judged from values (issue 42) ---------------------------------------------------------------

ARGUMENTS_AFTER = "arguments after the call"
DELETED = "<a donated (deleted) buffer>"  # what a deleted JAX array is recorded as: its value is gone


def arguments_after_the_call(fn: Callable) -> Callable:
    """The transform (for ``structure.transformed_once``, label :data:`ARGUMENTS_AFTER`) that calls ``fn`` and
    returns its positional arguments as they are after the call, a donated (deleted) buffer as :data:`DELETED`:
    recorded as values, so that the trusted side judges from them whether the call changed its arguments."""

    def called(*args: Any) -> Any:
        fn(*args)
        return as_after_the_call(list(args))

    return called


def _after(leaf: Any) -> Any:
    if isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer) and leaf.is_deleted():
        return DELETED
    return leaf


def _leaf_value(leaf: Any) -> tuple[str, Any]:
    """(kind, value) of an argument's leaf: what "unchanged" compares."""
    if isinstance(leaf, str) and leaf == DELETED:
        return "deleted", None
    if isinstance(leaf, jax.Array):  # copies: a donated buffer goes, a NumPy array may be written into
        return "jax.Array", np.array(jax.random.key_data(leaf) if is_key(leaf) else leaf, copy=True)
    if isinstance(leaf, (np.ndarray, np.generic)):
        return type(leaf).__name__, np.array(leaf, copy=True)
    return type(leaf).__name__, leaf


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - not comparable: not judged
        return True


def assert_arguments_unchanged_as_values(
    fn: Callable, *args: Any, names: tuple[str, ...], allow_donation: bool = True
) -> None:
    """Calling ``fn(*args)`` leaves every argument pytree as it was, judged from values: the arguments as they are
    after the call are recorded (:func:`arguments_after_the_call`) and compared leaf by leaf with what they were
    before (the trusted side compares its own inputs with the recorded ones). ``names`` names the arguments.

    Catches writes into the NumPy arrays, dicts and lists inside an argument and leaves swapped for others (a
    different value, or an array of another kind). With ``allow_donation`` a JAX array the function donated
    (deleted) counts as unchanged (a promise that the caller will not use it again); without it (an evaluation
    step must leave the state usable) a deleted buffer fails."""
    from autograder.checks.structure import transformed_once

    before = fresh_copy(args)
    after = transformed_once(fn, ARGUMENTS_AFTER, arguments_after_the_call)(*args)
    assert_as_before(function_name(fn), before, after, names=names, allow_donation=allow_donation)


def as_after_the_call(tree: Any) -> Any:
    """``tree`` (arguments after a call) as values: a donated (deleted) buffer as :data:`DELETED`."""
    return jax.tree_util.tree_map(_after, tree)


def assert_as_before(
    name: str, before: Any, after: Any, *, names: tuple[str, ...], allow_donation: bool = True
) -> None:
    """``after`` (the arguments of the function ``name`` as they are after its call, :func:`as_after_the_call`, as
    recorded) holds what ``before`` (the same arguments as they were: a copy made before the call) held, leaf by
    leaf; see :func:`assert_arguments_unchanged_as_values`."""
    check = f"{name} leaves its arguments unchanged"
    advice = (
        "a train or eval step is a pure function: return a new state (state.replace(...), "
        "state.apply_gradients(...)) and never write into the one you were given"
    )
    if not isinstance(after, (list, tuple)) or len(after) != len(before):
        raise CheckFailure(check, f"the arguments of {name} after the call were not recorded as data", advice)
    for arg_name, was_value, value in zip(names, before, after):
        leaves = [
            (jax.tree_util.keystr(p), _leaf_value(v)) for p, v in jax.tree_util.tree_flatten_with_path(was_value)[0]
        ]
        now = [(jax.tree_util.keystr(p), _leaf_value(v)) for p, v in jax.tree_util.tree_flatten_with_path(value)[0]]
        if [path for path, _ in now] != [path for path, _ in leaves]:
            raise CheckFailure(
                check, f"{name} changed the structure of its argument {arg_name}: {describe(value)} now", advice
            )
        for (path, (kind, was)), (_, (kind_now, is_now)) in zip(leaves, now):
            where = f"{arg_name}{path}"
            if kind_now == "deleted":
                if not allow_donation:
                    raise CheckFailure(
                        check,
                        f"{name} deleted the buffer of {where}: it donates its argument {arg_name}",
                        "the caller still needs this argument after the call (evaluating must not consume the "
                        "training state): remove donate_argnums",
                    )
                continue
            if kind_now != kind or (kind == "jax.Array" and not _same(was, is_now)):
                raise CheckFailure(check, f"{name} replaced {where} inside its argument", advice)
            if not _same(was, is_now):
                found = changes(was, is_now, where) if isinstance(was, np.ndarray) else None
                found = found or f"{where} was {was!r} before the call and is {is_now!r} after it"
                raise CheckFailure(check, f"{name} modified its argument: {found}", advice)


CALLED_TWICE_ON_COPIES = "called twice on copies"


def called_twice_on_copies(fn: Callable) -> Callable:
    """The transform (for ``structure.transformed_once``, label :data:`CALLED_TWICE_ON_COPIES`) that calls ``fn`` twice on
    fresh copies of the same arguments and returns both results: recorded as values, so that the trusted side
    judges from them whether the same arguments gave the same result."""

    def twice(*args: Any) -> tuple[Any, Any]:
        return fn(*fresh_copy(args)), fn(*fresh_copy(args))

    return twice


GLOBAL_RNGS_AFTER = "global random generators after"
_UNTOUCHED_SEED = 4321


def _rng_state_as_data(state: Any) -> Any:
    """A generator's state as plain data (torch's is a uint8 tensor; NumPy's and Python's are tuples)."""
    if isinstance(state, tuple):
        return tuple(_rng_state_as_data(s) for s in state)
    if hasattr(state, "numpy") and hasattr(state, "dtype"):
        return np.array(state.numpy(), copy=True)
    return state


def seeded_rng_states() -> dict[str, Any]:
    """Every global generator's state right after seeding it with the check's seed (what an untouched one holds)."""
    with global_rngs.preserved() as rngs:
        for _, _, seed in rngs.values():
            seed(_UNTOUCHED_SEED)
        return {name: _rng_state_as_data(get()) for name, (get, _, _) in rngs.items()}


def global_rngs_after(fn: Callable) -> Callable:
    """The form of ``fn`` that :func:`assert_global_rngs_untouched_by_values` records: the global generators
    seeded with the check's seed, ``fn`` called (its result dropped: a loader or a dataset), and the state of
    every generator after the call returned as data."""

    def states_after(*args: Any, **kwargs: Any) -> dict[str, Any]:
        with global_rngs.preserved() as rngs:
            for _, _, seed in rngs.values():
                seed(_UNTOUCHED_SEED)
            fn(*args, **kwargs)
            return {name: _rng_state_as_data(get()) for name, (get, _, _) in rngs.items()}

    return states_after
