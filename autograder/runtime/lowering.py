"""Lowering to MLIR in a reused context: one per thread, renewed every :data:`LOWERINGS_PER_CONTEXT` programs.

JAX lowers every new function, shape or dtype to an MLIR module before XLA
compiles it (or finds it in the compilation cache), and for each module it
makes a new MLIR context, loading and registering every dialect it uses:
about 3 ms, a third of compiling a tiny program at the course's quick-compile
flags, and paid again on a cache hit. A run of the whole course lowers about a
thousand programs, a grading process of one module up to two hundred.

A context can hold any number of modules; what it keeps for good is the types
and attributes it has uniqued (the constants embedded in programs among them),
so a context is renewed after :data:`LOWERINGS_PER_CONTEXT` lowerings, which
bounds that growth and still makes the cost of a context negligible. One
context per thread, since a context is not meant to be shared by threads that
lower at the same time.

What is compiled does not change: the module's text, and so the compilation
cache's key and the executable, are the same in a fresh or a reused context
(``tests/unit/runtime/test_lowering.py``). JAX is pinned (``pyproject.toml``); the function
replaced is ``jax._src.interpreters.mlir.make_ir_context``, which
``ModuleContext`` calls by its module-global name.
"""

from __future__ import annotations

import threading

LOWERINGS_PER_CONTEXT = 256


def reuse_ir_contexts() -> bool:
    """Make JAX lower in reused MLIR contexts from now on, in this process; whether it was already so.

    Safe to call any number of times; imports JAX. Before a fork, call it only where no lowering
    has happened yet (a context is made at the first lowering of each thread)."""
    from jax._src.interpreters import mlir

    if getattr(mlir.make_ir_context, "reuses_contexts", False):
        return True
    mlir.make_ir_context = _reusing(mlir.make_ir_context)
    return False


def _reusing(make_fresh):
    local = threading.local()

    def make_ir_context():
        if getattr(local, "uses", LOWERINGS_PER_CONTEXT) >= LOWERINGS_PER_CONTEXT:
            local.context, local.uses = make_fresh(), 0
        local.uses += 1
        return local.context

    make_ir_context.reuses_contexts = True  # type: ignore[attr-defined]  # marks on the function JAX calls
    make_ir_context.make_fresh = make_fresh  # type: ignore[attr-defined]
    make_ir_context.__doc__ = "JAX's make_ir_context, reusing this thread's context (autograder.runtime.lowering)."
    return make_ir_context
