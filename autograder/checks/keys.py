"""Keys: PRNG key discipline, for typed (``jax.random.key``) and legacy (``PRNGKey``) keys.

``jax.debug_key_reuse`` only sees typed keys, so the reuse check runs with
typed keys (legacy ones are wrapped with ``jax.random.wrap_key_data``);
value checks are run with both kinds by the exercises.
"""

from __future__ import annotations

import linecache
import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from autograder.checks.values import assert_trees_close, function_name, is_key
from autograder.core.failures import CheckFailure

KINDS = ("typed", "legacy")


def make_key(seed: int, kind: str) -> jax.Array:
    """A key of the given kind: ``"typed"`` (``jax.random.key``) or ``"legacy"`` (``PRNGKey``)."""
    if kind == "typed":
        return jax.random.key(seed)
    if kind == "legacy":
        return jax.random.PRNGKey(seed)
    raise ValueError(f"unknown key kind {kind!r}")


def as_typed(key: jax.Array) -> jax.Array:
    return key if is_key(key) else jax.random.wrap_key_data(key)


def kind_of(key: jax.Array) -> str:
    return "typed" if is_key(key) else "legacy"


def assert_no_key_reuse(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` with ``jax.debug_key_reuse(True)``: no key may be consumed twice.

    Pass typed keys in ``args`` (use :func:`as_typed`). The message names the
    line of the student's code and the key variable that was reused (see
    :func:`describe_key_reuse`). A key the function *returns* must not have
    been consumed inside it either (returning the parent after splitting it).
    """
    try:
        with jax.debug_key_reuse(True):
            result = fn(*args, **kwargs)
    except jax.errors.KeyReuseError as err:
        problem, advice = describe_key_reuse(err, fn)
        raise CheckFailure(
            f"{function_name(fn)} uses every PRNG key at most once",
            problem,
            f"JAX says: {str(err).splitlines()[0]}\n{advice}",
        ) from None
    assert_returned_keys_unconsumed(fn, result)
    return result


def assert_key_changes_result(fn: Callable, make_args: Callable[[jax.Array], tuple], kind: str = "typed") -> None:
    """Two different keys give two different results (the key is really used)."""
    first = fn(*make_args(make_key(0, kind)))
    second = fn(*make_args(make_key(1, kind)))
    try:
        assert_trees_close(second, first, rtol=0, atol=0)
    except CheckFailure:
        return
    raise CheckFailure(
        f"{function_name(fn)} gives different results for different keys",
        f"{function_name(fn)} returned the same result for two different keys ({kind} keys 0 and 1)",
        "the randomness must come from the key argument: a hard-coded key such as jax.random.PRNGKey(0) "
        "inside the function ignores the key you were given",
    )


def assert_same_key_same_result(fn: Callable, make_args: Callable[[jax.Array], tuple], kind: str = "typed") -> None:
    """The same key gives the same result twice (no hidden randomness)."""
    first = fn(*make_args(make_key(7, kind)))
    second = fn(*make_args(make_key(7, kind)))
    try:
        assert_trees_close(second, first, rtol=0, atol=0, name="second result", source="the first result")
    except CheckFailure as failure:
        raise CheckFailure(
            f"{function_name(fn)} gives the same result for the same key",
            f"{function_name(fn)} returned different results for the same key",
            failure.problem + "\nall randomness must come from the key argument",
        ) from None


def assert_key_kind_preserved(returned: Any, given: jax.Array, name: str = "the returned key") -> None:
    """A returned key is of the same kind (typed or legacy) as the key passed in."""
    if kind_of(returned) != kind_of(given) or (not is_key(returned) and jnp.asarray(returned).dtype != jnp.uint32):
        raise CheckFailure(
            "a returned key is of the same kind as the key passed in",
            f"{name} is a {kind_of(returned)} key but a {kind_of(given)} key was passed in",
            "split the key you were given (jax.random.split keeps its kind); do not convert it",
        )


SPLIT_ADVICE = (
    "a key may be used once: by one draw, or by one split. Split first and give each use its own subkey:\n"
    "    key, k1, k2 = jax.random.split(key, 3)\n"
    "After `key, sub = jax.random.split(key)` the old key is spent: draw with `sub` and split the new `key` next.\n"
    "For one key per layer or per step, split as many as you need: keys = jax.random.split(key, n), then keys[i].\n"
    "Or carry the key through the loop and split it again on every step."
)

LOOP_ADVICE = (
    "the body of a loop (lax.scan, lax.fori_loop, lax.map) runs many times, so a key it reads from outside, or a\n"
    "carried key that it never splits, is used again on every step. Carry the key and split it on each step:\n"
    "    def step(key, x):\n"
    "        key, sub = jax.random.split(key)\n"
    "        ...  # draw with sub, never with key\n"
    "        return key, y"
)


def _student_frames(err: BaseException, fn: Callable) -> list:
    """The traceback's (frame, line number) pairs that run code from the file ``fn`` was defined in (innermost last)."""
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    if code is None:
        return []
    return [(f, n) for f, n in traceback.walk_tb(err.__traceback__) if f.f_code.co_filename == code.co_filename]


def _consumed(value: Any) -> bool:
    import numpy as np

    return is_key(value) and bool(np.all(getattr(value, "_consumed", False)))


def describe_key_reuse(err: BaseException, fn: Callable) -> tuple[str, str]:
    """(what was reused where, how to split instead) for a ``KeyReuseError`` raised by ``fn``.

    The key is named by the student's variable: a local of the failing frame
    that holds a consumed key, preferring one that appears on the failing line.
    """
    import re

    name = function_name(fn)
    frames = _student_frames(err, fn)
    line = ""
    keys: list[str] = []
    if frames:
        frame, lineno = frames[-1]
        text = (linecache.getline(frame.f_code.co_filename, lineno) or "").strip()
        line = f"line {lineno}: {text}"
        consumed = [var for var, value in frame.f_locals.items() if _consumed(value)]
        on_line = [var for var in consumed if re.search(rf"\b{re.escape(var)}\b", text)]
        keys = on_line or consumed
    if "repeatedly executed" in str(err) or "repeatedly consumed" in str(err):
        problem = f"{name} uses the same PRNG key on every step of a loop" + (f", at {line}" if line else "")
        return problem, LOOP_ADVICE
    which = f"the key `{keys[0]}`" if keys else "a PRNG key"
    problem = f"{name} used {which} a second time, after it was already used by a draw or a split" + (
        f", at {line}" if line else ""
    )
    return problem, SPLIT_ADVICE


def assert_returned_keys_unconsumed(fn: Callable, result: Any) -> None:
    """No typed key in ``result`` was consumed inside ``fn`` (run under ``jax.debug_key_reuse(True)``).

    Returning the parent after splitting it hands the caller a spent key: the
    caller's next split would repeat randomness the function already used.
    """
    for path, leaf in jax.tree_util.tree_flatten_with_path(result)[0]:
        if _consumed(leaf):
            where = "the returned key" + jax.tree_util.keystr(path)
            raise CheckFailure(
                f"{function_name(fn)} uses every PRNG key at most once",
                f"{where} was already used inside {function_name(fn)} (by a split or a draw)",
                "return the new key that jax.random.split gave you, not the key you split:\n"
                "    key, k1, k2 = jax.random.split(key, 3)   # return this `key`, draw with k1 and k2",
            )
