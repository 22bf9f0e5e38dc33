"""States: a training state (a Flax ``TrainState``) against the reference's, field by field, and its optimizer
judged by the steps it makes.

- :func:`assert_fields_close`           the named fields of two states agree (a step counter exactly)
- :func:`assert_leaves_moved`           every leaf the reference's update changes is changed
- :func:`assert_steps_like_optimizer`   a state's ``tx`` steps as the optimizer the contract names does
- :func:`assert_same_optimizer_steps`   two states make the same steps from the same gradients
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from autograder.checks.values import MAX_SHOWN, array_types, as_numpy, assert_trees_close, describe, flatten, located
from autograder.core.failures import CheckFailure


def _is_counter(x: Any) -> bool:
    if type(x) is int:
        return True
    return type(x) in (array_types()[0], np.ndarray) and x.shape == () and np.dtype(x.dtype).kind in "iu"


def assert_fields_close(
    got: Any,
    expected: Any,
    fields: tuple[str, ...],
    *,
    name: str = "new_state",
    rtol: float = 1e-5,
    atol: float = 1e-6,
    check: str,
    advice: dict[str, str] | None = None,
    source: str = "the reference",
) -> None:
    """``got.<field>`` equals ``expected.<field>`` for every field (a TrainState's params, opt_state, step, ...).

    Pytree fields are compared with :func:`assert_trees_close`; an integer
    counter (``step``: a Python int at first, an int32 array after a jitted
    step) by its value, as long as it stays an integer. ``advice[field]`` is
    added to the message when that field is wrong.
    """
    advice = advice or {}
    for field in fields:
        if not hasattr(got, field):
            raise CheckFailure(
                check,
                f"{name} has no field {field!r} (it is a {type(got).__module__}.{type(got).__qualname__})",
                advice.get(field, ""),
            )
        g, e = getattr(got, field), getattr(expected, field)
        where = f"{name}.{field}"
        try:
            if _is_counter(e):
                if isinstance(g, jax.core.Tracer):
                    as_numpy(g, where, check)
                if not _is_counter(g):
                    raise CheckFailure(
                        check, f"{where} is {describe(g)}, expected an integer counter equal to {int(e)}"
                    )
                if int(g) != int(e):
                    raise CheckFailure(check, f"{where} differs from {source}: expected {int(e)}, got {int(g)}")
            else:
                assert_trees_close(g, e, rtol=rtol, atol=atol, name=where, check=check, source=source)
        except CheckFailure as failure:
            if field not in advice:
                raise
            raise CheckFailure(check, failure.problem, failure.details + "\n" + advice[field]) from None


def assert_leaves_moved(
    before: Any,
    got: Any,
    expected: Any = None,
    *,
    name: str,
    check: str,
    advice: str,
) -> None:
    """Every leaf the reference changes (``before`` -> ``expected``) is changed in ``got`` too; with no
    ``expected``, every leaf (a step from a point where no leaf's gradient is zero).

    Diagnoses an update that silently does nothing, e.g. gradients that are
    all zero because the loss reads another copy of the parameters than the
    one being differentiated. ``got`` must have ``before``'s structure.
    """
    b_leaves, b_def = flatten(before)
    g_leaves, g_def = flatten(got)
    e_leaves, e_def = flatten(expected) if expected is not None else ([(path, None) for path, _ in b_leaves], b_def)
    if g_def != e_def:
        return  # a structure problem: the values check reports it
    frozen = []
    for (path, b), (_, g), (_, e) in zip(b_leaves, g_leaves, e_leaves):
        b = np.asarray(b)
        if (
            (e is not None and np.array_equal(b, np.asarray(e)))
            or not hasattr(g, "shape")
            or isinstance(g, jax.core.Tracer)
        ):
            continue
        g = np.asarray(g)
        if g.shape == b.shape and np.array_equal(g, b):
            frozen.append(name + path)
    if frozen:
        shown = ", ".join(frozen[:MAX_SHOWN]) + (
            f" and {len(frozen) - MAX_SHOWN} more" if len(frozen) > MAX_SHOWN else ""
        )
        which = "it" if len(frozen) == 1 else "them"
        changer = (
            "the reference's update changes" if expected is not None else "a gradient step from these params changes"
        )
        raise CheckFailure(check, f"{shown} did not change at all, although {changer} {which}", advice)


def assert_steps_like_optimizer(
    got_state: Any, optimizer: Any, *, steps: int = 3, seed: int = 0, check: str, advice: str
) -> None:
    """``got_state.tx`` updates parameters as ``optimizer`` (an optax transformation the contract names, e.g.
    ``optax.sgd(0.1)``) does, judged by stepping from ``got_state``'s own params (:func:`assert_same_optimizer_steps`).
    No reference state is needed: the contract says which optimizer."""
    expected = got_state.replace(tx=optimizer, opt_state=optimizer.init(got_state.params))
    assert_same_optimizer_steps(got_state, expected, steps=steps, seed=seed, check=check, advice=advice)


def assert_same_optimizer_steps(
    got_state: Any, expected_state: Any, *, steps: int = 3, seed: int = 0, check: str, advice: str
) -> None:
    """``got_state.tx`` updates parameters exactly as ``expected_state.tx`` does, judged by stepping.

    Both optimizers start from the expected params and take ``steps`` steps
    with the same random gradients (``state.apply_gradients``); the params
    must agree after every step. Any optimizer that behaves the same passes
    (``optax.sgd``, ``inject_hyperparams(optax.sgd)``, a chain that scales by
    ``-lr``); momentum shows from the second step on.
    """
    try:
        opt_state = got_state.tx.init(expected_state.params)
    except Exception:  # noqa: BLE001 - not an optimizer (or one recorded as no more than its class): said below
        raise CheckFailure(
            check,
            f"the state's tx is {describe(got_state.tx)[:120]}: not an optimizer that makes the steps asked for "
            "(on the grader's side only plain optax.sgd, adam and adamw with a learning rate are known)",
            advice,
        ) from None
    got = got_state.replace(params=expected_state.params, opt_state=opt_state)
    expected = expected_state
    rng = np.random.RandomState(seed)
    for i in range(steps):
        grads = jax.tree_util.tree_map(lambda p: rng.normal(size=np.shape(p)).astype(np.float32), expected.params)
        got, expected = got.apply_gradients(grads=grads), expected.apply_gradients(grads=grads)
        with located(f"after {i + 1} optimizer step(s) with the same gradients"):
            assert_fields_close(got, expected, ("params",), name="state", check=check, advice={"params": advice})
