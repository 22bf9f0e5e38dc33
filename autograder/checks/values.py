"""Values: the student's pytree equals the reference's.

Same tree structure, same leaf types, shapes and dtypes, values within a
tolerance. Nothing the student returns is trusted: every leaf must be of an
exact, known type (a plain ``np.ndarray``, a JAX array, a NumPy or Python
scalar) and is converted with NumPy before it is compared, so an object whose
``__eq__`` always says True or an ``ndarray`` subclass cannot pass.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograder.core.failures import CheckFailure
from autograder.runtime import stores

_PY_SCALARS = (bool, int, float)
MAX_SHOWN = 5


@functools.cache
def array_types() -> tuple[type, type]:
    """The exact types of a JAX array and of a typed key array. Made on first use, not at import:
    making an array starts JAX's backend, which must wait for the course's device setting."""
    return type(jnp.zeros(())), type(jax.random.key(0))


stores.register("checks.values.array_types", array_types, clear=array_types.cache_clear)


def describe(tree: Any) -> str:
    """A short, readable summary of a pytree: ``{'W': f32[2,3], 'b': f32[3]}``."""

    def leaf(x):
        if type(x) in _PY_SCALARS:
            return f"{type(x).__name__} {x!r}"
        if is_key(x):
            return f"key<{jax.random.key_impl(x)}>{list(x.shape)}"
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return f"{np.dtype(x.dtype).name}{list(x.shape)}"
        return type(x).__name__

    try:
        return str(jax.tree_util.tree_map(leaf, _thaw(tree)))
    except Exception:  # noqa: BLE001 - a description must never fail
        return type(tree).__name__


def is_key(x: Any) -> bool:
    """A new-style typed PRNG key array."""
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _thaw(tree: Any) -> Any:
    """Flax ``FrozenDict``s become plain dicts, so the two compare as equal (without Flax imported there are none:
    a grading process of a module that does not use Flax does not import it for this)."""
    flax_core = sys.modules.get("flax.core")
    if flax_core is None:
        return tree
    FrozenDict = flax_core.FrozenDict  # noqa: N806 - the class

    def thaw(node):
        return {k: _thaw(v) for k, v in node.items()} if isinstance(node, FrozenDict) else node

    return jax.tree_util.tree_map(thaw, tree, is_leaf=lambda n: isinstance(n, FrozenDict))


def flatten(tree: Any):
    leaves, treedef = jax.tree_util.tree_flatten_with_path(_thaw(tree))
    return [(jax.tree_util.keystr(path), leaf) for path, leaf in leaves], treedef


def assert_leaf_types(tree: Any, allowed: tuple[type, ...], *, name: str = "result", check: str) -> None:
    """Every leaf of ``tree`` is exactly of one of the ``allowed`` types (no subclasses)."""
    for path, leaf in flatten(tree)[0]:
        if type(leaf) not in allowed:
            names = " or ".join(
                t.__module__.split(".")[0] + "." + t.__name__ if t.__module__ != "builtins" else t.__name__
                for t in allowed
            )
            raise CheckFailure(
                check,
                f"{name}{path} is a {type(leaf).__module__}.{type(leaf).__qualname__}; it must be a {names}",
            )


def as_numpy(leaf: Any, where: str, check: str) -> np.ndarray:
    kind = type(leaf)
    if kind in _PY_SCALARS or isinstance(leaf, np.generic) and kind.__module__ == "numpy":
        return np.asarray(leaf)
    if kind is np.ndarray:
        return np.array(leaf, copy=True)
    jax_array, key_array = array_types()
    if kind is key_array:
        return np.asarray(jax.random.key_data(leaf))
    if kind is jax_array:
        return np.asarray(jax.device_get(leaf))
    if isinstance(leaf, jax.core.Tracer):
        raise CheckFailure(
            check,
            f"{where} is a JAX tracer: a traced value escaped from a transformation",
            "return concrete arrays; do not store values computed inside jit/grad/vmap in globals or closures",
        )
    raise CheckFailure(
        check,
        f"{where} is a {kind.__module__}.{kind.__qualname__}, not an array",
        "return a jax.Array, a NumPy array or a number (not a subclass or a look-alike)",
    )


def _first_differences(expected: np.ndarray, got: np.ndarray, close: np.ndarray) -> str:
    bad = np.argwhere(~close)
    lines = []
    for index in bad[:MAX_SHOWN]:
        idx = tuple(int(i) for i in index)
        lines.append(f"  [{', '.join(map(str, idx))}]: expected {expected[idx].item()!r}, got {got[idx].item()!r}")
    if len(bad) > MAX_SHOWN:
        lines.append(f"  ... and {len(bad) - MAX_SHOWN} more")
    return "\n".join(lines)


def _compare_leaf(
    where: str, expected: Any, got: Any, rtol: float, atol: float, check: str, source: str = "the reference"
) -> None:
    exp_is_key, got_is_key = is_key(expected), type(got) is array_types()[1]
    if exp_is_key != got_is_key:
        kinds = ("a typed key (jax.random.key)", "a legacy uint32 key (jax.random.PRNGKey)")
        raise CheckFailure(
            check,
            f"{where} is {kinds[not got_is_key]}, but {source} returns {kinds[not exp_is_key]}",
            "a returned key must be of the same kind as the key passed in: split it, do not convert it",
        )
    exp = np.asarray(jax.random.key_data(expected)) if exp_is_key else np.asarray(expected)
    arr = as_numpy(got, where, check)
    if exp.shape != arr.shape:
        raise CheckFailure(check, f"{where} has shape {arr.shape}, expected {exp.shape}")
    if type(got) in _PY_SCALARS:
        if np.asarray(got).dtype.kind != exp.dtype.kind and not (exp.dtype.kind in "fc" and type(got) is int):
            raise CheckFailure(check, f"{where} is a Python {type(got).__name__}, expected {exp.dtype.name}")
        arr = arr.astype(exp.dtype)
    elif exp.dtype != arr.dtype:
        raise CheckFailure(check, f"{where} has dtype {arr.dtype.name}, expected {exp.dtype.name} (shape {exp.shape})")
    if exp.dtype.kind in "fc":
        close = np.isclose(arr, exp, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = arr == exp
    close = np.asarray(close, dtype=bool)
    if not close.all():
        n_bad, n = int((~close).sum()), close.size
        if exp.ndim == 0:
            raise CheckFailure(
                check,
                f"{where} differs from {source}: expected {exp.item()!r}, got {arr.item()!r}",
                f"({exp.dtype.name} scalar, tolerance rtol={rtol:g}, atol={atol:g})" if exp.dtype.kind in "fc" else "",
            )
        raise CheckFailure(
            check,
            f"{where} differs from {source} at {n_bad} of {n} entries ({exp.dtype.name}, shape {exp.shape})",
            "first differences, index: expected vs got\n" + _first_differences(exp, arr, close),
        )


def _same_structure(a, b) -> bool:
    """The same container types, nested the same way.

    Static metadata (a TrainState's ``apply_fn`` and ``tx``) is not compared:
    two equal states built separately hold different function objects.
    Dict keys are compared through the leaf paths.
    """
    if a.num_nodes != b.num_nodes or a.num_leaves != b.num_leaves:
        return False
    data_a, data_b = a.node_data(), b.node_data()
    if (data_a is None) != (data_b is None) or (data_a is not None and data_a[0] is not data_b[0]):
        return False
    children_a, children_b = a.children(), b.children()
    return len(children_a) == len(children_b) and all(map(_same_structure, children_a, children_b))


def _whose(source: str) -> str:
    return "the reference's" if source == "the reference" else source


def assert_trees_close(
    got: Any,
    expected: Any,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    name: str = "result",
    check: str = "the result equals the reference's",
    source: str = "the reference",
) -> None:
    """``got`` has ``expected``'s structure, and every leaf its shape, dtype and values.

    Exact for integer, boolean and key leaves; within ``rtol``/``atol`` for
    floating leaves. PRNG keys are compared by their key data and kind.
    ``source`` names where ``expected`` comes from in the message ("differs from <source>").
    """
    exp_leaves, exp_def = flatten(expected)
    try:
        got_leaves, got_def = flatten(got)
    except Exception as err:  # noqa: BLE001 - the student's pytree nodes may be broken
        raise CheckFailure(check, f"{name} could not be read as a pytree: {type(err).__name__}: {err}") from None
    if not _same_structure(got_def, exp_def) or [p for p, _ in got_leaves] != [p for p, _ in exp_leaves]:
        exp_paths = [p for p, _ in exp_leaves]
        got_paths = [p for p, _ in got_leaves]
        diff = ""
        missing = [p for p in exp_paths if p not in got_paths]
        extra = [p for p in got_paths if p not in exp_paths]
        if missing:
            diff += f"missing: {', '.join(name + p for p in missing[:MAX_SHOWN])}\n"
        if extra:
            diff += f"unexpected: {', '.join(name + p for p in extra[:MAX_SHOWN])}\n"
        raise CheckFailure(
            check,
            f"{name} does not have the structure of {_whose(source)}",
            f"expected: {describe(expected)}\ngot:      {describe(got)}\n{diff}",
        )
    for (path, exp), (_, leaf) in zip(exp_leaves, got_leaves):
        _compare_leaf(name + path, exp, leaf, rtol, atol, check, source)


def assert_matches_reference(
    fn: Callable,
    reference: Callable,
    *args: Any,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    **kwargs: Any,
) -> Any:
    """Call both with the same arguments; the results must match. Returns the student's result."""
    expected = reference(*args, **kwargs)
    got = fn(*args, **kwargs)
    assert_trees_close(
        got,
        expected,
        rtol=rtol,
        atol=atol,
        check=f"{function_name(fn)}(...) equals the reference on generated inputs",
    )
    return got


def function_name(fn: Callable) -> str:
    """The name to show for ``fn`` in a message (through wrappers such as ``jax.jit`` and ``functools.partial``)."""
    if isinstance(fn, functools.partial):
        return function_name(fn.func)
    return str(getattr(fn, "__name__", None) or getattr(getattr(fn, "__wrapped__", None), "__name__", "the function"))


def assert_entries_among(
    got: Any,
    options: dict[str, Any],
    *,
    check: str,
    advice: str = "",
    rtol: float = 1e-5,
    atol: float = 0.0,
) -> None:
    """``got`` has the options' shape, and every entry equals the same entry of one of the ``options``.

    ``options`` maps a readable description (``"0"``, ``"x / (1 - rate)"``) to
    an array (or scalar) broadcastable to the shape; the message shows the
    first entry that matches none of them, with every option's value there.
    """
    shape = np.broadcast_shapes(*(np.shape(value) for value in options.values()))
    arrays = {name: np.broadcast_to(np.asarray(value, dtype=np.float64), shape) for name, value in options.items()}
    arr = as_numpy(got, "result", check)
    if arr.shape != shape:
        raise CheckFailure(check, f"result has shape {arr.shape}, expected {shape}", advice)
    ok = np.zeros(arr.shape, bool)
    for value in arrays.values():
        ok |= np.isclose(arr, value, rtol=rtol, atol=atol)
    if not ok.all():
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        shown = ", ".join(f"{name} = {value[idx]:.6g}" for name, value in arrays.items())
        raise CheckFailure(
            check,
            f"result[{', '.join(map(str, idx))}] is {arr[idx]:.6g}, which is none of the allowed values ({shown})"
            f" — {int((~ok).sum())} of {ok.size} entries are wrong",
            advice,
        )


@contextlib.contextmanager
def located(where: str) -> Iterator[None]:
    """Prefix the problem of a :class:`CheckFailure` raised inside with where it happened.

    ``with located("step 5 (epoch 2, batch 1 of 4, 32 examples)"): ...`` makes
    a failure inside a scenario say which step of it went wrong.
    """
    try:
        yield
    except CheckFailure as failure:
        raise CheckFailure(failure.check, f"{where}: {failure.problem}", failure.details) from None


@contextlib.contextmanager
def advised(advice: str) -> Iterator[None]:
    """Add ``advice`` to the details of a :class:`CheckFailure` raised inside.

    ``with advised("train_step runs your calculate_loss_acc: ..."): ...`` makes every
    value failure of a step name what the step builds on.
    """
    try:
        yield
    except CheckFailure as failure:
        raise CheckFailure(failure.check, failure.problem, "\n".join(filter(None, (failure.details, advice)))) from None


def assert_returns_tuple(result: Any, names: tuple[str, ...], *, function: str, check: str) -> tuple:
    """``result`` is a tuple (or list) of ``len(names)`` values, as the contract says; returns it as a tuple."""
    shape = "(" + ", ".join(names) + ")"
    if len(names) == 1:
        return (result,)
    if type(result) not in (tuple, list) or len(result) != len(names):
        got = (
            f"a {type(result).__name__} of {len(result)} values" if type(result) in (tuple, list) else describe(result)
        )
        raise CheckFailure(check, f"{function} must return {shape}; it returned {got}")
    return tuple(result)
