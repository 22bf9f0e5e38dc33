"""Structure: facts about *how* a function computes, not what.

- :func:`assert_works_under_jit`   the function can be traced by ``jax.jit`` and gives what it gives without jit
  (``jax.grad`` against the function's own slope: :mod:`autograder.checks.slopes`; the calls a helper received:
  :mod:`autograder.checks.vmapped`; one ``jax.vmap`` of it, from the program: :mod:`autograder.checks.vmap_program`)
- :func:`jaxpr_size`               how many equations a function traces to (nested jaxprs included)
- :func:`assert_jaxpr_size_constant` the program does not grow with the batch (no unrolled Python loop)
- :func:`assert_work_linear_in_batch` no intermediate grows faster than the batch (no B x B Jacobian)
- :func:`runs_the_states_model`      a step given a state of an unexpected model runs that model, not its own
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from autograder.checks import growth
from autograder.checks.jaxprs import walk
from autograder.checks.values import assert_trees_close, function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import StandIn
from autograder.runtime import global_rngs, stores

_TRACE_ERRORS = {
    jax.errors.NonConcreteBooleanIndexError: (
        "it uses boolean indexing (like x[x < 0]) on a traced array",
        "under jit every shape must be known before the values are: a boolean mask selects a "
        "data-dependent number of entries. Keep the shape and choose per entry with jnp.where(mask, a, b).",
    ),
    jax.errors.TracerBoolConversionError: (
        "it uses a traced value in Python control flow (if/while/and/or on an array)",
        "under jit values are abstract while tracing; use jnp.where, jax.lax.cond or jax.lax.select "
        "instead of a Python if on an array",
    ),
    jax.errors.ConcretizationTypeError: (
        "it needs a concrete value of a traced array (e.g. to pick a shape or loop bound)",
        "shapes and Python-level decisions must come from static arguments or .shape, not from array values",
    ),
    jax.errors.TracerArrayConversionError: (
        "it converts a traced array to NumPy (np.asarray, np.* functions or .numpy())",
        "inside jit use jax.numpy (jnp.*) operations, which trace; NumPy needs concrete values",
    ),
    jax.errors.TracerIntegerConversionError: (
        "it converts a traced array to a Python int (e.g. range(x) or int(x))",
        "use static arguments for sizes, or jax.lax loops for data-dependent iteration",
    ),
}


def jit_error_explanation(err: BaseException) -> tuple[str, str] | None:
    """(what the code does, what to do instead) for JAX's tracing errors, else None."""
    for kind, explanation in _TRACE_ERRORS.items():
        if isinstance(err, kind):
            return explanation
    return None


# The global random generators are seeded with this for the call without jit. A function that draws from
# them (a hidden RNG) draws once while jit traces it, then its jitted form repeats that draw; called without
# jit it draws again. Whether the two draws happened to coincide depended on what ran before (hypothesis
# re-seeds the generators for every example, so a function traced by an earlier check at an example's
# first draw matched): a verdict that changed with the order of the checks. With this seed, never.
_NOT_THE_TRACES_SEED = 20_261_122


def assert_works_under_jit(
    fn: Callable,
    *args: Any,
    static_argnums: Sequence[int] = (),
    rtol: float = 1e-5,
    atol: float = 1e-6,
    jitted: Callable | None = None,
    eager: Callable | None = None,
) -> Any:
    """``jax.jit(fn)`` traces, and gives what ``fn`` gives called without ``jax.jit`` around it.

    The comparison is with the student's own function, never with the reference: whether the values are
    right is the correctness checks' question (decided on the trusted side when grading), and a process
    that runs student code holds no expected values for this check. Pass ``jitted`` to reuse one
    ``jax.jit(fn)`` across hypothesis examples (a new jit per example would compile per example), and
    ``eager`` (e.g. :func:`eagerly`) where calling ``fn`` itself would compile anew on every call.
    """
    name = function_name(fn)
    check = f"{name} works under jax.jit"
    jitted = jitted or jit_once(fn, static_argnums)
    try:
        got = jitted(*args)
    except Exception as err:  # noqa: BLE001 - classified below
        explanation = jit_error_explanation(err)
        if explanation is None:
            raise
        what, instead = explanation
        raise CheckFailure(check, f"{name} cannot be compiled with jax.jit: {what}", instead) from None
    assert_same_as_without_jit(got, eager or fn, *args, name=name, rtol=rtol, atol=atol)
    return got


def called_without_jit(eager: Callable, *args: Any, **kwargs: Any) -> Any:
    """``eager(*args, **kwargs)``: the function called without jit, its hidden global generators seeded as for the
    traces (see ``_NOT_THE_TRACES_SEED``) and left as they were."""
    with global_rngs.preserved() as rngs:
        for _, _, seed in rngs.values():
            seed(_NOT_THE_TRACES_SEED)
        return eager(*args, **kwargs)


def assert_same_as_without_jit(
    got: Any, eager: Callable, *args: Any, name: str, rtol: float = 1e-5, atol: float = 1e-6, **kwargs: Any
) -> None:
    """``got`` (what the compiled ``name`` gave) is what ``eager(*args, **kwargs)`` gives (:func:`called_without_jit`)."""
    without_jit = called_without_jit(eager, *args, **kwargs)
    assert_trees_close(
        got,
        without_jit,
        rtol=rtol,
        atol=atol,
        source=f"{name} without jit",
        check=f"jax.jit({name}) gives what {name} gives without jit",
    )


def _count_equations(jaxpr) -> int:
    return sum(1 for eqn, _ in walk(jaxpr) if eqn is not None)


def jaxpr_size(fn: Callable, *args: Any, static_argnums: Sequence[int] = ()) -> int:
    """The number of equations ``fn`` traces to, nested jaxprs (jit, scan, cond) included."""
    closed = jax.make_jaxpr(fn, static_argnums=tuple(static_argnums))(*args)
    return _count_equations(closed.jaxpr)


def assert_jaxpr_size_constant(
    fn: Callable,
    args_by_size: dict[int, tuple],
    what: str = "the batch",
    static_argnums: Sequence[int] = (),
    advice: str = "a Python loop over the elements is unrolled into one copy of the body per element; "
    "use jax.vmap (or a jax.lax loop) so the program stays the same size",
) -> None:
    """The traced program has the same size for every size of ``what`` (no Python loop unrolled per element).

    ``static_argnums`` are passed to ``jax.make_jaxpr``: a loop count that the
    function takes as a static argument stays a Python int while tracing.
    """
    sizes = {n: jaxpr_size(fn, *args, static_argnums=static_argnums) for n, args in args_by_size.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{n}: {s} equations" for n, s in sizes.items())
        raise CheckFailure(
            f"{function_name(fn)} traces to the same program whatever the size of {what}",
            f"the traced program of {function_name(fn)} grows with the size of {what} ({shown})",
            advice,
        )


def _intermediates(jaxpr) -> list[tuple[int, tuple[int, ...], str]]:
    """(size, shape, primitive) of every value computed in ``jaxpr``, nested jaxprs included."""
    found = []
    for eqn, _ in walk(jaxpr):
        if eqn is None:  # captured constants
            continue
        for var in eqn.outvars:
            shape = tuple(getattr(var.aval, "shape", ()))
            found.append((int(np.prod(shape, dtype=np.int64)), shape, eqn.primitive.name))
    return found


def assert_work_linear_in_batch(
    fn: Callable, small: tuple[int, tuple], large: tuple[int, tuple], *, contract: str
) -> None:
    """No value ``fn`` computes grows faster than the batch: no B x B intermediate (a Jacobian of B outputs).

    ``small`` and ``large`` are ``(batch size, args)``. The largest value
    computed for the large batch, and the total size of all computed values,
    may grow at most linearly from the small batch (with slack for
    constants); a quadratic growth means every example's output is
    differentiated against every other example's (a Jacobian of the batch of
    outputs), B times the work of one gradient per example.
    """
    (n_small, args_small), (n_large, args_large) = small, large
    computed = {
        n: _intermediates(jax.make_jaxpr(fn)(*args).jaxpr) for n, args in ((n_small, args_small), (n_large, args_large))
    }
    growth.assert_growth_linear(computed, name=function_name(fn), values="the values it computes", contract=contract)


_jit_cache: dict[tuple[int, tuple[int, ...]], tuple[Callable, Callable]] = stores.register(
    "checks.structure.jit_once", {}
)


def jit_once(fn: Callable, static_argnums: Sequence[int] = ()) -> Callable:
    """One ``jax.jit(fn)`` per function, reused across hypothesis examples (so it compiles per shape, not per example).

    A function that stands for another one (a recorded reference; the student's function while a grading
    process records its answers, or while the trusted side replays them) is not traced: its
    ``jit_stand_in(static_argnums)`` gives what answers, or records, as the jitted function does.
    """
    if isinstance(fn, StandIn):
        return fn.jit_stand_in(tuple(static_argnums))
    key = (id(fn), tuple(static_argnums))
    if key not in _jit_cache or _jit_cache[key][0] is not fn:
        _jit_cache[key] = (fn, jax.jit(fn, static_argnums=tuple(static_argnums)))
    return _jit_cache[key][1]


_transform_cache: dict[tuple[int, str], tuple[Callable, Callable]] = stores.register(
    "checks.structure.transformed_once", {}
)


def transformed_once(fn: Callable, label: str, transform: Callable[[Callable], Callable]) -> Callable:
    """``transform(fn)`` (e.g. a jitted ``value_and_grad``), made once per function and ``label`` and reused
    across hypothesis examples: the student's side of :func:`autograder.core.oracle.transformed`.

    A function that stands for the student's (while a grading process records its answers, or while the
    trusted side replays them) is not traced: its ``transform_stand_in(label, transform)`` gives what
    answers, or records, as the transformed function does.
    """
    if isinstance(fn, StandIn):
        return fn.transform_stand_in(label, transform)
    key = (id(fn), label)
    if key not in _transform_cache or _transform_cache[key][0] is not fn:
        _transform_cache[key] = (fn, transform(fn))
    return _transform_cache[key][1]


def eagerly(fn: Callable) -> Callable:
    """``fn`` run op by op under ``jax.disable_jit()``: for checks that must call it many times eagerly.

    An eager ``lax.scan``/``fori_loop`` whose body is a closure made on every
    call compiles a new loop program per call (about a second each); under
    ``disable_jit`` such loops run as Python loops of cached operations
    instead. Hidden state (``np.random``, globals) is still seen on every call,
    and key reuse inside a loop body is reported at the student's line.
    """
    import functools

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with jax.disable_jit():
            return fn(*args, **kwargs)

    return run


@contextlib.contextmanager
def runs_the_states_model(function: str, model: str) -> Iterator[None]:
    """Turn Flax's complaint about parameters of the wrong shape or name into a failure naming the cause.

    The checks give ``function`` states of a model the student's module cannot
    know in advance (``model``, e.g. ``SimpleClassifier(7, 1)``). Running a
    model of its own (a module-level ``model.apply``) instead of
    ``state.apply_fn`` meets parameters of another shape, and Flax raises.
    """
    import flax.errors

    try:
        yield
    except flax.errors.FlaxError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckFailure(
            f"{function} runs the state's own model (state.apply_fn), whatever model the state was made with",
            f"given a state of {model}, {function} ran another model: Flax said {type(err).__name__}: {first}",
            "the state carries its model: call state.apply_fn(...). A model built at module level is not the "
            "model of the state being trained (it may have another size)",
        ) from None
