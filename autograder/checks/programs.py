"""Programs: the student's function as the program it compiles to, decided on the trusted side (issue 42).

A check that looks at *what a function traces to* (it works under ``jax.jit``, it is jitted, its program
does not grow with the batch, it builds no Jacobian) asks :func:`program_of` for that program. In the
process that runs the student's code, :func:`program_of` lowers the function with ``jax.export`` and
records the lowered program (StableHLO bytecode and what calling it needs: which arguments it keeps, how
many devices, its shardings) as the output of a transform of the function
(:func:`autograder.checks.structure.transformed_once`), so it crosses to the trusted side as a value of
the transcript (a ``uint8`` array). On both sides :class:`Program` rebuilds it from those bytes alone, as
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

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from autograder.checks import growth, structure
from autograder.checks.values import assert_trees_close, function_name
from autograder.core.failures import CheckFailure

# A lowered course function is a few kilobytes to a few hundred; a program over this is refused unread.
MAX_PROGRAM_BYTES = 4_000_000
MAX_HEADER_BYTES = 20_000
# Custom calls jax itself emits for sharding annotations (module 11); any other (a host callback, a LAPACK
# kernel, a pointer into the process) is code of the process that made the program, not a course function's.
ALLOWED_CUSTOM_CALLS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
_FORBIDDEN_OPS = ("stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv")
_CUSTOM_CALL = re.compile(
    r"(?:stablehlo\.custom_call|mhlo\.custom_call)\s*@([\w.$-]+)|call_target_name\s*=\s*\"([^\"]*)\""
)
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-z]\w*)>")
_OPERATION = re.compile(r"\b(?:stablehlo|chlo|mhlo|func|sdy)\.[a-z_]+\b")
_MAGIC = b"AGPROG1\n"

JIT_ADVICE = "under jit every shape must be known before the values are, and Python sees tracers, not numbers"


class _NotJitted(Exception):
    """The function is not the result of ``jax.jit`` (a check of "is jitted")."""


def _pack(exported: Any) -> np.ndarray:
    """The bytes that cross: a header (JSON: kept arguments, devices, shardings) and the StableHLO bytecode."""
    header = {
        "kept": [int(i) for i in exported.module_kept_var_idx],
        "devices": int(exported.nr_devices),
        "version": int(exported.calling_convention_version),
        "global_constants": bool(exported.uses_global_constants),
        "effects": len(exported.ordered_effects) + len(exported.unordered_effects),
        "in_shardings": [None if s is None else _sharding_text(s) for s in exported.in_shardings_hlo],
        "out_shardings": [None if s is None else _sharding_text(s) for s in exported.out_shardings_hlo],
    }
    raw = json.dumps(header).encode()
    payload = _MAGIC + len(raw).to_bytes(4, "big") + raw + bytes(exported.mlir_module_serialized)
    return np.frombuffer(payload, np.uint8).copy()


def _sharding_text(sharding: Any) -> str:
    return sharding.to_proto().SerializeToString().hex()


def _sharding_from(text: Any) -> Any:
    from jax._src.lib import xla_client  # HloSharding: what jax.export's own deserializer builds

    if not isinstance(text, str) or len(text) > 4000:
        raise ValueError("malformed sharding")
    proto = xla_client.OpSharding()
    proto.ParseFromString(bytes.fromhex(text))
    return xla_client.HloSharding.from_proto(proto)


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

        def lowered(*args: Any, **kwargs: Any) -> np.ndarray:
            return _pack(jax.export.export(target)(*args, **kwargs))

        return lowered

    return transform


def _dynamic(args: tuple, kwargs: dict, static_argnums: Sequence[int], static_argnames: Sequence[str]):
    return (
        tuple(a for i, a in enumerate(args) if i not in static_argnums),
        {k: v for k, v in kwargs.items() if k not in static_argnames},
    )


class Program:
    """A program rebuilt from the bytes a process sent, for calling with ``args``/``kwargs`` and returning
    ``result_like``'s structure (both the check's own). Raises :class:`CheckFailure` (``check``) when the bytes
    are not a program the course could have made (see the module)."""

    def __init__(self, payload: Any, args: tuple, kwargs: dict, result_like: Any, *, name: str, check: str):
        self.name = name
        self.check = check
        raw = self._bytes(payload)
        header, module = self._parse(raw)
        from jax._src import core as jax_core  # ShapedArray: the avals jax.export's own deserializer builds

        def aval(x: Any) -> Any:
            shape = jax.eval_shape(lambda: x) if not isinstance(x, jax.ShapeDtypeStruct) else x
            return jax_core.ShapedArray(shape.shape, shape.dtype, weak_type=getattr(shape, "weak_type", False))

        in_leaves, in_tree = jax.tree.flatten((tuple(args), dict(kwargs)))
        out_leaves, out_tree = jax.tree.flatten(result_like)
        kept = header["kept"]
        if (
            not isinstance(kept, list)
            or not all(type(i) is int for i in kept)
            or kept != sorted(set(kept))
            or (kept and not 0 <= kept[0] <= kept[-1] < len(in_leaves))
        ):
            self._refuse("it names arguments the grader does not pass")
        devices = header["devices"]
        if type(devices) is not int or not 1 <= devices <= len(jax.devices()):
            self._refuse(f"it asks for {devices} devices")
        if header["effects"] != 0:
            self._refuse("it has side effects (a print, a callback or an ordered effect)")
        shardings = [header["in_shardings"], header["out_shardings"]]
        if not all(isinstance(s, list) for s in shardings):
            self._refuse("its shardings are malformed")
        for i, count in ((0, len(in_leaves)), (1, len(out_leaves))):
            if all(s is None for s in shardings[i]):  # none given (one device): whatever the program's own count
                shardings[i] = [None] * count
            elif len(shardings[i]) != count:
                self._refuse("its shardings do not match the grader's arguments and the reference's result")
        try:
            self.exported = _exported(
                fun_name=name,
                in_tree=in_tree,
                in_avals=tuple(aval(x) for x in in_leaves),
                out_tree=out_tree,
                out_avals=tuple(aval(x) for x in out_leaves),
                _has_named_shardings=False,
                _in_named_shardings=tuple(None for _ in in_leaves),
                _out_named_shardings=tuple(None for _ in out_leaves),
                in_shardings_hlo=tuple(None if s is None else _sharding_from(s) for s in shardings[0]),
                out_shardings_hlo=tuple(None if s is None else _sharding_from(s) for s in shardings[1]),
                nr_devices=devices,
                platforms=("cpu",),
                ordered_effects=(),
                unordered_effects=(),
                disabled_safety_checks=(),
                mlir_module_serialized=module,
                calling_convention_version=int(header["version"]),
                module_kept_var_idx=tuple(kept),
                uses_global_constants=bool(header["global_constants"]),
                _get_vjp=None,
            )
            self.text = _without_locations(self.exported.mlir_module())
        except CheckFailure:
            raise
        except Exception:  # noqa: BLE001 - hostile data: whatever it breaks, it is not a program
            self._refuse("the bytes are not a StableHLO program")
        self._screen()

    def _bytes(self, payload: Any) -> bytes:
        if not isinstance(payload, np.ndarray) or payload.dtype != np.uint8 or payload.ndim != 1:
            self._refuse("what was recorded is not a program")
        if payload.size > MAX_PROGRAM_BYTES:
            self._refuse(f"it is {payload.size} bytes, over the {MAX_PROGRAM_BYTES} a course function lowers to")
        return payload.tobytes()

    def _parse(self, raw: bytes) -> tuple[dict, bytes]:
        try:
            if not raw.startswith(_MAGIC):
                raise ValueError
            size = int.from_bytes(raw[len(_MAGIC) : len(_MAGIC) + 4], "big")
            if size > MAX_HEADER_BYTES:
                raise ValueError
            start = len(_MAGIC) + 4
            header = json.loads(raw[start : start + size])
            if not isinstance(header, dict) or set(header) != {
                "kept",
                "devices",
                "version",
                "global_constants",
                "effects",
                "in_shardings",
                "out_shardings",
            }:
                raise ValueError
            return header, raw[start + size :]
        except ValueError:
            self._refuse("its header is malformed")
        raise AssertionError  # _refuse raised

    def _screen(self) -> None:
        targets = {a or b for a, b in _CUSTOM_CALL.findall(self.text)}
        foreign = sorted(targets - ALLOWED_CUSTOM_CALLS)
        if foreign:
            self._refuse(f"it calls code outside the program (custom calls {', '.join(foreign)[:200]})")
        for op in _FORBIDDEN_OPS:
            if op in self.text:
                self._refuse(f"it talks to the host ({op})")

    def _refuse(self, why: str) -> Any:
        raise CheckFailure(
            self.check,
            f"the program recorded for {self.name} is not one the grader runs: {why}",
            "the course's functions are plain JAX: no callbacks, no custom calls, no side effects",
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.exported.call(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - a program that does not run on the check's inputs fails
            raise CheckFailure(
                self.check,
                f"the compiled program of {self.name} does not run on the grader's inputs "
                f"({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''})",
                "the arguments the contract says are traced must be traced (not static), and the result must "
                "have the reference's structure",
            ) from None

    def keeps(self, leaf: int) -> bool:
        """Whether the program takes the ``leaf``-th array of the check's (flattened) arguments: an argument the
        function made static is not one (its value is baked into the program)."""
        return leaf in self.exported.module_kept_var_idx

    def operations(self) -> int:
        """How many operations the program has (nested functions, loop bodies and branches included)."""
        return len(_OPERATION.findall(self.text))

    def values(self, computed: bool = False) -> list[tuple[int, tuple[int, ...], str]]:
        """(elements, shape, NumPy dtype name) of every array type the program names (arguments, results,
        intermediates, as often as they are named); ``computed``: of the values its operations compute, once each."""
        text = self.text
        if computed:
            results = [
                line.rsplit("->", 1)[-1] if "->" in line else line.rsplit(" : ", 1)[-1] for line in _assignments(text)
            ]
            text = "\n".join(results)
        found = []
        for dims, dtype in _TENSOR.findall(text):
            shape = tuple(int(d) for d in dims.split("x") if d)
            found.append((int(np.prod(shape, dtype=np.int64)) if shape else 1, shape, _dtype_name(dtype)))
        return found

    def largest_value(self) -> tuple[int, str]:
        """(elements, type) of the largest array the program names; among equals a floating one (the Jacobian
        itself, not the iota that indexes it)."""
        elements, shape, dtype = _largest(self.values())
        return elements, f"{dtype}[{','.join(map(str, shape))}]"


def _assignments(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(r"\s*%[\w#:]+ = ", line)]


def _largest(found: list[tuple[int, tuple[int, ...], str]]) -> tuple[int, tuple[int, ...], str]:
    return max(found, key=lambda v: (v[0], v[2].startswith(("float", "bfloat", "complex"))), default=(0, (), ""))


_LOCATION = re.compile(r'\s*loc\((?:[^()"]|"(?:[^"\\]|\\.)*"|\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))*\)')


def _exported(**fields: Any) -> Any:
    """``jax.export.Exported(**fields)``, given only the fields this JAX's class has (``_has_named_shardings`` is
    gone in JAX 0.11): what ``jax.export``'s own deserializer builds, whatever the version."""
    import dataclasses

    known = {f.name for f in dataclasses.fields(jax.export.Exported)}
    return jax.export.Exported(**{name: value for name, value in fields.items() if name in known})


def _without_locations(text: str) -> str:
    """The program's text without its source locations (file names, the lines of the code that made it): what it
    computes, not where it was written."""
    return "\n".join(_LOCATION.sub("", line) for line in text.splitlines() if not line.startswith("#loc"))


def _dtype_name(mlir: str) -> str:
    """``float32`` for ``f32``, ``int32`` for ``i32``, ``bool`` for ``i1`` (NumPy's names, as the messages of the jaxpr checks)."""
    kinds = {"f": "float", "bf": "bfloat", "i": "int", "ui": "uint", "complex": "complex"}
    match = re.fullmatch(r"(bf|ui|f|i|complex)(\d+)", mlir)
    if mlir == "i1" or match is None:
        return "bool" if mlir == "i1" else mlir
    return kinds[match.group(1)] + match.group(2)


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
    dynamic_args, dynamic_kwargs = _dynamic(args, kwargs, static_argnums, static_argnames)
    return Program(payload, dynamic_args, dynamic_kwargs, result_like, name=name, check=check)


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
) -> Any:
    """The program gives the reference's values ``expected`` on the check's ``args`` (a forged program must be
    a correct one); returns what it gave."""
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
