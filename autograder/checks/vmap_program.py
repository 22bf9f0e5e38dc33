"""One vmap of the helper, decided from the program (issue 42): "``batched_linear`` is one ``jax.vmap`` of ``linear``"
on the trusted side.

Watching the helper's calls while the student's code runs (:func:`autograder.checks.vmapped.record_calls`) gives an
observed verdict, which is what this check was before. Here the batched function is lowered (:func:`autograder.checks.programs.program_of`, rebuilt
from bytes as hostile data) while every call of the helper's code has its arguments *marked* (:func:`marking`):
on entering the helper, each argument gets a term of an operation found nowhere else in the course's linear
algebra (:data:`MARKS`: a cube root on the example, an arc tangent on the weights, a sine on the bias). Each
trace of the helper then puts one marker of each kind into the program, with the argument's type as the helper
saw it: one ``jax.vmap`` gives one cube root of the whole batch ``(B, d_in)`` and the shared weights' own
``(d_in, d_out)``; a Python loop gives ``B`` cube roots of one example each, ``lax.map`` one inside its loop, a
hand-written batch none, and mapping the weights too an arc tangent of ``(B, d_in, d_out)``.

The program must also give the reference's values on the marked inputs (:func:`marked_inputs`): a process that
sends another program than its function's earns these points only with one that computes the batched function
from one vmapped trace of the marked helper, which is a correct solution's.

- :func:`marking`                          the helper's arguments marked on each call (a context)
- :func:`marked_inputs`                    the check's inputs as the marked helper sees them
- :func:`assert_program_is_one_vmap`       the program traces the helper once, through ``jax.vmap``
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from autograder.checks import programs
from autograder.checks.values import function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import decided_elsewhere

SHIFT = 4.0
# (the marker operation in the program's text, the term added to the argument): one per argument, in order
MARKS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("stablehlo.cbrt", lambda a: a + jnp.cbrt(a + SHIFT)),
    ("stablehlo.atan2", lambda a: a + jnp.arctan2(a, SHIFT)),
    ("stablehlo.sine", lambda a: a + jnp.sin(a)),
)
LABEL = "helper marked"


def _code_of(helper: Callable) -> Any:
    """The code object the helper's calls run (through any wrappers: a recording, ``jax.jit``)."""
    return inspect.unwrap(helper).__code__


@contextlib.contextmanager
def marking(helper: Callable) -> Iterator[None]:
    """While inside, every call of ``helper``'s code gets its first arguments marked (:data:`MARKS`). The
    arguments are rebound as the call begins (the profile function's frame locals, written back to the frame).
    JAX's caches are cleared first, since a jitted function traced before would run no Python at all, and after,
    since a jitted function of the student's traced inside keeps its marked trace otherwise."""
    code = _code_of(helper)
    names = code.co_varnames[: min(code.co_argcount, len(MARKS))]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            local = frame.f_locals  # once: each read of f_locals refreshes it from the frame, undoing earlier writes
            for name, (_, mark) in zip(names, MARKS):
                local[name] = mark(local[name])

    jax.clear_caches()
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
        jax.clear_caches()


def marked_inputs(*args: Any) -> tuple:
    """The check's ``args`` with the marks of :data:`MARKS` (each elementwise: a mapped argument marked whole is
    each example marked)."""
    return tuple(mark(jnp.asarray(a)) if i < len(MARKS) else a for i, (a, (_, mark)) in enumerate(zip(args, MARKS)))


def with_helper_marked(helper: Callable) -> Callable[[Callable], Callable]:
    """The form (for ``programs.program_of``) of a batched function whose calls of ``helper`` are marked."""

    def form(fn: Callable) -> Callable:
        def run(*args: Any) -> Any:
            with marking(helper):
                return fn(*args)

        return run

    return form


def _marker_shapes(text: str, op: str) -> list[tuple[int, ...]]:
    """The result shape of each ``op`` in the program's text."""
    found = []
    for line in text.splitlines():
        if re.search(rf"=\s*\"?{re.escape(op)}\b", line):
            types = re.findall(r"tensor<((?:\d+x)*)[a-z]\w*>", line)
            found.append(tuple(int(d) for d in types[-1].split("x") if d) if types else ())
    return found


def _what_vmap_does(helper: str) -> str:
    return (
        f"jax.vmap({helper}, in_axes=(0, None, None)) takes {helper}, written for ONE example, and returns a "
        "function of the whole batch: it maps axis 0 of the first argument and shares the others, and it adds "
        "the batch axis to every operation inside (one example's x @ W becomes one matrix product over all B "
        "examples). It is one call and one program, with no loop."
    )


def assert_program_is_one_vmap(
    fn: Callable,
    helper: Callable,
    *args: Any,
    expected: Any,
    caller: str,
    names: Sequence[str],
    shared: Sequence[int] = (1, 2),
) -> programs.Program:
    """The program of ``fn(*args)`` (the student's batched function; axis 0 of ``args[0]`` is the batch) traces
    ``helper`` once, through ``jax.vmap``, mapping the first argument and sharing those in ``shared``, and gives
    ``expected`` (the reference's batched function on :func:`marked_inputs` of ``args``): see the module. ``names``
    are the helper's arguments as the contract names them (for the message)."""
    name, batch = function_name(helper), int(args[0].shape[0])
    check = f"{caller} is built from {name} with one jax.vmap"
    program = programs.program_of(
        fn, *args, form=with_helper_marked(helper), form_label=LABEL, result_like=expected, name=caller, check=check
    )
    example = tuple(args[0].shape[1:])
    calls = _marker_shapes(program.text, MARKS[0][0])
    batched = [shape for shape in calls if shape == (batch, *example)]
    if not calls:
        raise CheckFailure(
            check,
            f"{caller} never calls {name}: a hand-written batched computation (like xs @ W + b) gives the right "
            "numbers, but it is not what this exercise is about",
            _what_vmap_does(name) + f"\nWrite {name} for one example and let jax.vmap derive {caller} from it.",
        )
    if not batched:
        how = (
            "lax.map (or lax.scan) runs it once per example, one after another: a loop compiled into the program"
            if len(calls) == 1 and batch > 1
            else "a loop over the examples (a Python for loop, a comprehension, or lax.map/lax.scan) runs it once "
            "per example, one after another"
        )
        raise CheckFailure(
            check,
            f"{caller} calls {name} on one example at a time ({len(calls)} call(s) for a batch of {batch}): {how}",
            _what_vmap_does(name),
        )
    if len(calls) > 1:
        raise CheckFailure(
            check,
            f"{caller} calls a vmapped {name} {len(calls)} times for one batch",
            "one jax.vmap over the whole batch is enough: " + _what_vmap_does(name),
        )
    _assert_shared(program.text, names, args, shared, caller=caller, name=name, check=check)
    if decided_elsewhere(fn):  # recorded for the trusted side, which runs it and decides (oracle.decided_elsewhere)
        return program
    try:
        programs.assert_gives(program, *args, expected=expected)
    except CheckFailure as wrong:
        raise CheckFailure(
            check,
            f"{caller} is one vmap of {name}, but its compiled program does not give the reference's values: fix the "
            "values first (the correctness check shows where); this check passes with them",
            f"{wrong.problem}\n{wrong.details}",
        ) from None
    return program


def _assert_shared(
    text: str, names: Sequence[str], args: tuple, shared: Sequence[int], *, caller: str, name: str, check: str
) -> None:
    """The arguments in ``shared`` reach the helper as themselves: their markers have the argument's own shape."""
    mapped = [
        names[i] if i < len(names) else f"argument {i}"
        for i in shared
        if i < len(MARKS) and any(shape != tuple(args[i].shape) for shape in _marker_shapes(text, MARKS[i][0]))
    ]
    if mapped:
        which = ", ".join(mapped)
        raise CheckFailure(
            check,
            f"{caller} maps {name} over {which} too, so every example gets its own copy of {which}",
            "the parameters are the same for every example: give them in_axes None "
            "(jax.vmap(f, in_axes=(0, None, None))) so they are shared, not broadcast and copied B times",
        )
