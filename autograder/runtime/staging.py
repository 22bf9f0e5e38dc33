"""Lifting a NumPy array or a Python scalar onto the device without compiling a program for it.

JAX 0.10 lifts a value that is not yet a JAX array into an eager computation
through the ``stage`` primitive: ``jnp.asarray(np_array)``, ``jnp.array(3.0)``,
and every eager operation given a NumPy array or a scalar. Outside a trace,
``stage`` is the identity, but its implementation is a jitted program like any
other primitive's, so each new shape and dtype compiles one: about 40 ms on a
CPU for a copy. A run of the whole course compiled about ninety of them, in
the checks' own code as much as in a student's.

:func:`stage_without_compiling` makes ``stage``'s implementation put the value on
the device (``jax.device_put``: a transfer, no program) where that gives the
very array the program would: outside any mesh, with host-to-device transfers
allowed. Same dtype (canonicalized the same way, also under x64), shape, weak
type, sharding, placement and bytes, for every NumPy dtype, NumPy scalar and
Python scalar (``tests/unit/runtime/test_staging.py``). Elsewhere, and for a
value ``device_put`` refuses (a Python int out of range), JAX's own
implementation runs, with its own error. JAX is pinned (``pyproject.toml``); a JAX
without the ``stage`` primitive is left as it is.
"""

from __future__ import annotations


def stage_without_compiling() -> bool:
    """Make eager ``stage`` put values on the device without compiling, from now on, in this process; whether it
    already did (or whether this JAX has no ``stage`` to change: then nothing is changed). Imports JAX."""
    try:
        from jax._src import core
    except ImportError:  # pragma: no cover - a JAX without its private modules
        return True
    stage_p = getattr(core, "stage_p", None)
    impl = getattr(stage_p, "impl", None)
    if stage_p is None or impl is None:
        return True
    if getattr(impl, "puts_without_compiling", False):
        return True
    stage_p.def_impl(_putting(impl))
    return False


def _putting(jax_impl):
    import jax
    from jax._src import config, core, mesh

    def stage_impl(x):
        if isinstance(x, core.Array):
            return x
        if mesh.get_abstract_mesh().empty and config.transfer_guard_host_to_device.value in (None, "allow"):
            try:
                return jax.device_put(x)
            except Exception:  # noqa: BLE001 - JAX's own implementation raises its own error
                pass
        return jax_impl(x)

    stage_impl.puts_without_compiling = True  # type: ignore[attr-defined]  # marks the implementation JAX calls
    stage_impl.jax_impl = jax_impl  # type: ignore[attr-defined]
    stage_impl.__doc__ = "JAX's stage implementation, putting values on the device (autograder.runtime.staging)."
    return stage_impl
