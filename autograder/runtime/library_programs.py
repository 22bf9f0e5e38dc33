"""The programs JAX compiles for its own operations, by the name it gives them: what a compilation cache made by the
course's reference may hand a student's process (:mod:`autograder.grading.preflight.seed`).

JAX keeps a compiled program under ``jit_<name>-<digest>-cache``, ``<name>`` being the ``__name__`` of what was
compiled: the primitive an operation run without jit binds (``jit_add``, ``jit_dot_general``), a function of JAX's
own numerical modules that JAX jits internally (``jit__where``, ``jit__normal``), or any function a program was made
of with ``jax.jit``: the reference's own (``jit_train_step``), a lambda, whatever it closes over. Only the first two
are the library's: a program of one operation or one library function on the check's shapes, the same whichever
correct way a student writes the function, holding nothing of the reference's answer. :func:`names` lists them from
the installed JAX:

- the primitives that carry no computation of their caller's (``cond``, ``while``, ``scan``, ``custom_jvp_call``,
  ``call_exported``, a callback, ``reduce`` with its own reducer... are left out: :data:`CARRY_COMPUTATIONS`);
- the functions JAX's numerical modules define jitted that take no function as an argument.

It imports JAX, so the grader asks a process of its own (``python -m autograder.runtime.library_programs`` prints
the names as JSON).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys

# Primitives whose programs can hold a computation their caller wrote (a jaxpr, a function, a callback, another
# program), or whose name is a generic word a function of anyone's could carry: never the library's alone.
CARRY_COMPUTATIONS = frozenset(
    {
        "call",
        "call_exported",
        "call_hi_primitive",
        "call_hi_primitive_linearized",
        "callback",
        "check",
        "closed_call",
        "composite",
        "compute_on",
        "cond",
        "core_call",
        "custom_jvp_call",
        "custom_lin",
        "custom_linear_solve",
        "custom_partitioning",
        "custom_transpose_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "custom_vmap_call",
        "debug_callback",
        "debug_print",
        "buffer_callback",
        "eval_jaxpr",
        "ffi_call",
        "io_callback",
        "jit",
        "linear_call",
        "pjit",
        "platform_index",
        "pure_callback",
        "reduce",
        "reduce_window",
        "remat",
        "remat2",
        "remat_opt",
        "checkpoint",
        "run_state",
        "scan",
        "scatter",
        "select_and_gather_add",
        "select_and_scatter",
        "shard_map",
        "unreachable",
        "while",
        "xla_call",
        "xla_pmap",
    }
)

# Where JAX defines its operations and the functions it jits internally (packages walked whole).
MODULES = (
    "jax._src.lax",
    "jax._src.numpy",
    "jax._src.nn",
    "jax._src.random",
    "jax._src.ops",
    "jax._src.scipy.special",
)
_SKIPPED = ("control_flow", "pallas", "mosaic", "triton", "gpu", "tpu", "cuda", "rocm")

# A parameter of one of these names, or annotated as a Callable, takes a function (``_piecewise``'s ``funcs``).
_FUNCTION_PARAMETERS = frozenset({"f", "fn", "fun", "func", "funcs", "function", "body_fun", "cond_fun"})


def names() -> frozenset[str]:
    """The names of the programs the installed JAX compiles for its own operations (see the module)."""
    from jax._src import core

    found: set[str] = set()
    for module in _modules():
        for value in list(vars(module).values()):
            if isinstance(value, core.Primitive):
                if value.name not in CARRY_COMPUTATIONS and not getattr(value, "call_primitive", False):
                    found.add(value.name)
            else:
                jitted = _jitted(value)
                if jitted is None:
                    continue
                wrapped = jitted.__wrapped__
                name = getattr(wrapped, "__name__", None)
                if isinstance(name, str) and name not in CARRY_COMPUTATIONS and not _takes_a_function(wrapped):
                    found.add(name)
    return frozenset(found)


def _jitted(value):
    """The jitted function ``value`` is or holds (a ``jnp`` ufunc's, a ``custom_jvp``'s such as ``jax.nn.relu``), or
    None."""
    for candidate in (value, getattr(value, "_func", None), getattr(value, "fun", None)):
        if callable(candidate) and hasattr(candidate, "lower") and hasattr(candidate, "__wrapped__"):
            return candidate
    return None


def _modules() -> list:
    found = []
    for base in MODULES:
        try:
            package = importlib.import_module(base)
        except ImportError:
            continue
        found.append(package)
        for info in pkgutil.walk_packages(getattr(package, "__path__", []), base + "."):
            if any(part in info.name for part in _SKIPPED):
                continue
            try:
                found.append(importlib.import_module(info.name))
            except Exception:  # noqa: BLE001 - a module this machine cannot import (a backend's): none of its names
                continue
    return found


def _takes_a_function(fn) -> bool:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # unknown: not the library's alone
    return any(p.name in _FUNCTION_PARAMETERS or "Callable" in str(p.annotation) for p in parameters)


def main() -> None:
    json.dump(sorted(names()), sys.stdout)


if __name__ == "__main__":
    main()
