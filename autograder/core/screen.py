"""A static screen of a submission's source, before it runs: what an honest answer to this course never writes.

The verdicts of some checks (jit, retracing, key reuse, a ``DataLoader``'s workers) are witnessed in the student's
grading process; a submission that reaches into that process (replaces ``jax.jit``, registers a pytest plugin of its
own, finds the reporter through ``gc``, writes on the event channel) can change them. This screen reads the
module's syntax tree (:mod:`ast`: nothing is imported or run, so the grader runs it on the trusted side, and
``pytest exercises/`` runs it on the student's machine to warn early) and lists, with their lines:

- an import outside the course's list (:data:`COURSE_IMPORTS`): ``sys``, ``gc``, ``inspect``, ``ctypes``,
  ``importlib``, ``builtins``, ``types``, ``threading``, ``subprocess``... are not in it;
- ``os`` beyond what a checkpoint's path needs (:data:`OS_PATH_NAMES`);
- an assignment to (or deletion of) an attribute of an imported module, or ``setattr``/``delattr`` on one
  (``jax.jit = lambda f, **k: f``);
- ``getattr``/``setattr``/``delattr``/``hasattr`` with a computed name, or with a dunder name;
- a read of a dunder attribute (``__dict__``, ``__globals__``, ``__class__``, ``__subclasses__``, ``__code__``...)
  or name (``__builtins__``, ``__import__``, ``__loader__``...); defining ``__call__`` or ``__init__`` in a class is
  fine, and so are the harmless ones of :data:`DUNDERS_ALLOWED`;
- ``exec``, ``eval``, ``compile``, ``__import__``, ``globals``, ``locals``, ``vars``, ``breakpoint``;
- an attribute that reaches the interpreter's insides from an allowed module or object (``typing.sys``, a frame's
  ``f_back``, a code object's ``co_consts``, ``getsource``: :data:`INTERPRETER_ATTRIBUTES`), and a string naming
  ``/proc`` or ``/dev/fd`` (a process's memory and descriptors: where a grading process's handed checks were).

The policy follows RestrictedPython's (no ``exec``/``eval``/``compile``, no names or attributes that reach the
interpreter's internals, imports through a guard), checked rather than compiled: RestrictedPython rewrites the
code to run under its guards and refuses every name starting with ``_``, which honest answers use. A finding is
not a verdict: the submission is still graded, and what it earned from checks witnessed in its own process is
withheld for review (``needs review: what, file:line``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from autograder.core import syntax

# The top-level modules an answer to this course may import: the course's libraries and the standard library
# its answers use (galleries' correct and wrong answers included: an honest mistake is not a finding).
COURSE_IMPORTS = frozenset(
    {
        *("jax", "jaxlib", "flax", "optax", "orbax", "numpy", "torch", "chex", "einops"),
        *("__future__", "abc", "collections", "contextlib", "copy", "dataclasses", "enum", "functools"),
        *("itertools", "math", "numbers", "operator", "random", "statistics", "string", "typing", "warnings"),
        *("re", "time", "json", "pickle", "io", "glob", "pathlib", "shutil", "tempfile", "os"),
    }
)
# What of ``os`` a checkpoint's path needs (``os.path`` is a module of its own: all of it is fine), and the process's
# own identity, read only.
OS_PATH_NAMES = frozenset(
    {"path", "fspath", "makedirs", "mkdir", "listdir", "scandir", "remove", "unlink", "rmdir", "sep", "PathLike"}
    | {"getcwd", "walk", "rename", "replace", "stat", "curdir", "pardir", "linesep"}
    | {"getuid", "geteuid", "getgid", "getegid", "getpid"}
)
# Dunder attributes an honest answer reads: they reach nothing of the interpreter.
DUNDERS_ALLOWED = frozenset(
    {"__init__", "__call__", "__name__", "__qualname__", "__doc__", "__post_init__", "__len__", "__iter__"}
    | {"__getitem__", "__setitem__", "__contains__", "__repr__", "__str__", "__eq__", "__hash__", "__version__"}
    | {"__array__", "__jax_array__", "__enter__", "__exit__", "__add__", "__mul__", "__neg__", "__truediv__"}
)
# Attributes that reach the interpreter's insides from an allowed module or object (``typing.sys.modules``: the
# checks' module and its code; a frame's ``f_back``; a code object's constants): an honest answer reads none.
INTERPRETER_ATTRIBUTES = frozenset(
    {"sys", "f_back", "f_globals", "f_locals", "f_code", "gi_frame", "cr_frame", "ag_frame", "tb_frame", "tb_next"}
    | {"co_consts", "co_code", "co_names", "co_varnames", "_getframe", "getsource", "getsourcelines", "getlines"}
)
# Where a process's memory and descriptors are read by path.
PROCESS_PATHS = re.compile(r"/proc/|/dev/fd")
FORBIDDEN_CALLS = frozenset(
    {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint", "memoryview"}
)
NAME_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})

MAX_FINDINGS = 20


@dataclass(frozen=True)
class Finding:
    """One thing the screen found: what, and the line it is on."""

    what: str
    line: int

    def at(self, file: str) -> str:
        """``what, file:line``, as ``needs review`` lists it."""
        return f"{self.what}, {file}:{self.line}"


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class _Screen(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[Finding] = []
        self.modules: set[str] = set()  # names bound by an import to a module (``import jax``, ``import jax.numpy as
        # jnp``, ``from jax import numpy``): assigning to their attributes changes the library for every caller
        self.os_names: set[str] = set()  # names bound to the ``os`` module itself

    def add(self, node: ast.AST, what: str) -> None:
        self.found.append(Finding(what, getattr(node, "lineno", 0)))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top not in COURSE_IMPORTS:
                self.add(node, f"imports {alias.name} (not one of the course's libraries)")
            bound = alias.asname or top
            self.modules.add(bound)
            if alias.name == "os" or (alias.asname is None and top == "os"):
                self.os_names.add(bound)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        top = module.split(".")[0]
        if node.level:
            self.add(node, "a relative import")
        elif top not in COURSE_IMPORTS:
            self.add(node, f"imports from {module} (not one of the course's libraries)")
        for alias in node.names:
            if alias.name == "*":
                continue
            if module == "os" and alias.name not in OS_PATH_NAMES:
                self.add(node, f"imports os.{alias.name} (more of os than a checkpoint's path needs)")
            if _is_dunder(alias.name):
                self.add(node, f"imports {alias.name} from {module}")
            # ``from jax import numpy``: may be a module; ``from jax import jit``: a function, whose attributes
            # (its ``__code__``) are refused as dunders anyway
            self.modules.add(alias.asname or alias.name)

    # attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _is_dunder(node.attr) and node.attr not in DUNDERS_ALLOWED:
            self.add(node, f"reads the attribute {node.attr}")
        elif node.attr in INTERPRETER_ATTRIBUTES:
            self.add(node, f"reads the attribute {node.attr} (the interpreter's own: its modules, frames or code)")
        if isinstance(node.value, ast.Name) and node.value.id in self.os_names and node.attr not in OS_PATH_NAMES:
            self.add(node, f"uses os.{node.attr} (more of os than a checkpoint's path needs)")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self._of_a_module(node.value):
            verb = "assigns to" if isinstance(node.ctx, ast.Store) else "deletes"
            self.add(node, f"{verb} {_dotted(node)}, an attribute of an imported module")
        self.generic_visit(node)

    def _of_a_module(self, node: ast.expr) -> bool:
        """``node`` is a module, or reached from one (``jax.numpy``, ``[jax][0]``, ``importlib_like().x``)."""
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            node = node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self._of_a_module(e) for e in node.elts)
        return isinstance(node, ast.Call) or isinstance(node, ast.Name) and node.id in self.modules

    def visit_Name(self, node: ast.Name) -> None:
        if _is_dunder(node.id) and node.id not in ("__name__", "__doc__"):
            self.add(node, f"uses the name {node.id}")
        elif node.id in FORBIDDEN_CALLS and isinstance(node.ctx, ast.Load):
            self.add(node, f"uses {node.id}")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self._of_a_module(node.value) and not isinstance(node.value, ast.Call):  # an alias: ``j = jax``
            self.modules.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in NAME_FUNCTIONS:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self.add(node, f"{func.id} with a computed attribute name")
            elif _is_dunder(name.value) and name.value not in DUNDERS_ALLOWED:
                self.add(node, f"{func.id} of {name.value}")
            elif func.id in ("setattr", "delattr") and node.args and self._of_a_module(node.args[0]):
                self.add(node, f"{func.id} on an imported module ({name.value})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (str, bytes)) and PROCESS_PATHS.search(
            node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        ):
            self.add(node, "names /proc or /dev/fd (a process's memory or file descriptors)")

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if name in self.modules:
                self.add(node, f"rebinds the imported module {name} from a function")
        self.generic_visit(node)


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts)) or "?"


def screen(source: str | bytes) -> list[Finding]:
    """What the screen finds in ``source`` (module docstring), in line order, at most :data:`MAX_FINDINGS`. A
    source that does not parse has no findings (its import fails, and says why); one too deep to walk is one."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError):
        return []
    except (RecursionError, MemoryError):
        return [Finding("code nested too deeply to be read", 1)]
    visitor = _Screen()
    try:
        visitor.visit(tree)
    except RecursionError:
        visitor.add(tree, "code nested too deeply to be read")
    unique = list(dict.fromkeys(sorted(visitor.found, key=lambda f: (f.line, f.what))))
    return unique[:MAX_FINDINGS]


def needs_review(module: str, source: str | bytes) -> list[str]:
    """The screen's findings of ``<module>.py`` as ``needs review`` lists them (``what, file:line``)."""
    return [finding.at(f"{module}.py") for finding in screen(source)]
