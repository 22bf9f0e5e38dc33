"""Train steps: a training loop's functions judged on the trusted side, from their program or from values (issue 42).

A train or eval step takes a Flax ``TrainState`` (a pytree whose ``apply_fn`` and ``tx`` are static) and must
be one ``jax.jit`` function, give the same result for the same arguments, and draw its randomness from its key.
These checks are decided from what only a correct solution can produce, never from the process's word:

- :func:`assert_jitted_gives_the_reference` the function is the student's own ``jax.jit`` function: its
  program (exported as it is, :func:`autograder.checks.programs.program_of` with ``as_is``) is rebuilt from
  bytes, run on the check's arguments and compared with the reference's result. A process that sends another
  program earns only what that program earns. Mark the check ``@pytest.mark.decided("program")``.
- :func:`assert_same_result_by_values` two calls on copies of the same arguments give the same result, and
  re-seeding NumPy's, Python's or torch's global generator changes nothing: decided from the results
  :func:`autograder.checks.purity.called_twice` records. Whether the arguments are left unchanged is
  :func:`autograder.checks.purity.assert_arguments_unchanged_as_values`' (which knows a donated state).
  Mark the check ``@pytest.mark.decided("values")``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks import programs, purity, structure
from autograder.checks.values import assert_trees_close, function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import decided_elsewhere

JIT_ADVICE = (
    "decorate it with @jax.jit (or write `{name} = jax.jit(...)` at module level), so that every call of the "
    "training loop runs one compiled program"
)


def fields_of(*names: str) -> Callable[[Callable], Callable]:
    """The form of a function that returns a state (for :func:`autograder.checks.purity.assert_pure_by_values`'s
    ``first``): the state's ``names`` fields as a dict, what two calls are compared by (a state's optimizer is a
    new object on every call)."""

    def form(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def fields(*args: Any) -> dict[str, Any]:
            state = fn(*args)
            return {name: getattr(state, name, None) for name in names}

        return fields

    return form


def assert_jitted_gives_the_reference(
    fn: Callable,
    *args: Any,
    expected: Any,
    name: str | None = None,
    static_argnums: Sequence[int] = (),
    rtol: float = 1e-5,
    atol: float = 1e-6,
    advice: str | None = None,
) -> programs.Program:
    """``fn`` is itself a ``jax.jit`` function whose program, on the check's ``args``, gives the reference's
    result ``expected`` (a tree: a ``TrainState`` and numbers). Pass copies of shared states: a step may donate
    its arguments. Returns the program."""
    name = name or function_name(fn)
    check = f"{name} is compiled with jax.jit"
    program = programs.program_of(
        fn,
        *args,
        as_is=True,
        static_argnums=static_argnums,
        result_like=expected,
        name=name,
        check=check,
        advice=advice or JIT_ADVICE.format(name=name),
    )
    if decided_elsewhere(fn):  # recorded for the trusted side, which runs it and decides (oracle.decided_elsewhere)
        return program
    dynamic = tuple(a for i, a in enumerate(args) if i not in static_argnums)
    got = program(*purity.fresh_copy(dynamic))
    try:
        assert_trees_close(got, expected, rtol=rtol, atol=atol, check=f"jax.jit({name}) gives the reference's values")
    except CheckFailure as wrong:  # jit is not the mistake: the values are (the program is the certificate)
        raise CheckFailure(
            check,
            f"{name} is a jax.jit function, but its compiled program does not give the reference's values: fix the "
            f"values first (the correctness check of {name} shows where); this check passes with them",
            f"{wrong.problem}\n{wrong.details}",
        ) from None
    return program


def assert_same_result_by_values(
    fn: Callable, *args: Any, expected: Any, name: str | None = None, rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    """``fn`` gives the same result when called again on copies of the same arguments, and when NumPy's, Python's
    or torch's global generator is seeded differently: decided from the values
    :func:`autograder.checks.purity.called_twice` records (the arguments are the check's own). The first result
    must be the reference's ``expected``: results recorded alike but made up are not a correct solution's."""
    shown = name or function_name(fn)
    got = structure.transformed_once(fn, purity.CALLED_TWICE, purity.called_twice)(*args)
    if not (isinstance(got, tuple) and len(got) == 4 and isinstance(got[3], dict)):
        raise CheckFailure(
            f"{shown} gives its results as data",
            f"{shown}'s results could not be recorded as data (arrays, numbers, states)",
            "return a new state and JAX arrays or numbers",
        )
    first, second, _, reseeded = got
    purity.assert_result_repeats(shown, first, second, reseeded)
    try:
        assert_trees_close(
            data_of(first), data_of(expected), rtol=rtol, atol=atol, check=f"{shown} gives the reference's values"
        )
    except CheckFailure as wrong:
        raise CheckFailure(
            f"{shown} gives the same result when called twice with the same arguments",
            f"{shown} does not give the reference's values on the arguments of this check: fix the values first "
            f"(the correctness check of {shown} shows where); this check passes with them",
            f"{wrong.problem}\n{wrong.details}",
        ) from None


def data_of(value: Any) -> Any:
    """``value`` with each state (a Flax ``struct`` dataclass) as a dict of its data fields: what two states are
    compared by. A module's own state class (batchnorm's ``TrainStateBN``) is one class object in the reference's
    module and another in the student's, as the trusted side rebuilds a recorded state; its static fields
    (``apply_fn``, ``tx``) are functions, the same only as objects."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: data_of(getattr(value, f.name, None))
            for f in dataclasses.fields(value)
            if f.metadata.get("pytree_node", True)
        }
    if type(value) in (tuple, list):
        return type(value)(data_of(v) for v in value)
    if type(value) is dict:
        return {k: data_of(v) for k, v in value.items()}
    return value
