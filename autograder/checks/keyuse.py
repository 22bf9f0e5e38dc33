"""Key use decided from the program (issue 42): "uses every PRNG key at most once" on the trusted side.

JAX's key-reuse checker (:func:`autograder.checks.keys.assert_no_key_reuse`) watches the function while it runs
in the student's process: its verdict is observed. The course's PRNG functions have a contract that fixes their
split pattern (``curriculum.md``: the keys and floats must match the reference bit for bit, up to float32
rounding), and the reference uses every key once. So here the verdict comes from the program the function
compiles to (:func:`autograder.checks.programs.program_of`, rebuilt from bytes as hostile data): run on the check's
keys, it must give the reference's results. A key used twice in the computation of a result repeats random bits
where the reference has fresh ones (two draws that agree, a returned key that was already split), so that result
differs; a process that sends another program than its function's earns these points only with a program that
computes the reference's values, which is a correct solution's.

Only when the program's values differ does the check run the function under JAX's checker (in the process that
runs it), to say *where* a key is used twice (the student's line and variable): that run chooses the message of
a failure and never makes a pass.

The program is also read (:func:`keys_used_twice`): one key value passed to two calls that hash it (two draws, a
split and a draw, or the same split twice, which gives the reference's values but is a key used twice), or to one
and returned, fails. That reading can only fail a program, so what it misses costs nothing to the certificate.
What neither shows: a key used twice in a computation whose result is thrown away (a draw that reaches no output):
``jax.jit`` drops it from the program, and it changes no value.

- :func:`assert_program_uses_each_key_once`   the program gives the reference's keys and draws for the key
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from autograder.checks import keys, programs, structure
from autograder.checks.values import assert_trees_close, function_name
from autograder.core.failures import CheckFailure
from autograder.core.oracle import StandIn, decided_elsewhere

_FUNCTION = re.compile(r"func\.func (?:public |private )?@([\w.$-]+)\(")
_CALL = re.compile(r"(?:func\.)?call @([\w.$-]+)\(([^)]*)\)\s*:\s*\(([^)]*)\)")
_ALIAS = re.compile(r"^\s*(%[\w#]+) = (?:sdy\.sharding_constraint|stablehlo\.optimization_barrier) (%[\w#]+)\b")
_RETURN = re.compile(r"^\s*(?:func\.)?return\b([^:]*)")
_KEY_TYPE = re.compile(r"tensor<(?:\d+x)*2xui32>")
_VALUE = re.compile(r"%[\w#]+")
_HASH = "threefry2x32"  # JAX's hash of a key and a counter: every draw and split calls it

VALUES_ADVICE = (
    "the split pattern is part of the contract (see the docstring): split exactly as it says and draw once with "
    "each subkey; the correctness check of the function shows which result differs"
)


def assert_program_uses_each_key_once(
    fn: Callable,
    reference: Callable,
    key: Any,
    *args: Any,
    static_argnums: Sequence[int] = (),
    key_argnum: int = 0,
    eager: Callable | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> programs.Program:
    """``fn(key, *args)`` (the student's) uses every PRNG key at most once: decided from its compiled program,
    which must give what the jitted ``reference`` gives on ``key`` (see the module). ``key_argnum`` puts ``key``
    elsewhere among the arguments (``fn(*args[:key_argnum], key, *args[key_argnum:])``); ``static_argnums`` index
    that call as jit's; ``eager`` (e.g. :func:`structure.eagerly` of ``fn``) runs ``fn`` for the message of a
    failure. Returns the program."""
    name = function_name(fn)
    check = f"{name} uses every PRNG key at most once"
    call = (*args[:key_argnum], key, *args[key_argnum:])
    expected = structure.jit_once(reference, tuple(static_argnums))(*call)
    program = programs.program_of(
        fn, *call, static_argnums=static_argnums, result_like=expected, name=name, check=check
    )
    reused = keys_used_twice(program.text)
    if reused:
        _explain_key_reuse(eager or fn, call, key_argnum, check)
        raise CheckFailure(
            check,
            f"the compiled program of {name} passes one key to two draws or splits, or returns a key it drew or "
            f"split with ({reused[0]})",
            keys.SPLIT_ADVICE,
        )
    if decided_elsewhere(fn):  # recorded for the trusted side, which runs it and decides (oracle.decided_elsewhere)
        return program
    dynamic = tuple(a for i, a in enumerate(call) if i not in static_argnums)
    got = program(*dynamic)
    try:
        assert_trees_close(got, expected, rtol=rtol, atol=atol, check=check)
    except CheckFailure as wrong:
        _explain_key_reuse(eager or fn, call, key_argnum, check)
        raise CheckFailure(
            check,
            f"the compiled program of {name} gives other keys or draws than the reference for the same key (a key "
            "used twice repeats random bits where the contract's split pattern has fresh ones, and another split "
            "pattern gives other ones): fix the values first; this check passes with them",
            f"{VALUES_ADVICE}\n{wrong.problem}\n{wrong.details}",
        ) from None
    return program


def _explain_key_reuse(fn: Callable, call: tuple, key_argnum: int, check: str) -> None:
    """Raise JAX's key-reuse checker's account (line and variable) if ``fn`` reuses a key: the message of a
    failure already decided. Anything else the run raises is not this check's to report. Not for a function that
    stands for the student's (``grade``'s processes: it answers what was recorded, and the trusted side has no
    answer for a call made only to word a failure): there the failure keeps the program's account."""
    if isinstance(fn, StandIn) or isinstance(getattr(fn, "__wrapped__", None), StandIn):
        return
    try:
        typed = (*call[:key_argnum], keys.as_typed(call[key_argnum]), *call[key_argnum + 1 :])
        keys.assert_no_key_reuse(fn, *typed)
    except CheckFailure as reuse:
        raise CheckFailure(check, reuse.problem, reuse.details) from None
    except Exception:  # noqa: BLE001 - the failure is decided; this run only words it
        return


def _functions(text: str) -> dict[str, str]:
    """The program's functions by name: the text of each, up to the next."""
    found = list(_FUNCTION.finditer(text))
    ends = [m.start() for m in found[1:]] + [len(text)]
    return {m.group(1): text[m.start() : end] for m, end in zip(found, ends)}


def _random_functions(functions: dict[str, str]) -> set[str]:
    """The functions that hash a key (JAX's ``threefry2x32``), themselves or through the functions they call."""
    calls = {name: {m.group(1) for m in _CALL.finditer(body)} for name, body in functions.items()}
    found = {name for name in functions if name.startswith(_HASH)}
    while True:
        more = {name for name, callees in calls.items() if callees & found} - found
        if not more:
            return found
        found |= more


def _key_uses(body: str, random: set[str], is_main: bool) -> tuple[dict[str, int], set[str]]:
    """(uses of each value by a hashing call or by ``main``'s return, the values a hashing call takes as a key)
    in one function's text; a sharding constraint or an optimization barrier of a value is that value."""
    alias: dict[str, str] = {}
    uses: dict[str, int] = {}
    hashed: set[str] = set()
    for line in body.splitlines():
        match = _ALIAS.match(line)
        if match:
            alias[match.group(1)] = alias.get(match.group(2), match.group(2))
            continue
        for call in _CALL.finditer(line):
            if call.group(1) not in random:
                continue
            operands = [o.strip() for o in call.group(2).split(",")]
            for operand, kind in zip(operands, call.group(3).split(",")):
                if _KEY_TYPE.fullmatch(kind.strip()):
                    value = alias.get(operand, operand)
                    uses[value] = uses.get(value, 0) + 1
                    hashed.add(value)
        returned = _RETURN.match(line) if is_main else None
        if returned:
            for operand in _VALUE.findall(returned.group(1)):
                value = alias.get(operand, operand)
                uses[value] = uses.get(value, 0) + 1
    return uses, hashed


def keys_used_twice(text: str) -> list[str]:
    """``function: value`` for each key value (a ``uint32[..., 2]``) of a program's text that is passed to two
    calls that hash it (a draw or a split), or to one and returned by the program (its ``main``)."""
    functions = _functions(text)
    random = _random_functions(functions)
    reused = []
    for name, body in functions.items():
        uses, hashed = _key_uses(body, random, name == "main")
        reused += [f"{name}: {value}" for value in sorted(hashed) if uses[value] > 1]
    return reused
