"""The one seam through which expected values reach the checks.

Checks ask ``reference.<function>(...)`` and never import ``solutions``
themselves, so a student release can ship another oracle (e.g. one that
replays recorded outputs) without touching a single check.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from autograder.core import syntax
from autograder.core.submission import load_module
from autograder.runtime import global_rngs, stores


@runtime_checkable
class Reference(Protocol):
    """The reference seam: what a check's ``reference`` is, whoever answers it.

    Attribute access gives the reference's functions, classes and constants. The implementations,
    each declaring it by subclassing (``tests/unit/core/test_reference_seam.py`` checks every member is its own):
    :class:`Oracle` (the live reference), :class:`OwnAnswers` (the student's functions in a grading
    process judged on the trusted side), ``recording.givens.GivensFirst`` (fixtures answered from
    the givens), ``recording.recorded.RecordingOracle`` (a release build) and
    ``recording.recorded.RecordedOracle`` (a student release).
    """

    module_name: str
    # True when it knows only the reference's own path through a chain of steps (a recording): a check
    # continues from the reference's state, not the student's (:func:`continue_from`).
    knows_only_its_own_path: bool

    def sibling(self, module: str) -> Reference:
        """The reference of another course module, answered the same way."""

    def transformed(self, name: str, label: str, transform: Callable) -> Callable:
        """``transform(<name>)``, named ``label`` (see :func:`transformed`)."""


@runtime_checkable
class StandIn(Protocol):
    """A function that stands for another one and is not traced: a recorded or recording reference function
    (``recording.recorded``), the student's function while a grading process records its answers or while
    the trusted side replays them (``grading``). ``checks.structure.jit_once`` and ``.transformed_once``
    ask it for what answers, or records, as the jitted or transformed function does. One that records the
    student's answers for the trusted side to judge them (a module judged there only) says so with a true
    ``decided_elsewhere`` (:func:`decided_elsewhere`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def jit_stand_in(self, static_argnums: tuple) -> Callable:
        """What stands for ``jax.jit(<function>, static_argnums)``."""

    def transform_stand_in(self, label: str, transform: Callable) -> Callable:
        """What stands for ``transform(<function>)``, named ``label``."""


def decided_elsewhere(fn: object) -> bool:
    """Whether ``fn`` only records the student's answers for the trusted side (a grading process of a module
    judged there only): every check of what it answers is replayed and decided there, with the reference, so
    what this process would compute only to judge them (running a compiled program, comparing) decides nothing."""
    return getattr(fn, "decided_elsewhere", False) is True


def is_reference_function(value) -> bool:
    """Whether ``value`` stands for a reference function (a recorded or recording one): a function,
    whatever it keeps inside (a recording that grows as it is called is not the caller's state)."""
    return getattr(type(value), "reference_function", False) is True


class Oracle(Reference):
    """The instructor's reference for one module, loaded from ``solutions/``.

    Attribute access returns the reference's function or class. The module is
    imported under a private name that student code cannot ``import``.
    Get one with :func:`load_reference` (cached), not by constructing it.
    """

    knows_only_its_own_path = False

    def __init__(self, module_name: str, module: ModuleType, solutions_dir: Path):
        self.module_name = module_name
        self.solutions_dir = solutions_dir
        self._module = module
        self._transformed: dict[str, Callable] = {}  # one transform per label (one jax.jit: compiled per shape)

    def __getattr__(self, name: str):
        return getattr(self._module, name)

    def __repr__(self) -> str:
        return f"<reference for {self.module_name}>"

    def sibling(self, module: str) -> Oracle:
        return load_reference(self.solutions_dir, module)

    def transformed(self, name: str, label: str, transform: Callable) -> Callable:
        key = f"{name}|{label}"
        if key not in self._transformed:
            self._transformed[key] = transform(getattr(self._module, name))
        return self._transformed[key]


class OwnAnswers(Reference):
    """The student's own functions standing in for the reference: the oracle of a grading process whose
    module is judged on the trusted side (:mod:`autograder.grading.trusted.verifier`).

    Such a process must hold neither the reference nor its outputs. Its correctness checks then
    compare the student's function with itself, which passes whenever the function depends only
    on its arguments; what matters is that they call it on the generated inputs, so that its
    answers are recorded for the verifier, which compares them with the real reference. A check
    that fails here (the function raised, or two calls with the same arguments disagreed) fails.
    """

    knows_only_its_own_path = False

    def __init__(self, module_name: str, student: object):  # the module, or what stands in for one not imported
        self.module_name = module_name
        self._student = student
        self._functions: dict[str, Callable] = {}  # one stand-in per name (one jax.jit of it, as for a reference)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._student, name)
        if not callable(value) or isinstance(value, type):
            return value
        if name not in self._functions:
            self._functions[name] = _standing_in(self._student, name)
        return self._functions[name]

    def __repr__(self) -> str:
        return f"<the student's own answers for {self.module_name}>"

    def sibling(self, module: str):
        raise RuntimeError(
            f"{self.module_name} is judged on the trusted side: its checks may not use {module}'s reference"
        )

    def transformed(self, name: str, label: str, transform: Callable) -> Callable:
        key = f"{name}|{label}"
        if key not in self._functions:
            self._functions[key] = transform(getattr(self, name))
        return self._functions[key]


def _standing_in(student: object, name: str) -> Callable:
    """The student's ``name`` (looked up at each call, so a check's recording of it sees the call) as a
    function of its own: it leaves the global random generators as a reference leaves them (a function
    that draws from them must not change what the student's own calls draw), it leaves its arguments
    as a reference leaves them (it is given copies: a function that writes into its arguments must not
    change what the check passes next), and it is jitted apart from the student's function
    (``structure.jit_once`` keys by function), as a reference is."""

    def standing_in(*args, **kwargs):
        from autograder.runtime.copies import fresh_copy  # NumPy and JAX: imported when called, never by the core

        args, kwargs = fresh_copy((args, kwargs))
        with global_rngs.preserved():
            return getattr(student, name)(*args, **kwargs)

    standing_in.__name__ = standing_in.__qualname__ = name
    return standing_in


class ReferenceCache:
    """Every reference this process loaded: one import per file version.

    Why the cache is per process and outlives a pytest session:

    - *warm*: a reference's jitted functions stay compiled across the pytest
      sessions run in one process (the kit's own tests grade many submissions
      in-process; a notebook calls the checks once per cell);
    - *loaded before removal*: ``grade`` loads every module's reference before
      any student code runs, then removes ``solutions/`` from the sandbox. A
      file that is gone keeps its loaded version, and later modules still build
      their scenarios with earlier references (training's loaders are data's).

    A file whose modification time changed is imported again.
    """

    def __init__(self) -> None:
        self._loaded: dict[Path, tuple[int | None, Oracle]] = {}

    def load(self, solutions_dir: Path | str, module: str) -> Oracle:
        path = (Path(solutions_dir) / f"{module}.py").resolve()
        version = path.stat().st_mtime_ns if path.is_file() else None
        cached = self._loaded.get(path)
        if cached is None or (version is not None and cached[0] != version):
            loaded = load_module(path, f"_course_reference_.{module}")
            cached = self._loaded[path] = (version, Oracle(module, loaded, path.parent))
        return cached[1]

    def clear(self) -> None:
        """Forget every reference loaded (the next load imports the file again)."""
        self._loaded.clear()


REFERENCES = stores.register("core.oracle.references", ReferenceCache())


def load_reference(solutions_dir: Path | str, module: str) -> Oracle:
    """The reference of ``module`` in ``solutions_dir``, from the process's :data:`REFERENCES`."""
    return REFERENCES.load(solutions_dir, module)


def sibling(reference, module: str):
    """The reference of another course module, from the same ``solutions/`` folder (or recording).

    Scenarios of a later module are built with an earlier module's reference
    (training's loaders come from ``data.make_loader``), never with the
    student's version of it, so a bug there fails only that module's checks.
    """
    return reference.sibling(module)


def siblings_named(checks_source: str) -> set[str]:
    """The course modules a check file's scenarios take references from: every ``sibling(..., "<module>")``
    it spells (what a bundle of that module alone must ship beside its own reference)."""
    found = set()
    for node in ast.walk(syntax.parse(checks_source)):
        if isinstance(node, ast.Call) and len(node.args) == 2 and isinstance(node.args[1], ast.Constant):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if called == "sibling" and isinstance(node.args[1].value, str):
                found.add(node.args[1].value)
    return found


def transformed(reference, name: str, label: str, transform: Callable) -> Callable:
    """``transform(reference.<name>)`` (e.g. a jitted ``value_and_grad``), named ``label``.

    A check that differentiates or vectorises the reference asks for it here,
    not with ``jax.grad(reference.f)``: a recorded oracle cannot be traced,
    so the release records the transformed function's answers under ``label``.
    """
    return reference.transformed(name, label, transform)


def continue_from(reference, state, got, expected):
    """The state a check's next step starts from, after a step from ``state`` returned ``got`` where the
    reference returned ``expected`` (both already compared).

    The student's own numbers (``got``'s data fields) in ``state``'s structure (its static fields: the
    given ``apply_fn`` and ``tx``, whatever objects the student's step put there): the trusted side, which
    replays the student's recorded answers, then walks the same path as the student's process, and a state
    whose static fields are not data still continues. A recorded oracle (a release), which knows the
    reference's path only, continues from ``expected``.
    """
    if getattr(reference, "knows_only_its_own_path", False):  # a stand-in in a test may leave it unsaid
        return expected
    if not dataclasses.is_dataclass(state) or not all(hasattr(got, f.name) for f in dataclasses.fields(state)):
        return got
    numbers = {f.name: getattr(got, f.name) for f in dataclasses.fields(state) if f.metadata.get("pytree_node", True)}
    return state.replace(**numbers)  # type: ignore[union-attr]  # a flax struct dataclass's replace
