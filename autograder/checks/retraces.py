"""Retraces decided on the trusted side (issue 42): a function that one compiled program serves on every call of a
check's loop, certified from its program and its source, with the count the student's process observes kept as
the first word.

A call traces and compiles again for one of two reasons a student controls:

1. a varying argument is baked into the program (a static argument that changes per call, a value read on the host
   from traced state and passed on as static, a shape computed from a value). Decided from *the program*
   (:func:`assert_one_program`): the function, jitted by the check with every varying argument traced, exports to
   one program (:func:`autograder.checks.programs.program_of`, rebuilt on the trusted side from bytes) that gives the
   reference's values on every input of the check's loop. A function that reads a traced value on the host cannot
   be traced so; one that bakes an argument into the program gives that call's values for every call.
2. a cache miss on the Python side (a new ``jax.jit`` of a function made per call, a cache cleared, a compilation
   ahead of time per call, a returned state with new static parts). Decided from *the source*
   (:mod:`autograder.core.retrace_sources`, the analyses ``retraces``, ``retraces_in_a_loop`` and
   ``jitted_without_retraces`` of :data:`autograder.core.from_source.ANALYSES`): mark the check
   ``@pytest.mark.decided("program", "<analysis>")`` and the trusted side decides a claimed pass by both.

The loop itself (``tracing`` and ``loops``' presets, JAX's own trace events and cache-miss explanation) runs where
the student's code runs (:func:`observed`): its failure is the student's first message, and a failure there still
fails; the trusted side reads only that it ran to the end.

- :func:`observed`             a loop of the student's real function, run in the student's process
- :func:`assert_one_program`   the one program of a function gives the reference's values on every call of a loop
- :func:`assert_no_retrace`    ``tracing.assert_no_retrace`` decided so (fresh same-shaped arguments)
- :func:`reference_loop`       the calls and results of a loop that feeds the reference's results back
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.checks import programs, purity, structure, tracing
from autograder.checks.values import function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import StandIn, decided_elsewhere

RAN = np.int8(1)  # what the student's process records when the loop ran to the end
BAKED_ADVICE = (
    "one compiled program must serve every call: take the arguments that change from call to call as traced "
    "arguments (not static_argnums/static_argnames), and never turn a traced value into a Python number "
    "(int(...), float(...), .item()) to pass it on as static or to pick a shape"
)


def observed(fn: Callable, label: str, loop: Callable[[Callable], None], *, name: str | None = None) -> None:
    """``loop(fn)`` with the student's real function where the student's code runs (it raises the observed failure,
    with JAX's own explanation); while a grading process records, it records that the loop ran, and the trusted side
    reads that record instead of running it (``label`` names it, one per loop of a check)."""
    if not isinstance(fn, StandIn):  # the student's own run: nothing records
        loop(fn)
        return

    def transform(real: Callable) -> Callable:
        def run() -> np.ndarray:
            loop(real)
            return np.asarray(RAN)

        return run

    ran = structure.transformed_once(fn, f"retraces|{label}", transform)()
    if not (isinstance(ran, np.ndarray) and ran.shape == () and ran.dtype == RAN.dtype and int(ran) == int(RAN)):
        shown = name or function_name(fn)
        raise CheckFailure(
            f"{shown}'s loop ran in the grading process",
            f"the grading process did not report that the loop of {shown}'s calls ran to the end",
            "the check ran differently in your process than on the grader's side; make sure your module does not "
            "change the grader, NumPy or pytest",
        )


def assert_one_program(
    fn: Callable,
    calls: Sequence[tuple[tuple, dict]],
    expected: Sequence[Any],
    *,
    name: str | None = None,
    check: str | None = None,
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    as_is: bool = False,
    run: Callable[[tuple], tuple] = lambda args: args,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> programs.Program:
    """One program of ``fn`` (the check's ``jax.jit`` of it with ``static_argnums``/``static_argnames`` only; with
    ``as_is`` the student's own), exported for the first of ``calls`` (``(args, kwargs)``, the loop's), gives the
    reference's ``expected`` result of every call: no varying argument is baked into it. ``run(args)`` places the
    dynamic arguments for the program (devices). Returns the program (recorded only, where the trusted side decides)."""
    name = name or function_name(fn)
    check = check or f"{name} compiles to one program that serves every call of the loop"
    (args, kwargs), first = calls[0], expected[0]
    try:
        program = programs.program_of(
            fn,
            *args,
            result_like=first,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            as_is=as_is,
            name=name,
            check=check,
            advice=BAKED_ADVICE,
            **kwargs,
        )
    except CheckFailure:
        raise
    except Exception as err:  # noqa: BLE001 - e.g. a traced argument handed on as a static one (not hashable)
        first_line = (str(err).strip().splitlines() or [""])[0][:200]
        raise CheckFailure(
            check,
            f"{name} cannot be compiled with the arguments that change between calls traced ({type(err).__name__}: "
            f"{first_line})",
            BAKED_ADVICE,
        ) from None
    if decided_elsewhere(fn):  # recorded for the trusted side, which runs it on every call of the loop and decides
        return program
    for i, ((args, kwargs), want) in enumerate(zip(calls, expected)):
        dynamic = tuple(a for j, a in enumerate(args) if j not in static_argnums)
        given = {k: v for k, v in kwargs.items() if k not in static_argnames}
        try:
            programs.assert_gives(program, *run(dynamic), expected=want, rtol=rtol, atol=atol, **given)
        except CheckFailure as wrong:
            raise CheckFailure(
                check,
                f"the program {name} compiles to for the loop's first call does not give the reference's values for "
                f"call {i + 1}: something that changes between the calls is baked into it (or the values are wrong: "
                f"the correctness check of {name} shows where)",
                f"{BAKED_ADVICE}\n{wrong.problem}",
            ) from None
    return program


def assert_no_retrace(
    fn: Callable,
    make_args: Callable[[int], tuple],
    *,
    reference: Callable,
    warmup: int = 2,
    calls: int = 3,
    name: str | None = None,
) -> None:
    """:func:`tracing.assert_no_retrace <autograder.checks.tracing.assert_no_retrace>` observed (:func:`observed`),
    and its calls served by one program (:func:`assert_one_program`); mark the check
    ``decided("program", "retraces")`` for the rest (the source)."""
    name = name or function_name(fn)
    observed(
        fn, "fresh", lambda real: tracing.assert_no_retrace(real, make_args, warmup=warmup, calls=calls, name=name)
    )
    every: list[tuple[tuple, dict]] = [(make_args(i), {}) for i in range(warmup + calls)]
    assert_one_program(
        fn,
        every,
        [reference(*args) for args, _ in every],
        name=name,
        check=f"{name} does not trace or compile again on same-shaped inputs once warm",
    )


def reference_loop(
    reference: Callable, carry: Any, make_args: Callable[[int, Any], tuple], next_carry: Callable, calls: int
) -> tuple[list[tuple[tuple, dict]], list[Any]]:
    """The calls of a loop (``make_args(i, carry)``, then ``carry = next_carry(i, carry, result)``, as
    ``loops.assert_no_retrace_in_loop`` runs it) with the reference's results fed back, and those results: what
    :func:`assert_one_program` runs the student's one program on."""
    every: list[tuple[tuple, dict]] = []
    expected: list[Any] = []
    for i in range(calls):
        args = make_args(i, carry)
        result = reference(*purity.fresh_copy(args))
        every.append((args, {}))
        expected.append(result)
        carry = next_carry(i, carry, result)
    return every, expected
