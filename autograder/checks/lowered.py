"""Lowered: a program a process sent (``jax.export``'s serialized StableHLO and what calling it needs), rebuilt
on this side from its bytes alone, as hostile data (issue 42).

:func:`pack` makes the bytes that cross (a JSON header: kept arguments, devices, shardings; then the bytecode).
:class:`Program` rebuilds them for the check's own arguments and the reference's result structure, and refuses a
program over :data:`MAX_PROGRAM_BYTES`, with effects, a host callback or a custom call the course does not use
(:data:`ALLOWED_CUSTOM_CALLS`); it then runs on the check's inputs and is inspected (its number of operations, its
values, its largest one). :mod:`autograder.checks.programs` asks for programs and judges them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jax
import numpy as np

from autograder.core.failures import CheckFailure
from autograder.runtime import stores

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


def pack(exported: Any) -> np.ndarray:
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


MAX_REBUILT = 256  # programs kept rebuilt in one process (a few kilobytes each)
# (bytes, argument structure and avals, result structure and avals) -> (Exported, text): a check's examples send the
# same program for every call of one signature; it is parsed, rebuilt and screened once
_rebuilt: dict[tuple, tuple[Any, str]] = stores.register("checks.lowered.rebuilt", {})


def _aval(x: Any) -> Any:
    """The abstract value jax.export's own deserializer builds for ``x`` (an argument or a result leaf)."""
    from jax._src import core as jax_core  # ShapedArray: the avals jax.export's own deserializer builds

    if isinstance(x, jax.ShapeDtypeStruct):
        shape = x
    else:
        try:
            shape = jax.typeof(x)
        except TypeError:  # not a JAX value itself: what it is as a traced constant
            shape = jax.eval_shape(lambda: x)
    return jax_core.ShapedArray(shape.shape, shape.dtype, weak_type=getattr(shape, "weak_type", False))


class Program:
    """A program rebuilt from the bytes a process sent, for calling with ``args``/``kwargs`` and returning
    ``result_like``'s structure (both the check's own). Raises :class:`CheckFailure` (``check``) when the bytes
    are not a program the course could have made (see the module)."""

    def __init__(
        self,
        payload: Any,
        args: tuple,
        kwargs: dict,
        result_like: Any,
        *,
        name: str,
        check: str,
        decided_elsewhere: bool = False,
    ):
        self.name = name
        self.check = check
        # recorded from a function that only records the student's answers for the trusted side, which runs the
        # program itself (oracle.decided_elsewhere): a check that only compares its values leaves it unrun here
        self.decided_elsewhere = decided_elsewhere
        raw = self._bytes(payload)
        in_leaves, in_tree = jax.tree.flatten((tuple(args), dict(kwargs)))
        out_leaves, out_tree = jax.tree.flatten(result_like)
        in_avals, out_avals = tuple(_aval(x) for x in in_leaves), tuple(_aval(x) for x in out_leaves)
        key = (raw, in_tree, in_avals, out_tree, out_avals, name)
        found = _rebuilt.get(key)
        if found is not None:  # the same bytes for the same call, rebuilt and screened before
            self.exported, self.text = found
            return
        self._rebuild(raw, in_tree, in_avals, out_tree, out_avals)
        if len(_rebuilt) >= MAX_REBUILT:
            _rebuilt.pop(next(iter(_rebuilt)))
        _rebuilt[key] = (self.exported, self.text)

    def _rebuild(self, raw: bytes, in_tree: Any, in_avals: tuple, out_tree: Any, out_avals: tuple) -> None:
        """The program of ``raw`` for arguments and results of these structures and avals, refused (a
        :class:`CheckFailure`) when it is not one the grader runs."""
        header, module = self._parse(raw)
        kept, devices, shardings = self._calling(header, len(in_avals), len(out_avals))
        try:
            self.exported = exported_from(
                fun_name=self.name,
                in_tree=in_tree,
                in_avals=in_avals,
                out_tree=out_tree,
                out_avals=out_avals,
                _has_named_shardings=False,
                _in_named_shardings=tuple(None for _ in in_avals),
                _out_named_shardings=tuple(None for _ in out_avals),
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

    def _calling(self, header: dict, n_in: int, n_out: int) -> tuple[list[int], int, list[list]]:
        """What calling the program needs, from its hostile header, for ``n_in`` arguments and ``n_out`` results:
        (the arguments it keeps, its devices, its argument and result shardings)."""
        kept = header["kept"]
        if (
            not isinstance(kept, list)
            or not all(type(i) is int for i in kept)
            or kept != sorted(set(kept))
            or (kept and not 0 <= kept[0] <= kept[-1] < n_in)
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
        for i, count in ((0, n_in), (1, n_out)):
            if all(s is None for s in shardings[i]):  # none given (one device): whatever the program's own count
                shardings[i] = [None] * count
            elif len(shardings[i]) != count:
                self._refuse("its shardings do not match the grader's arguments and the reference's result")
        return kept, devices, shardings

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


def exported_from(**fields: Any) -> Any:
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
