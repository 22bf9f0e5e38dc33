"""Purity decided by values: what :mod:`autograder.checks.recorders` recorded, judged alike in the grading process
and on the trusted side (mark such a check ``@pytest.mark.decided("values")``).

- :func:`assert_pure_by_values`              arguments left as they were, the same result twice, whatever the
                                             global generators
- :func:`assert_result_repeats`              the recorded results of one call agree
- :func:`assert_arguments_unchanged_by_values` the arguments as the call left them
- :func:`assert_global_rngs_untouched_by_values` the global generators as before the call
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

import jax
import numpy as np

from autograder.checks.recorders import (
    ARGUMENTS_LEFT,
    CALLED_TWICE,
    CALLED_TWICE_ON_COPIES,
    GLOBAL_RNGS_AFTER,
    arguments_left,
    called_twice,
    called_twice_on_copies,
    changes,
    global_rngs_after,
    rng_states_equal,
    seeded_rng_states,
)
from autograder.checks.values import assert_trees_close, describe, function_name, is_key
from autograder.core.failures import CheckFailure
from autograder.runtime.copies import fresh_copy


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
    from autograder.checks.values import flatten

    try:
        found = changes(given, left, name)
    except Exception:  # noqa: BLE001 - a recorded value of another shape: read leaf by leaf below
        found = None
    if found:
        return found

    try:
        given_leaves, given_def = flatten(given)
        left_leaves, left_def = flatten(left)
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
) -> Any:
    """``fn`` leaves its arguments as they were, and gives the same result when called again on the same
    arguments with NumPy's, Python's and torch's global generators seeded differently: decided from the values
    :func:`called_twice` records, which the trusted side reads alike (the arguments are the check's own, drawn
    there too). Whether the result is right is the correctness checks'. What values cannot show (a write to
    module state, a leaked tracer) is :func:`assert_module_state_unchanged`'s and :func:`assert_no_leaked_tracers`'
    (observed). ``first``, ``(label, form)``, judges ``form(fn)`` (``("eagerly", structure.eagerly)``). Mark the
    check ``@pytest.mark.decided("values")``. Returns the first result (for a check that compares it with the
    reference's, so that results recorded alike but made up are not a pass)."""
    got, shown, given = _called_twice_of(fn, args, first)
    result, second, left, reseeded = got
    _assert_arguments_left(fn, shown, given, left)
    assert_result_repeats(shown, result, second, reseeded)
    return result


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
    assert_same_when_reseeded(shown, result, reseeded)


def assert_same_when_reseeded(shown: str, result: Any, reseeded: dict[str, Any]) -> None:
    """Each result of a call with only one global generator re-seeded (``reseeded``: generator -> result) is
    ``result``: the function draws no hidden randomness."""
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


def assert_arguments_unchanged_by_values(fn: Callable, *args: Any) -> None:
    """``fn`` leaves its arguments as they were: decided from the values :func:`arguments_left` records (the
    arguments as the call left them, and nothing else: what it returns is the other checks' business, so a result
    that is not data costs this check nothing). Mark the check ``@pytest.mark.decided("values")``."""
    from autograder.checks.structure import transformed_once

    given = fresh_copy(args)  # the call may write into args themselves
    left = transformed_once(fn, ARGUMENTS_LEFT, arguments_left)(*args)
    _assert_arguments_left(fn, function_name(fn), given, left)


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
    untouched = seeded_rng_states()
    for name, state in untouched.items():
        got = after.get(name) if isinstance(after, dict) else None
        if got is None or not rng_states_equal(state, got):
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
