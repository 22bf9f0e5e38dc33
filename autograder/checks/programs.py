"""Programs: the student's function as the program it compiles to, decided on the trusted side (issue 42).

A check that looks at *what a function traces to* (it works under ``jax.jit``, it is jitted, its program
does not grow with the batch, it builds no Jacobian) asks :func:`program_of` for that program. In the
process that runs the student's code, :func:`program_of` lowers the function with ``jax.export`` and
records the lowered program (StableHLO bytecode and what calling it needs: which arguments it keeps, how
many devices, its shardings) as the output of a transform of the function
(:func:`autograder.checks.structure.transformed_once`), so it crosses to the trusted side as a value of
the transcript (a ``uint8`` array). On both sides :class:`~autograder.checks.lowered.Program` rebuilds it from those bytes alone, as
hostile data: the arguments' shapes and the result's structure are the check's own (the inputs it passes
and the reference's result), never the student's; a program over :data:`MAX_PROGRAM_BYTES`, with effects,
a host callback or a custom call the course does not use (:data:`ALLOWED_CUSTOM_CALLS`) is refused. The
check then runs the program on its inputs against the reference and inspects it (its largest value, its
number of operations, its collectives). A process that sends another program than its function's earns
only what that program earns: it must compute the reference's values and have the property.

- :func:`program_of`                 the program of a function on some arguments (jitted by the check, or as it is)
- :func:`assert_compiles_to_the_reference` it works under jit: the program gives the reference's values
- :func:`assert_program_size_constant` the program does not grow with ``what`` (no unrolled Python loop)
- :func:`assert_no_value_of_size`     no value of the program has ``limit`` elements (no Jacobian or Hessian)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from autograder.checks import growth, structure
from autograder.checks.lowered import MAX_PROGRAM_BYTES, Program, pack  # noqa: F401  (named here: checks call programs.<name>)
from autograder.checks.values import assert_trees_close, function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import decided_elsewhere

MAX_PROGRAMS_KEPT = 64  # per function and check form: the programs of a check's examples (a few kilobytes each)
JIT_ADVICE = "under jit every shape must be known before the values are, and Python sees tracers, not numbers"


class _NotJitted(Exception):
    """The function is not the result of ``jax.jit`` (a check of "is jitted")."""


def _exporter(
    fixed: tuple,
    static_argnums: tuple[int, ...],
    static_argnames: tuple[str, ...],
    as_is: bool,
    form: Callable[[Callable], Callable] | None,
):
    """The transform whose output is the program: ``fn`` with ``fixed`` first arguments (or ``form(fn)``), jitted
    with the static arguments (``as_is``: the function itself, which must be jitted already), lowered for the
    given arguments."""

    def transform(fn: Callable) -> Callable:
        if as_is:
            if not hasattr(fn, "trace") or not hasattr(fn, "lower"):
                raise _NotJitted(type(fn).__name__)
            target = fn
        else:
            target = jax.jit(
                form(fn) if form is not None else lambda *args, **kwargs: fn(*fixed, *args, **kwargs),
                static_argnums=static_argnums,
                static_argnames=static_argnames,
            )

        made: dict[tuple, np.ndarray] = {}  # this function's programs so far, by the signature of the call

        def lowered(*args: Any, **kwargs: Any) -> np.ndarray:
            # jit traces a function once per signature, so the same signature lowers to the same program: a later
            # example of it reuses the bytes (exporting them again cost most of a program check's time)
            key = _signature(args, kwargs, None if as_is else (tuple(static_argnums), tuple(static_argnames)))
            if key is not None and key in made:
                return made[key].copy()
            program = pack(jax.export.export(target)(*args, **kwargs))
            if key is not None and len(made) < MAX_PROGRAMS_KEPT:
                made[key] = program.copy()
            return program

        return lowered

    return transform


def _signature(args: tuple, kwargs: dict, statics: tuple[tuple[int, ...], tuple[str, ...]] | None) -> tuple | None:
    """What jit keys its trace of a call on, or None when it cannot be told here: the arguments' structure, each
    array's type, shape, dtype, weak type and placement, and the value of every static argument (``statics``: the
    positions and names the check made static; None: the function's own jit, whose static arguments are not known,
    so every Python scalar's value counts)."""
    static_nums, static_names = statics if statics is not None else ((), ())
    entries: list[Any] = [bool(jax.config.read("jax_enable_x64"))]
    named = [(i, a) for i, a in enumerate(args)] + [(k, v) for k, v in sorted(kwargs.items())]
    try:
        for where, value in named:
            static = where in static_nums if isinstance(where, int) else where in static_names
            leaves, tree = jax.tree.flatten(value)
            entries.append((where, tree))
            for leaf in leaves:
                if isinstance(leaf, jax.core.Tracer):
                    return None
                if static or (statics is None and isinstance(leaf, (bool, int, float, complex))):
                    entries.append((type(leaf), leaf))
                elif isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)):
                    placed = leaf.sharding if isinstance(leaf, jax.Array) else None
                    entries.append((type(leaf), jax.typeof(leaf), placed))
                else:
                    return None
        key = tuple(entries)
        hash(key)
    except Exception:  # noqa: BLE001 - an argument jit would not key on plainly (unhashable, a tracer): not kept
        return None
    return key


def _dynamic(args: tuple, kwargs: dict, static_argnums: Sequence[int], static_argnames: Sequence[str]):
    return (
        tuple(a for i, a in enumerate(args) if i not in static_argnums),
        {k: v for k, v in kwargs.items() if k not in static_argnames},
    )


def program_of(
    fn: Callable,
    *args: Any,
    result_like: Any,
    fixed: tuple = (),
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    as_is: bool = False,
    form: Callable[[Callable], Callable] | None = None,
    form_label: str = "",
    name: str | None = None,
    check: str | None = None,
    advice: str | None = None,
    explain: bool = True,
    **kwargs: Any,
) -> Program:
    """The program ``fn`` compiles to for ``args`` and ``kwargs`` (the check's own), rebuilt from the bytes the
    student's side made of it (see the module).

    ``fn`` is the student's function as the check received it (``student.<name>``); ``fixed`` are first
    arguments closed over (``f`` of ``hvp(f, x, v)``), named by their ``__name__`` in the recording's label.
    ``static_argnums``/``static_argnames`` of ``args``/``kwargs`` are jit's static arguments: the check's own
    ``jax.jit``, or with ``as_is`` the student's (``fn`` must be jitted itself: the check "is jitted").
    ``result_like`` has the structure, shapes and dtypes of the result (the reference's, on these arguments).
    ``form`` (named ``form_label``) makes the function of the arguments from ``fn`` instead (e.g. a ``jax.vmap``
    of it). A function that cannot be traced fails with what it does wrong (:func:`structure.jit_error_explanation`);
    with ``explain=False`` its error is the caller's to report.
    """
    name = name or function_name(fn)
    check = check or f"{name} works under jax.jit"
    label = f"program|{'own-jit' if as_is else 'jit'}{list(static_argnums)}{sorted(static_argnames)}"
    if form_label:
        label += f"|{form_label}"
    if fixed:
        label += "|" + ",".join(getattr(f, "__name__", type(f).__name__) for f in fixed)
    transform = _exporter(tuple(fixed), tuple(static_argnums), tuple(static_argnames), as_is, form)
    try:
        payload = structure.transformed_once(fn, label, transform)(*args, **kwargs)
    except CheckFailure:
        raise
    except _NotJitted as err:
        raise CheckFailure(
            check,
            f"{name} is not a jax.jit function (it is a {err})",
            advice
            or "decorate it with @jax.jit (with the contract's static arguments), so every call runs "
            "one compiled program",
        ) from None
    except Exception as err:  # noqa: BLE001 - classified below
        explanation = structure.jit_error_explanation(err) if explain else None
        if explanation is None:
            raise
        what, instead = explanation
        raise CheckFailure(check, f"{name} cannot be compiled with jax.jit: {what}", advice or instead) from None
    dyn_args, dyn_kwargs = _dynamic(args, kwargs, static_argnums, static_argnames)
    elsewhere = decided_elsewhere(fn)
    return Program(payload, dyn_args, dyn_kwargs, result_like, name=name, check=check, decided_elsewhere=elsewhere)


def assert_compiles_to_the_reference(
    fn: Callable,
    *args: Any,
    expected: Any,
    fixed: tuple = (),
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    as_is: bool = False,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    name: str | None = None,
    check: str | None = None,
    advice: str | None = None,
    eager: Callable | None = None,
    **kwargs: Any,
) -> Program:
    """``fn`` (the student's) compiles under ``jax.jit``, and its program gives, on the check's ``args``, what
    it gives called without jit and the reference's values ``expected``: decided from the program and the
    recorded values (see the module); ``eager`` (e.g. :func:`structure.eagerly`) stands for ``fn`` called without jit.
    Where ``fn`` only records the student's answers for the trusted side (``oracle.decided_elsewhere``), the program
    and the call without jit are recorded and nothing is run or compared: that side's verdict is the check's.
    Returns the program for further inspection."""
    name = name or function_name(fn)
    check = check or f"{name} works under jax.jit"
    program = program_of(
        fn,
        *args,
        result_like=expected,
        fixed=fixed,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        as_is=as_is,
        name=name,
        check=check,
        advice=advice,
        **kwargs,
    )
    if decided_elsewhere(fn):
        # a process that records the student's answers for the trusted side, which runs this program on its own
        # inputs and compares it with the recorded call without jit and with the reference's values: the check's
        # verdict is that side's. Here the program is only recorded (above), and the call without jit.
        structure.called_without_jit(eager or fn, *fixed, *args, **kwargs)
        return program
    dynamic_args, dynamic_kwargs = _dynamic(args, kwargs, static_argnums, static_argnames)
    got = program(*dynamic_args, **dynamic_kwargs)
    structure.assert_same_as_without_jit(got, eager or fn, *fixed, *args, name=name, rtol=rtol, atol=atol, **kwargs)
    try:
        assert_trees_close(got, expected, rtol=rtol, atol=atol, check=f"jax.jit({name}) gives the reference's values")
    except CheckFailure as wrong:  # jit is not the mistake: the values are (the program is the certificate)
        raise CheckFailure(
            wrong.check,
            f"{name} works under jax.jit (it gives what it gives without jit), but not the reference's values: "
            f"fix the values first (the correctness check of {name} shows where); this check passes with them",
            f"{wrong.problem}\n{wrong.details}",
        ) from None
    return program


def assert_gives(
    program: Program, *args: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6, **kwargs: Any
) -> None:
    """The program gives the reference's values ``expected`` on the check's ``args`` (a forged program must be
    a correct one). Where the program was only recorded for the trusted side (``program.decided_elsewhere``),
    nothing is run: that side runs it on its own inputs, and its verdict is the check's. A check that inspects the
    results further uses :func:`gives`."""
    if program.decided_elsewhere:
        return
    gives(program, *args, expected=expected, rtol=rtol, atol=atol, **kwargs)


def gives(program: Program, *args: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6, **kwargs: Any) -> Any:
    """What the program gives on the check's ``args``, which must be the reference's values ``expected``; always
    run, for a check that inspects the results further (where they live)."""
    got = program(*args, **kwargs)
    assert_trees_close(
        got,
        expected,
        rtol=rtol,
        atol=atol,
        check=f"the compiled program of {program.name} gives the reference's values",
    )
    return got


def assert_program_size_constant(programs: dict[int, Program], what: str, *, name: str, advice: str) -> None:
    """The programs (by the size of ``what``) have the same number of operations: no Python loop unrolled."""
    sizes = {n: p.operations() for n, p in programs.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{n}: {s} operations" for n, s in sizes.items())
        raise CheckFailure(
            f"{name} compiles to the same program whatever the size of {what}",
            f"the compiled program of {name} grows with the size of {what} ({shown})",
            advice,
        )


def assert_work_linear_in_batch(
    small: tuple[int, Program], large: tuple[int, Program], *, name: str, contract: str
) -> None:
    """No array of the program grows faster than the batch: from the ``small`` to the ``large`` batch (size, program)
    the largest array and all arrays together grow at most linearly (with slack for constants); a B x B array is
    what a Jacobian of the vector of all B losses builds."""
    (n_small, p_small), (n_large, p_large) = small, large
    found = {n_small: p_small.values(computed=True), n_large: p_large.values(computed=True)}
    growth.assert_growth_linear(found, name=name, values="the arrays of its compiled program", contract=contract)


def assert_no_value_of_size(program: Program, limit: int, *, check: str, problem: str, advice: str) -> None:
    """No array of the program has ``limit`` elements or more (a Jacobian or Hessian where a vector will do)."""
    elements, kind = program.largest_value()
    if elements >= limit:
        raise CheckFailure(check, f"{problem}: its program holds a {kind} ({elements} elements)", advice)
