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
from collections.abc import Mapping
from itertools import compress, repeat
from operator import and_, is_, itemgetter, not_

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


class Snapshot(Mapping[Key, tuple]):
    """The watched callables as :func:`snapshot` found them, laid out to be compared again quickly.

    Some forty thousand entries, compared in every grading process after the student's import and again when its
    checks are done: :meth:`intact` makes each namespace's comparison a few calls that run in C (its names looked up
    at once, every object compared by identity, every function's code by identity), and only when something is not
    the same does :func:`changed` look entry by entry for the names. As a mapping it is ``{key: identity}``
    (:func:`_identity`'s tuples: the objects that must stay the same, held so that their ids cannot be reused)."""

    def __init__(self) -> None:
        # (owner's key, owner, names, their objects, their code objects or None for classes): an owner is a
        # module (its key one name, checked to still be sys.modules' own) or a class (module name, class name)
        self.groups: list[tuple[Key, object, list[str], list, list | None]] = []
        # properties, static and class methods (compared as objects in their group), the functions they wrap, each
        # one's code (or the function itself when it has none: a builtin, None), in order
        self.wrappers: list[tuple[Key, object, int]] = []  # key, the wrapper, how many functions it wraps
        self.inner: list = []
        self.inner_codes: list = []
        self._entries: dict[Key, tuple] | None = None

    def __len__(self) -> int:
        return sum(len(names) for _, _, names, _, _ in self.groups)

    def __iter__(self):
        return iter(self.entries())

    def __getitem__(self, key: Key) -> tuple:
        return self.entries()[key]

    def entries(self) -> dict[Key, tuple]:
        """``{key: identity}`` entry by entry, made on first use."""
        if self._entries is None:
            found: dict[Key, tuple] = {}
            for owner_key, _, names, values, codes in self.groups:
                for i, name in enumerate(names):
                    code = None if codes is None else codes[i]
                    found[(*owner_key, name)] = (values[i],) if code is None else (values[i], code)
            at = 0
            for key, wrapper, count in self.wrappers:
                found[key] = (wrapper, *self.inner_codes[at : at + count])
                at += count
            self._entries = found
        return self._entries

    def intact(self) -> bool:
        """Every watched name still bound to the same object, every function still running the same code."""
        modules = sys.modules
        for owner_key, owner, names, values, codes in self.groups:
            if len(owner_key) == 1 and modules.get(owner_key[0]) is not owner:
                return False
            try:
                now = itemgetter(*names)(vars(owner)) if len(names) > 1 else (vars(owner)[names[0]],)
            except KeyError:
                return False
            if not all(map(is_, now, values)):
                return False
            if codes is not None and not all(map(is_, map(getattr, now, _CODE, _NONE), codes)):
                return False
        return all(map(is_, map(getattr, self.inner, _CODE, self.inner), self.inner_codes))

    def add(self, owner_key: Key, owner: object, names: list[str], values: list, classes: bool = False) -> None:
        """``owner``'s entries ``names`` (bound to ``values``): classes compared as objects, the rest with their
        code, and the functions that properties, static and class methods wrap with theirs."""
        if owner_key[0] in _VOLATILE_MODULES:
            kept = [(n, v) for n, v in zip(names, values) if (*owner_key, n) not in VOLATILE]
            names, values = [n for n, _ in kept], [v for _, v in kept]
        if not names:
            return
        codes = None if classes else list(map(getattr, values, _CODE, _NONE))
        self.groups.append((owner_key, owner, names, values, codes))
        if classes:
            return
        is_wrapper = list(map(isinstance, values, _WRAPPER_TYPES))
        if not any(is_wrapper):
            return
        for name, wrapper in zip(compress(names, is_wrapper), compress(values, is_wrapper)):
            inner = [wrapper.fget, wrapper.fset, wrapper.fdel] if isinstance(wrapper, property) else [wrapper.__func__]
            self.wrappers.append(((*owner_key, name), wrapper, len(inner)))
            self.inner += inner
            self.inner_codes += [getattr(f, "__code__", f) for f in inner]


_WRAPPERS = (property, staticmethod, classmethod)
# endless arguments of map(getattr, ...) and map(isinstance, ...), never exhausted
_CODE, _NONE = repeat("__code__"), repeat(None)
_MODULES, _FUNCTIONS, _WRAPPER_TYPES = repeat(types.ModuleType), repeat(_FUNCTION_TYPES), repeat(_WRAPPERS)
_VOLATILE_MODULES = {key[0] for key in VOLATILE}


def snapshot() -> Snapshot:
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


def _snapshot() -> Snapshot:
    for name in RELIED_ON:
        importlib.import_module(name)
    seen = Snapshot()
    for module_name, module in list(sys.modules.items()):
        if not _watched(module_name) or not isinstance(module, types.ModuleType):
            continue
        namespace = vars(module)
        names, values = list(namespace), list(namespace.values())
        is_class = list(map(isinstance, values, repeat(type)))
        classes = list(compress(values, is_class))
        class_names = list(compress(names, is_class))
        seen.add((module_name,), module, class_names, classes, classes=True)
        others = list(  # callables that are neither classes nor modules, tested in C: ufuncs, dispatchers, functions
            map(
                and_,
                map(and_, map(not_, is_class), map(callable, values)),
                map(not_, map(isinstance, values, _MODULES)),
            )
        )
        seen.add((module_name,), module, list(compress(names, others)), list(compress(values, others)))
        for name, cls in zip(class_names, classes):  # the classes it defines: their functions and methods
            if getattr(cls, "__module__", None) != module_name:
                continue
            members = vars(cls)
            objects = list(members.values())
            functions = list(map(isinstance, objects, _FUNCTIONS))
            if any(functions):
                seen.add(
                    (module_name, name), cls, list(compress(members, functions)), list(compress(objects, functions))
                )
    return seen


_MISSING = object()


def _lookup(key: Key):
    module = sys.modules.get(key[0])
    value = vars(module).get(key[1], _MISSING) if isinstance(module, types.ModuleType) else _MISSING
    if len(key) == 3 and value is not _MISSING:
        value = vars(value).get(key[2], _MISSING) if isinstance(value, type) else _MISSING
    return value


def changed(before: Mapping[Key, tuple]) -> list[str]:
    """The watched names whose function or class was replaced, rewritten or removed since ``before``, sorted."""
    if isinstance(before, Snapshot):
        if before.intact():
            return []
        before = before.entries()
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
