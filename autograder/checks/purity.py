"""Purity: the result depends only on the arguments, and nothing else changes.

Each check is its own function with its own message:

- :func:`assert_arguments_unchanged`  no argument (array, list, dict) is modified
- :func:`assert_deterministic`        the same arguments give the same result twice
- :func:`assert_no_hidden_rng`        NumPy's, Python's and torch's global RNGs do not matter
- :func:`assert_module_state_unchanged` no module-level variable is added, rebound or mutated
- :func:`assert_no_leaked_tracers`    nothing traced escapes a ``jax.jit`` of the function
  (both in :mod:`autograder.checks.module_state`, named here too)
- :func:`assert_pure_by_values`       the same, decided on the trusted side from recorded values
- :func:`assert_result_repeats`       two recorded results of one call, and those with a generator re-seeded, agree

:func:`assert_pure` runs them all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any, cast

import jax
import numpy as np

from autograder.checks.module_state import (  # noqa: F401  (public here: check files call purity.<name>)
    assert_module_state_unchanged,
    assert_no_leaked_tracers,
    tracer_ids,
)
from autograder.checks.values import assert_trees_close, describe, function_name, is_key
from autograder.core.failures import CheckFailure
from autograder.runtime import global_rngs
from autograder.runtime.copies import fresh_copy  # noqa: F401  (public here: check files call purity.fresh_copy)


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
        assert_trees_close(second, first, rtol=0, atol=0, name="second result", source="the first result")
    except CheckFailure as failure:
        raise CheckFailure(
            f"{function_name(fn)} gives the same result when called twice with the same arguments",
            f"{function_name(fn)} returned something different the second time it was called with the same arguments",
            f"{failure.problem}\nthe function keeps hidden state between calls (a global, a counter, a cache "
            "or a random generator); make the result depend only on the arguments",
        ) from None


def assert_no_hidden_rng(fn: Callable, *args: Any, **kwargs: Any) -> None:
    """The result does not change when only a global random generator changes."""
    with global_rngs.preserved() as rngs:

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
    with global_rngs.preserved() as rngs:
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


def assert_pytree_arguments_unchanged(fn: Callable, *args: Any, allow_donation: bool = True, **kwargs: Any) -> Any:
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
                check,
                f"{function_name(fn)} changed the structure of its argument {name}: {describe(value)} now",
                advice,
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
                found = _changes(was, is_now, where) if isinstance(was, np.ndarray) else None
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


def _names_of(fn: Callable, args: tuple) -> list[str]:
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional[: len(args)] if len(positional) >= len(args) else [f"argument {i}" for i in range(len(args))]


def _argument_left_as_it_was(name: str, given: Any, left: Any) -> str | None:
    """Where the argument ``name`` differs after the call from what it was given, or None: as
    :func:`assert_arguments_unchanged` says it for NumPy arrays, lists, tuples and dicts, then leaf by leaf."""
    from autograder.checks.values import _flatten

    try:
        found = _changes(given, left, name)
    except Exception:  # noqa: BLE001 - a recorded value of another shape: read leaf by leaf below
        found = None
    if found:
        return found

    try:
        given_leaves, given_def = _flatten(given)
        left_leaves, left_def = _flatten(left)
    except Exception:  # noqa: BLE001 - a recorded value that is not a pytree
        return f"{name} was replaced by {describe(left)}"
    if [p for p, _ in given_leaves] != [p for p, _ in left_leaves] or given_def.num_leaves != left_def.num_leaves:
        return f"{name} changed its structure: {describe(given)} before the call, {describe(left)} after it"
    for (path, before), (_, after) in zip(given_leaves, left_leaves):
        where = f"{name}{path}"
        if isinstance(after, str) and after == "<deleted>":
            return f"{where} was deleted (its buffer donated) by the call"
        try:
            b = np.asarray(jax.random.key_data(before) if is_key(before) else before)
            a = np.asarray(jax.random.key_data(after) if is_key(after) else after)
        except Exception:  # noqa: BLE001 - not an array
            return f"{where} was replaced by {describe(after)}"
        if isinstance(before, np.ndarray) != isinstance(after, np.ndarray) or (
            a.shape != b.shape or a.dtype != b.dtype and not (b.ndim == 0 and type(before) in (int, float, bool))
        ):
            return f"{where} was replaced: {describe(before)} before the call, {describe(after)} after it"
        if not np.array_equal(a, b, equal_nan=b.dtype.kind in "fc"):
            idx = tuple(int(i) for i in np.argwhere(a != b)[0]) if b.ndim else ()
            return (
                f"{where} was replaced or written in place: {where}{list(idx) if idx else ''} was "
                f"{b[idx].item()!r} before the call and is {a[idx].item()!r} after it"
            )
    return None


def _called_twice_of(
    fn: Callable, args: tuple, first: tuple[str, Callable[[Callable], Callable]] | None = None
) -> tuple[tuple, str, tuple]:
    """The student's :func:`called_twice` form on ``args``, recorded (``structure.transformed_once``): ``(got, name,
    the arguments as they were before the call)``. ``first``, ``(label, form)``: the form of ``form(fn)``
    (``structure.eagerly``, say)."""
    given = fresh_copy(args)  # the call may write into args themselves
    from autograder.checks.structure import transformed_once

    shown = function_name(fn)
    label, form = CALLED_TWICE, cast(Callable[[Callable], Callable], called_twice)
    if first is not None:
        label, form = f"{first[0]}, {CALLED_TWICE}", lambda f: called_twice(first[1](f))
    got = transformed_once(fn, label, form)(*args)
    if not (isinstance(got, tuple) and len(got) == 4 and isinstance(got[3], dict)):
        raise CheckFailure(
            f"{shown} gives its results as data",
            f"{shown}'s results could not be recorded as data (arrays, numbers, containers)",
            "return JAX or NumPy arrays, numbers, or tuples, lists and dicts of them",
        )
    return got, shown, given


def _assert_arguments_left(fn: Callable, shown: str, args: tuple, left: Any) -> None:
    if not (isinstance(left, tuple) and len(left) == len(args)):
        raise CheckFailure(
            f"{shown} leaves its arguments unchanged", f"{shown}'s arguments could not be read after the call"
        )
    for name, given, after in zip(_names_of(fn, args), args, left):
        if callable(given) and not hasattr(given, "shape"):
            continue  # a function the check passes (left out by _as_left)
        found = _argument_left_as_it_was(name, given, after)
        if found:
            raise CheckFailure(
                f"{shown} leaves its arguments unchanged",
                f"{shown} modified its argument: {found}",
                "JAX functions are pure: build and return a new value instead of writing into the input "
                "(for arrays: x.at[i].set(v) returns a new array; for a dict of parameters: a new dict, "
                "{k: ... for k in params}, or jax.tree_util.tree_map)",
            )


def assert_pure_by_values(
    fn: Callable, *args: Any, first: tuple[str, Callable[[Callable], Callable]] | None = None
) -> None:
    """``fn`` leaves its arguments as they were, and gives the same result when called again on the same
    arguments with NumPy's, Python's and torch's global generators seeded differently: decided from the values
    :func:`called_twice` records, which the trusted side reads alike (the arguments are the check's own, drawn
    there too). Whether the result is right is the correctness checks'. What values cannot show (a write to
    module state, a leaked tracer) is :func:`assert_module_state_unchanged`'s and :func:`assert_no_leaked_tracers`'
    (observed). ``first``, ``(label, form)``, judges ``form(fn)`` (``("eagerly", structure.eagerly)``). Mark the
    check ``@pytest.mark.decided("values")``."""
    got, shown, given = _called_twice_of(fn, args, first)
    result, second, left, reseeded = got
    _assert_arguments_left(fn, shown, given, left)
    assert_result_repeats(shown, result, second, reseeded)


def assert_result_repeats(shown: str, result: Any, second: Any, reseeded: dict[str, Any]) -> None:
    """The values :func:`called_twice` recorded of ``shown``: the ``second`` result of the same call is ``result``,
    and so is each result of a call with only one global generator re-seeded (``reseeded``: generator -> result)."""
    try:
        assert_trees_close(second, result, rtol=0, atol=0, name="second result", source="the first result")
    except CheckFailure as failure:
        raise CheckFailure(
            f"{shown} gives the same result when called twice with the same arguments",
            f"{shown} returned something different the second time it was called with the same arguments",
            f"{failure.problem}\nthe function keeps hidden state between calls (a global, a counter, a cache "
            "or a random generator); make the result depend only on the arguments",
        ) from None
    for name, again in reseeded.items():
        try:
            assert_trees_close(again, result, rtol=0, atol=0)
        except CheckFailure:
            raise CheckFailure(
                f"{shown} does not depend on hidden random state",
                f"the result of {shown} changed when only {name} was re-seeded",
                "JAX randomness is explicit: take a key argument and draw with jax.random; "
                "never use np.random, random or torch's generator inside the function",
            ) from None


def assert_arguments_unchanged_by_values(fn: Callable, *args: Any) -> Any:
    """``fn`` leaves its arguments as they were: decided from the values :func:`called_twice` records (its third
    part, the arguments as the call left them); returns the first result. Mark the check
    ``@pytest.mark.decided("values")``."""
    got, shown, given = _called_twice_of(fn, args)
    _assert_arguments_left(fn, shown, given, got[2])
    return got[0]


GLOBAL_RNGS_AFTER = "global random generators after"
_UNTOUCHED_SEED = 4321


def _rng_state_as_data(state: Any) -> Any:
    """A generator's state as plain data (torch's is a uint8 tensor; NumPy's and Python's are tuples)."""
    if isinstance(state, tuple):
        return tuple(_rng_state_as_data(s) for s in state)
    if hasattr(state, "numpy") and hasattr(state, "dtype"):
        return np.array(state.numpy(), copy=True)
    return state


def _seeded_rng_states() -> dict[str, Any]:
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


def assert_global_rngs_untouched_by_values(
    fn: Callable, *args: Any, first: tuple[str, Callable[[Callable], Callable]] | None = None, **kwargs: Any
) -> None:
    """Calling ``fn`` neither draws from nor re-seeds NumPy's, Python's or torch's global generator: decided from
    the states :func:`global_rngs_after` records, compared (on the trusted side too) with the states of generators
    seeded alike and left alone. ``first``, ``(label, form)``, calls ``form(fn)`` instead (arguments that are not
    data, a dataset say, made inside the form from data). Mark the check ``@pytest.mark.decided("values")``."""
    from autograder.checks.structure import transformed_once

    shown = function_name(fn)
    label, form = GLOBAL_RNGS_AFTER, cast(Callable[[Callable], Callable], global_rngs_after)
    if first is not None:
        label, form = f"{first[0]}, then {GLOBAL_RNGS_AFTER}", lambda f: global_rngs_after(first[1](f))
    after = transformed_once(fn, label, form)(*args, **kwargs)
    untouched = _seeded_rng_states()
    for name, state in untouched.items():
        got = after.get(name) if isinstance(after, dict) else None
        if got is None or not _rng_states_equal(state, got):
            raise CheckFailure(
                f"{shown} leaves the global random generators alone",
                f"calling {shown} changed the state of {name}: it seeds or draws from a global generator",
                "use a generator of your own, made from the seed argument "
                "(np.random.RandomState(seed), torch.Generator().manual_seed(seed)), never the global one",
            )


def assert_deterministic_as_values(
    fn: Callable,
    *args: Any,
    label: str = CALLED_TWICE_ON_COPIES,
    transform: Callable[[Callable], Callable] = called_twice_on_copies,
    check: str | None = None,
    problem: str | None = None,
    advice: str | None = None,
) -> None:
    """Two calls with the same arguments give the same result, judged from values: both results are recorded
    (``transform``, by default :func:`called_twice_on_copies`, under ``label``) and compared. A check that calls ``fn``
    another way (jitted, say) passes its own ``transform`` and ``label``, and may word its message."""
    from autograder.checks.structure import transformed_once

    name = function_name(fn)
    results = transformed_once(fn, label, transform)(*args)
    check = check or f"{name} gives the same result when called twice with the same arguments"
    problem = problem or f"{name} returned something different the second time it was called with the same arguments"
    advice = advice or (
        "the function keeps hidden state between calls (a global, a counter, a cache or a random generator); make "
        "the result depend only on the arguments"
    )
    if not isinstance(results, (list, tuple)) or len(results) != 2:
        raise CheckFailure(check, f"the two results of {name} were not recorded as data", advice)
    try:
        assert_trees_close(results[1], results[0], rtol=0, atol=0, name="second result", source="the first result")
    except CheckFailure as failure:
        raise CheckFailure(check, problem, f"{failure.problem}\n{advice}") from None
