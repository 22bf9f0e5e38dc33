"""Keys: PRNG key discipline, for typed (``jax.random.key``) and legacy (``PRNGKey``) keys.

``jax.debug_key_reuse`` only sees typed keys, so the reuse check runs with
typed keys (legacy ones are wrapped with ``jax.random.wrap_key_data``);
value checks are run with both kinds by the exercises.
"""

from __future__ import annotations

import linecache
import traceback
from typing import Any, Callable

import jax
import jax.numpy as jnp

from autograder.failures import CheckFailure
from autograder.values import _name, assert_trees_close, is_key

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


def _student_frame(err: BaseException, fn: Callable) -> str:
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    filename = code.co_filename if code else None
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
    if not frames:
        return ""
    frame = frames[-1]
    line = (linecache.getline(frame.filename, frame.lineno) or "").strip()
    return f"line {frame.lineno}: {line}"


def assert_no_key_reuse(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` with ``jax.debug_key_reuse(True)``: no key may be consumed twice.

    Pass typed keys in ``args`` (use :func:`as_typed`).
    """
    try:
        with jax.debug_key_reuse(True):
            return fn(*args, **kwargs)
    except jax.errors.KeyReuseError as err:
        where = _student_frame(err, fn)
        raise CheckFailure(
            f"{_name(fn)} uses every PRNG key at most once",
            f"{_name(fn)} used a PRNG key that was already consumed" + (f", at {where}" if where else ""),
            f"JAX says: {str(err).splitlines()[0]}\n"
            "a key may be used once: by one draw, or by one split. Split first and give each use its own subkey:\n"
            "    key, k1, k2 = jax.random.split(key, 3)\n"
            "and do not use the parent key after splitting it (use the key that split returned).",
        ) from None


def assert_key_changes_result(fn: Callable, make_args: Callable[[jax.Array], tuple], kind: str = "typed") -> None:
    """Two different keys give two different results (the key is really used)."""
    first = fn(*make_args(make_key(0, kind)))
    second = fn(*make_args(make_key(1, kind)))
    try:
        assert_trees_close(second, first, rtol=0, atol=0)
    except CheckFailure:
        return
    raise CheckFailure(
        f"{_name(fn)} gives different results for different keys",
        f"{_name(fn)} returned the same result for two different keys ({kind} keys 0 and 1)",
        "the randomness must come from the key argument: a hard-coded key such as jax.random.PRNGKey(0) "
        "inside the function ignores the key you were given",
    )


def assert_same_key_same_result(fn: Callable, make_args: Callable[[jax.Array], tuple], kind: str = "typed") -> None:
    """The same key gives the same result twice (no hidden randomness)."""
    first = fn(*make_args(make_key(7, kind)))
    second = fn(*make_args(make_key(7, kind)))
    try:
        assert_trees_close(second, first, rtol=0, atol=0, name="second result")
    except CheckFailure as failure:
        raise CheckFailure(
            f"{_name(fn)} gives the same result for the same key",
            f"{_name(fn)} returned different results for the same key",
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
