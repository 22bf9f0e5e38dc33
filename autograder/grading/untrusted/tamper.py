"""Did the student's module change the grader? Identities before and after.

A grading process records, before it imports the student's module, the
identity of every callable (function, class, ufunc, ...) and every method,
property and function code object of the modules the checks rely on: the kit
(``autograder``), pytest and pluggy, hypothesis, NumPy, ``json``, the builtins,
the loaded references, and the libraries the checks call (JAX, jaxlib, Flax, Optax, Orbax); and pytest's plugin
manager: its registered plugins and every hook's implementations (:func:`hooks_of`: a plugin of the submission's
own, registered by any route, that edits reports before the kit's hook records them). Comparing again later finds a submission that
replaced or rewrote one of them (``numpy.testing.assert_allclose = ...``,
``f.__code__ = ...``, a patched report property). Only callables are
compared: data such as caches and counters changes legitimately while checks
run. New modules imported later are not compared (nothing relied on them).

This runs in the same process as the student's code, so a submission that
knows it can hide from it; it is a signal, not the defence: correctness
passes are confirmed on the trusted side, and each module is graded in its
own process, so whatever one module changes reaches no other module.
"""

from __future__ import annotations

import gc
import importlib
import sys
import types

WATCHED = (
    *("autograder", "pytest", "_pytest", "pluggy", "hypothesis", "numpy", "json", "builtins", "_course_reference_"),
    # the libraries the checks call (jax.jit, jax.make_jaxpr, jax.vmap, jax.monitoring, jax.debug_key_reuse, Flax's
    # and Optax's classes, Orbax's managers): a check that calls one through its module sees what is bound there
    *("jax", "jaxlib", "flax", "optax", "orbax"),
)
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, property, staticmethod, classmethod)


def _identity(value) -> tuple:
    """The objects that must stay the same (held, so their ids cannot be reused)."""
    if isinstance(value, type):
        return (value,)
    if isinstance(value, property):
        return (value, *(getattr(f, "__code__", f) for f in (value.fget, value.fset, value.fdel)))
    if isinstance(value, (staticmethod, classmethod)):
        return (value, getattr(value.__func__, "__code__", value.__func__))
    code = getattr(value, "__code__", None)
    return (value, code) if code is not None else (value,)


def _same(a: tuple | None, b: tuple) -> bool:
    return a is not None and len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _watched(name: str) -> bool:
    return name.split(".", 1)[0] in WATCHED


Key = tuple  # (module name, attribute) or (module name, class name, attribute)


# Rebound by pytest itself around every test.
VOLATILE = {("_pytest.assertion.util", "_reprcompare"), ("_pytest.assertion.util", "_assertion_pass")}
RELIED_ON = ("numpy.testing",)  # imported first: checks may import them only when they need them


def snapshot() -> dict[Key, tuple]:
    """The watched callables: ``{(module, name) or (module, class, name): identity}``.

    Some forty thousand entries, in every grading process: the garbage collector is paused while they are made
    (otherwise the tuples set off collections that walk the whole young heap, three quarters of the time)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _snapshot()
    finally:
        if paused:
            gc.enable()


def _snapshot() -> dict[Key, tuple]:
    for name in RELIED_ON:
        importlib.import_module(name)
    seen: dict[Key, tuple] = {}
    for module_name, module in list(sys.modules.items()):
        if not _watched(module_name) or not isinstance(module, types.ModuleType):
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, type):
                seen[(module_name, name)] = _identity(value)
                if getattr(value, "__module__", None) == module_name:
                    for attr, member in list(vars(value).items()):
                        if isinstance(member, _FUNCTION_TYPES):
                            seen[(module_name, name, attr)] = _identity(member)
            elif callable(value) and not isinstance(value, types.ModuleType):  # functions, ufuncs, dispatchers
                seen[(module_name, name)] = _identity(value)
    return seen


_MISSING = object()


def _lookup(key: Key):
    module = sys.modules.get(key[0])
    value = vars(module).get(key[1], _MISSING) if isinstance(module, types.ModuleType) else _MISSING
    if len(key) == 3 and value is not _MISSING:
        value = vars(value).get(key[2], _MISSING) if isinstance(value, type) else _MISSING
    return value


def changed(before: dict[Key, tuple]) -> list[str]:
    """The watched names whose function or class was replaced, rewritten or removed since ``before``, sorted."""
    found = []
    for key, identity in before.items():
        if key in VOLATILE:
            continue
        value = _lookup(key)
        if value is _MISSING or not _same(_identity(value), identity):
            found.append(".".join(key))
    return sorted(found)


def state_of(obj: object) -> dict[str, object]:
    """The attributes of ``obj`` (the grading process's reporter) as they are now: each one's object, held so
    that its id cannot be reused. The reporter's *state* is what a submission that finds it (through ``gc``)
    rewrites to turn a failed check into a passed one (an ``emit`` of its own, another nonce, a list of
    outcomes it edits); its class's functions are watched by :func:`snapshot`."""
    return {"__class__": type(obj), **vars(obj)}


def state_changed(obj: object, before: dict[str, object], mutable: frozenset[str] = frozenset()) -> list[str]:
    """The attributes of ``obj`` that were added, removed or rebound since :func:`state_of` gave ``before``
    (``mutable``: the names the reporter itself rebinds as it runs), as ``<class>.<attribute>``."""
    now = state_of(obj)
    name = getattr(before.get("__class__"), "__qualname__", "reporter")
    found = [
        key
        for key in before.keys() | now.keys()
        if key not in mutable and (key not in now or key not in before or now[key] is not before[key])
    ]
    return sorted(f"{name}.{key}" for key in found)


def hooks_of(pluginmanager) -> dict[str, tuple]:
    """pytest's plugin manager as it is now: its registered plugins (``plugins``: name and object) and, per hook,
    the functions implementing it (held, so that their ids cannot be reused). Through pluggy's public API."""
    seen: dict[str, tuple] = {"plugins": tuple(pluginmanager.list_name_plugin())}
    for name, caller in sorted(vars(pluginmanager.hook).items()):
        get = getattr(caller, "get_hookimpls", None)
        if callable(get):
            seen[name] = tuple((impl.plugin, impl.function) for impl in get())
    return seen


def hooks_changed(pluginmanager, before: dict[str, tuple]) -> list[str]:
    """The hooks whose implementations (or the list of plugins) changed since :func:`hooks_of` gave ``before``,
    as ``pytest hook <name>``, sorted."""
    now = hooks_of(pluginmanager)
    found = []
    for name in before.keys() | now.keys():
        a, b = before.get(name, ()), now.get(name, ())
        if len(a) != len(b) or any(x is not y for pa, pb in zip(a, b) for x, y in zip(pa, pb)):
            found.append("pytest plugins" if name == "plugins" else f"pytest hook {name}")
    return sorted(found)
