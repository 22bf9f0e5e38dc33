"""Purity: the result depends only on the arguments, and nothing else changes.

Each check is its own function with its own message:

- :func:`assert_arguments_unchanged`  no argument (array, list, dict) is modified
- :func:`assert_deterministic`        the same arguments give the same result twice
- :func:`assert_no_hidden_rng`        NumPy's, Python's and torch's global RNGs do not matter
- :func:`assert_module_state_unchanged` no module-level variable is added, rebound or mutated
- :func:`assert_no_leaked_tracers`    nothing traced escapes a ``jax.jit`` of the function
  (both in :mod:`autograder.checks.module_state`, named here too)

:func:`assert_pure` runs them all. The same properties decided on the trusted side from recorded values
(:func:`assert_pure_by_values` and the rest) are :mod:`autograder.checks.pure_values`', on what the transforms of
:mod:`autograder.checks.recorders` record (:func:`called_twice`, :func:`cold` ...); all are named here too, as
the check files call them (``purity.<name>``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import numpy as np

from autograder.checks.module_state import (  # noqa: F401  (public here: check files call purity.<name>)
    assert_module_state_unchanged,
    assert_no_leaked_tracers,
    tracer_ids,
)
from autograder.checks.pure_values import (  # noqa: F401  (named here: check files call purity.<name>)
    assert_arguments_unchanged_by_values,
    assert_deterministic_as_values,
    assert_global_rngs_untouched_by_values,
    assert_pure_by_values,
    assert_result_repeats,
    assert_same_when_reseeded,
)
from autograder.checks.recorders import (  # noqa: F401  (named here: check files call purity.<name>)
    ARGUMENTS_AFTER,
    ARGUMENTS_LEFT,
    CALLED_TWICE,
    CALLED_TWICE_ON_COPIES,
    DELETED,
    GLOBAL_RNGS_AFTER,
    arguments_after_the_call,
    arguments_left,
    as_after_the_call,
    assert_arguments_unchanged_as_values,
    assert_as_before,
    called_twice,
    called_twice_on_copies,
    changes,
    cold,
    global_rngs_after,
    rng_states_equal,
)
from autograder.checks.values import describe, function_name, is_key
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


def assert_arguments_unchanged(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Calling ``fn`` leaves every NumPy array, list and dict it was given as it was."""
    named = _argument_names(fn, args, kwargs)
    before = [(name, _snapshot(value)) for name, value in named]
    result = fn(*args, **kwargs)
    for (name, snap), (_, value) in zip(before, named):
        found = changes(snap, value, name)
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
    assert_result_repeats(function_name(fn), first, second, {})


def assert_no_hidden_rng(fn: Callable, *args: Any, **kwargs: Any) -> None:
    """The result does not change when only a global random generator changes."""
    with global_rngs.preserved() as rngs:

        def seed_all(value: int, differently: str | None = None) -> None:
            for rng_name, (_, _, seed) in rngs.items():
                seed(value + 1 if rng_name == differently else value)

        seed_all(1234)
        baseline = fn(*_snapshot(args), **kwargs)
        reseeded = {}
        for name in rngs:
            seed_all(1234, differently=name)
            reseeded[name] = fn(*_snapshot(args), **kwargs)
    assert_same_when_reseeded(function_name(fn), baseline, reseeded)


def assert_pure(fn: Callable, *args: Any, module: ModuleType | None = None, **kwargs: Any) -> None:
    """All the purity checks but leaks (which need a jit-compatible function)."""
    assert_arguments_unchanged(fn, *args, **kwargs)
    assert_deterministic(fn, *args, **kwargs)
    assert_no_hidden_rng(fn, *args, **kwargs)
    if module is not None:
        assert_module_state_unchanged(module, fn, *args, **kwargs)


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
            if not rng_states_equal(before[name], get()):
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
