"""What the checks vary and compare: a pytest plugin for ``check-course``'s run of the references.

Loaded with ``-p autograder.authoring.coverage --coverage-record FILE`` next to ``--solutions``.
Every graded function of the module under test (the reference, standing in for the student's
file) is wrapped so that each call a check makes records:

- per argument, a fingerprint of the value it got (an array's shape, dtype and bytes; a
  Python value's repr; a pytree's structure and leaves; a tracer's shape and dtype; an object's
  type and simple attributes): an argument that got one fingerprint in the whole run was never
  varied;
- per output (the whole return value, or each element of a returned tuple), the fingerprints
  of its leaves. An output counts as *compared* when, in the same check, one of its leaves is
  handed to a comparison: a kit helper (``autograder.checks.*.assert_*``), ``numpy.testing``'s
  asserts, ``np.allclose``/``np.array_equal`` (and JAX's). A returned object without array or
  number leaves (a manager) counts as compared once the check hands it to a graded function or a
  comparison. Plain Python comparisons (``assert student.f(...) is None``, ``==``, or on a name
  assigned from the call) are found in the check file's source
(:func:`autograder.authoring.coverage_read.compared_in_source`).

Only the outermost call of a graded function is recorded (the reference's own calls to its
helpers are not the check's). Wrapping keeps the object's behaviour: a plain function stays a
function (``functools.wraps``); anything else callable (a ``jax.jit`` function) is a proxy that
forwards every attribute and reports the original's class, so ``is_jitted`` and ``.lower``
keep working; a class has its ``__init__`` recorded.

Each process writes its record to ``FILE.<pid>.json`` (pytest-xdist workers each write
theirs); :func:`autograder.authoring.coverage_read.merge` reads them back. Effects (files written, printed lines) are not seen
here.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

_CAP = 20  # distinct fingerprints kept per argument
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_COMPARISONS = {
    "numpy.testing": (
        "assert_allclose",
        "assert_array_equal",
        "assert_equal",
        "assert_array_almost_equal",
        "assert_almost_equal",
        "assert_array_less",
    ),
    "numpy": ("allclose", "array_equal", "isclose", "array_equiv"),
    "jax.numpy": ("allclose", "array_equal", "isclose"),
}


def pytest_addoption(parser):
    parser.getgroup("jax-course").addoption(
        "--coverage-record",
        metavar="FILE",
        default=None,
        help="(check-course) record what the checks vary and compare into FILE.<pid>.json",
    )


def pytest_configure(config):
    path = config.getoption("coverage_record")
    if path:
        config.pluginmanager.register(Recorder(Path(path)), "autograder-coverage-recorder")


# -- fingerprints -----------------------------------------------------------------------------


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _array_fp(x) -> str | None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if isinstance(x, jax.core.Tracer):
        return f"traced {x.dtype}{list(x.shape)}"
    try:
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        a = np.asarray(x)
    except Exception:  # noqa: BLE001 - a deleted (donated) buffer, an exotic array
        return None
    if a.dtype == object:
        return None
    if a.size == 1 and a.dtype.kind == "b":
        return f"bool {bool(a.reshape(-1)[0])}"  # True is not the number 1 (a step, a count)
    if a.size <= 1 and a.dtype.kind in "biuf":
        return f"num {np.float32(a.reshape(-1)[0]) if a.size else 'empty'!r}"
    return f"array {a.dtype}{list(a.shape)} {hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=8).hexdigest()}"


def leaf_fingerprints(tree: Any) -> set[str]:
    """The fingerprints of the array and number leaves of ``tree`` (nothing for None)."""
    import jax

    found = set()
    try:
        leaves = jax.tree_util.tree_leaves(tree)
    except Exception:  # noqa: BLE001
        leaves = [tree]
    for leaf in leaves:
        if isinstance(leaf, (bool, int, float)) or (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
            fp = _array_fp(leaf)
            if fp:
                found.add(fp)
    return found


def fingerprint(value: Any) -> tuple[str, str]:
    """``(fingerprint, kind)`` of an argument's value: kind is readable (``float32[3, 2]``, ``int 2``)."""
    import jax

    if value is None:
        return "None", "None"
    if isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__} {value!r}"[:300], f"{type(value).__name__} {value!r}"[:40]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        fp = _array_fp(value)
        return fp or f"array {type(value).__name__}", f"{getattr(value.dtype, 'name', value.dtype)}{list(value.shape)}"
    if isinstance(value, type) or inspect.isroutine(value):
        name = str(getattr(value, "__qualname__", type(value).__name__))
        try:
            body = inspect.getsource(value)
        except (OSError, TypeError):
            body = name
        return f"callable {name} {_digest(body)}", f"callable {name}"[:40]
    try:
        leaves, treedef = jax.tree_util.tree_flatten(value)
    except Exception:  # noqa: BLE001
        leaves, treedef = [value], None
    if treedef is not None and not (len(leaves) == 1 and leaves[0] is value):
        parts = [fingerprint(leaf)[0] for leaf in leaves]
        return (
            f"tree {_digest(_ADDRESS.sub('', str(treedef)) + '|'.join(parts))}",
            f"{type(value).__name__} of {len(leaves)} leaves",
        )
    text = repr(value)
    if "0x" in text or len(text) > 500:
        simple = (
            {
                k: (str(v) if isinstance(v, os.PathLike) else v)
                for k, v in sorted(vars(value).items())
                if isinstance(v, (bool, int, float, str, type(None), os.PathLike))
            }
            if hasattr(value, "__dict__")
            else {}
        )
        size = len(value) if hasattr(value, "__len__") else None
        text = f"{type(value).__qualname__} {simple} len={size}"
    return f"object {_digest(text)}", type(value).__name__


def output_parts(result: Any) -> dict[str, Any]:
    """``{"return": result}``, or ``{"return[i]": element}`` for a plain tuple."""
    if type(result) is tuple:
        return {f"return[{i}]": part for i, part in enumerate(result)}
    return {"return": result}


# -- the recorder -----------------------------------------------------------------------------


class _Proxy:
    """A callable standing in for ``target``: records its calls, forwards everything else."""

    def __init__(self, target, record):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_record", record)
        # what the target wraps, as the target says it (a jax.jit function's Python function): code that
        # unwraps one level (vmapped.record_calls) finds the same code object
        object.__setattr__(self, "__wrapped__", getattr(target, "__wrapped__", target))

    @property  # type: ignore[misc]  # a read-only __class__ on purpose
    def __class__(self):  # isinstance(proxy, type(jax.jit(f))) stays True
        return type(object.__getattribute__(self, "_target"))

    def __call__(self, *args, **kwargs):
        return object.__getattribute__(self, "_record")(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_target"), name)

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_target"), name, value)


class Recorder:
    def __init__(self, path: Path):
        self.path = path
        self.functions: dict[str, dict] = {}  # qualname -> {"calls", "args": {name: [fp]}, "kinds", "outputs"}
        self.depth = 0
        self.item = None
        self.pending: list[tuple[str, str, set[str]]] = []  # this check's outputs: (qualname, part, leaf fps)
        self.compared: set[str] = set()  # leaf fps handed to a comparison in this check
        self.objects: dict[int, tuple[str, str]] = {}  # id of a returned object (no leaves) -> (qualname, part)
        self.instrumented: set[str] = set()
        self.kept: list = []
        self.restore: list[tuple[Any, str, Any]] = []

    # comparisons
    def _wrap_comparison(self, owner, name):
        original = getattr(owner, name, None)
        if original is None or getattr(original, "_coverage_wrapped", False):
            return
        recorder = self

        @functools.wraps(original)
        def comparing(*args, **kwargs):
            if recorder.pending:
                for value in (*args, *kwargs.values()):
                    recorder.compared |= leaf_fingerprints(value)
            recorder._used(*args, *kwargs.values())
            return original(*args, **kwargs)

        comparing._coverage_wrapped = True  # type: ignore[attr-defined]  # a mark on the wrapper
        self.restore.append((owner, name, original))
        setattr(owner, name, comparing)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session):
        import importlib
        import pkgutil

        import autograder.checks as checks

        for module_name, names in _COMPARISONS.items():
            module = importlib.import_module(module_name)
            for name in names:
                self._wrap_comparison(module, name)
        for info in pkgutil.iter_modules(checks.__path__):
            module = importlib.import_module(f"autograder.checks.{info.name}")
            for name, value in list(vars(module).items()):
                if name.startswith("assert_") and inspect.isfunction(value) and _a_kit_check(value):
                    self._wrap_comparison(module, name)

    # the functions under test
    def _instrument(self, item) -> None:
        from autograder.pytest_plugin.session import session_of

        course_session = session_of(item.config)
        if course_session is None:
            return
        module = course_session.module_under_test(item.path)
        if module is None or module in self.instrumented:
            return
        self.instrumented.add(module)
        student = course_session.student(module)
        for fn in course_session.course.module(module).functions:
            try:
                target = getattr(student, fn.name)
            except Exception:  # noqa: BLE001 - an unimportable module: its checks fail anyway
                return
            self.functions.setdefault(fn.qualname, {"calls": 0, "args": {}, "kinds": {}, "outputs": {}})
            if isinstance(target, type):
                init = target.__dict__.get("__init__")
                if inspect.isfunction(init):
                    target.__init__ = self.recording(fn.qualname, init, method=True)  # type: ignore[misc]
                continue
            if callable(target):
                setattr(student, fn.name, self.recording(fn.qualname, target))

    def recording(self, qualname: str, target, method: bool = False):
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            signature = None
        recorder = self

        def record(*args, **kwargs):
            if recorder.depth or recorder.item is None:
                return target(*args, **kwargs)
            recorder.depth += 1
            try:
                recorder._arguments(qualname, signature, args, kwargs, method)
                result = target(*args, **kwargs)
            finally:
                recorder.depth -= 1
            if not method:
                recorder._outputs(qualname, result)
            return result

        if inspect.isfunction(target):
            return functools.wraps(target)(record)
        return _Proxy(target, record)

    def _used(self, *values):
        """A returned object without leaves (a manager, a loader) counts as compared once it is handed to a
        graded function or a comparison: its behaviour is then what is checked."""
        for value in values:
            owner = self.objects.get(id(value))
            if owner:
                self.functions[owner[0]]["outputs"][owner[1]]["compared"] = True

    def _arguments(self, qualname, signature, args, kwargs, method):
        self._used(*args, *kwargs.values())
        entry = self.functions[qualname]
        entry["calls"] += 1
        try:
            bound = signature.bind(*args, **kwargs) if signature else None
        except TypeError:
            return
        if bound is None:
            return
        bound.apply_defaults()
        items = list(bound.arguments.items())[1 if method else 0 :]
        for name, value in items:
            seen = entry["args"].setdefault(name, [])
            if len(seen) >= _CAP:
                continue
            try:
                fp, kind = fingerprint(value)
            except Exception:  # noqa: BLE001 - recording must never fail a check
                fp, kind = f"unknown {type(value).__name__}", type(value).__name__
            if fp not in seen:
                seen.append(fp)
                kinds = entry["kinds"].setdefault(name, [])
                if kind not in kinds and len(kinds) < 8:
                    kinds.append(kind)

    def _outputs(self, qualname, result):
        outputs = self.functions[qualname]["outputs"]
        for part, value in output_parts(result).items():
            out = outputs.setdefault(part, {"calls": 0, "compared": False, "none": True, "object": False})
            out["calls"] += 1
            out["none"] = out["none"] and value is None
            if not out["compared"]:
                try:
                    fps = leaf_fingerprints(value)
                except Exception:  # noqa: BLE001
                    fps = set()
                if fps:
                    self.pending.append((qualname, part, fps))
                elif value is not None:
                    out["object"] = True
                    self.objects[id(value)] = (qualname, part)
                    self.kept.append(value)  # alive until the check ends, so its id is not reused

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._instrument(item)
        self.item, self.pending, self.compared, self.objects, self.kept = item.nodeid, [], set(), {}, []
        yield
        for qualname, part, fps in self.pending:
            if fps & self.compared:
                self.functions[qualname]["outputs"][part]["compared"] = True
        self.item, self.pending, self.compared, self.objects, self.kept = None, [], set(), {}, []

    def pytest_unconfigure(self, config):
        for owner, name, original in reversed(self.restore):
            setattr(owner, name, original)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{self.path}.{os.getpid()}.json").write_text(json.dumps(self.functions), encoding="utf-8")


def _a_kit_check(fn) -> bool:
    """A kit helper wherever a check module names it: defined there, or named there from its own room
    (``purity.assert_pure_by_values`` is :mod:`autograder.checks.pure_values`'), as check files call it."""
    return fn.__module__.startswith("autograder.checks.")
