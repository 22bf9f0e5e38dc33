"""One function's body, walked for writes that outlive its call (:mod:`autograder.core.state_writes` walks the
module and its call graph; this module, one scope at a time, what each name is and what each line writes)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Protocol

from autograder.core.screen import FORBIDDEN_CALLS

# Methods that change the object they are read on (containers, NumPy arrays, iterators; torch's end in "_").
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault", "add", "discard"}
    | {"sort", "reverse", "fill", "put", "itemset", "resize", "setflags", "partition", "byteswap", "send", "throw"}
    | {"appendleft", "extendleft", "popleft", "rotate", "move_to_end", "difference_update", "intersection_update"}
    | {"symmetric_difference_update", "__setitem__", "__delitem__", "__setattr__", "__delattr__", "__iadd__"}
    | {"__next__", "__ior__", "__isub__", "__imul__", "seed", "manual_seed", "set_state", "setstate", "shuffle"}
)
# Library functions that write their first argument.
FIRST_ARG_WRITERS = frozenset(
    {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "shuffle", "setitem", "delitem"}
    | {"iadd", "isub", "imul", "itruediv", "iconcat", "ior", "iand", "at", "heappush", "heappop", "heapify"}
)
# What returns an object that may be one of its arguments (a NumPy view, the array itself).
ALIASING_CALLS = frozenset(
    {"asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite", "require", "reshape"}
    | {"ravel", "squeeze", "transpose", "swapaxes", "moveaxis", "expand_dims", "atleast_1d", "atleast_2d", "view"}
    | {"atleast_3d", "broadcast_to", "diagonal", "frombuffer", "from_numpy", "as_tensor", "get", "getattr"}
    | {"next", "setdefault", "pop", "values", "items", "keys", "flatten_dict", "cast", "detach", "numpy", "T"}
)
FRESH_BUILTINS = frozenset(
    {"dict", "list", "set", "tuple", "frozenset", "bytearray", "sorted", "str", "int", "float", "bool", "range"}
    | {"enumerate", "zip", "map", "filter", "reversed", "len", "sum", "min", "max", "abs", "round", "repr", "object"}
)
# Methods that return a new object (a copy, a new state; Flax's variables live in the scope of one apply).
COPY_METHODS = frozenset(
    {"copy", "deepcopy", "unfreeze", "clone", "tolist", "astype", "to_dict", "replace", "variable", "param"}
)
# Module-level objects every use of which draws from or advances them.
STATEFUL_MAKERS = frozenset(
    {"default_rng", "RandomState", "Random", "Generator", "iter", "count", "cycle", "repeat", "PRNGKeyIterator"}
)
INIT_METHODS = frozenset({"__init__", "__post_init__", "setup"})
CACHES = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})
UNFOLLOWABLE = FORBIDDEN_CALLS | {"getattr", "setattr", "delattr", "hasattr"}


@dataclass(frozen=True)
class Write:
    """One line that can write state outliving the call: where, what, in which function, of what kind."""

    line: int
    what: str
    function: str
    kind: str = "write"


class Reacher(Protocol):
    """What a walk reports the module-level names it can run to (:class:`autograder.core.state_writes.Reach`)."""

    model: Any

    def name(self, name: str, at_import: bool, via: str) -> None: ...

    def init_like(self, cls: ast.ClassDef) -> frozenset[str]: ...

    def mutates_a_parameter(self, function: str) -> int | None: ...

    def stateful_attributes(self, cls: ast.ClassDef) -> frozenset[str]: ...

    def fresh_attributes(self, cls: ast.ClassDef) -> frozenset[str]: ...


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for a chain of attributes on a name ('' for anything else)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id, *reversed(parts)])


def is_cache_decorator(node: ast.AST, imports: dict[str, str]) -> bool:
    """``functools.lru_cache``, ``lru_cache(maxsize=...)``, ``functools.cache``... (however imported)."""
    if isinstance(node, ast.Call):
        node = node.func
    name = dotted(node)
    if not name:
        return False
    head, _, rest = name.partition(".")
    origin = imports.get(head, "")
    return (f"{origin}.{rest}" if rest else origin) in CACHES or name in CACHES


def base_name(node: ast.AST) -> ast.Name | None:
    """The name an item or attribute chain starts from (``G`` of ``G["a"].b[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node if isinstance(node, ast.Name) else None


class Scope:
    """What a name is in one function (or the module): a fresh local, a parameter, a closure's, the module's."""

    def __init__(self, model: Any, parent: Scope | None, function: str = "", persistent: bool = False):
        self.model = model
        self.parent = parent
        self.function = function
        self.persistent = persistent  # a factory run at import: its locals outlive the closures' calls
        self.locals: dict[str, bool] = {}  # name -> bound only to fresh objects
        self.params: dict[str, str] = {}  # name -> "param", "default" (a default made once) or "fresh" (*args)
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.imports: set[str] = set()  # names a function's own import binds

    @classmethod
    def module(cls, model: Any) -> Scope:
        return cls(model, None)

    def kind(self, name: str) -> str:
        """'fresh', 'local', 'param', 'default', 'closure', 'module', 'import' or 'builtin' for ``name`` here:
        a name of an enclosing function is fresh only where that function is called in the call (not a factory
        run at import) and it bound the name only to fresh objects."""
        scope: Scope | None = self
        inner = True
        while scope is not None and scope.parent is not None:
            if name in scope.globals:
                return "module"
            if name in scope.imports:
                return "import"
            if name in scope.nonlocals:
                scope, inner = scope.parent, False
                continue
            if name in scope.params or name in scope.locals:
                own = scope.params.get(name) or ("fresh" if scope.locals[name] else "local")
                if inner:
                    return own
                return "fresh" if own == "fresh" and not scope.persistent else "closure"
            scope, inner = scope.parent, False
        if name in self.model.imports:
            return "import"
        return "module" if name in self.model.names else "builtin"

    def owner(self, name: str) -> Scope | None:
        """The enclosing function scope that binds a ``nonlocal`` ``name``."""
        scope = self.parent
        while scope is not None and scope.parent is not None:
            if name in scope.locals or name in scope.params:
                return scope
            scope = scope.parent
        return None


def fresh_expr(node: ast.AST | None, scope: Scope) -> bool:
    """``node`` is an object made in this call (see :mod:`autograder.core.state_writes`)."""
    if node is None:
        return False  # bound to something unknown (a loop's item, a with's value)
    if isinstance(node, (ast.Constant, ast.JoinedStr, ast.Lambda)):
        return True
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp)):
        return True
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Tuple)):
        return True  # a new object (or an immutable one)
    if isinstance(node, ast.IfExp):
        return fresh_expr(node.body, scope) and fresh_expr(node.orelse, scope)
    if isinstance(node, ast.BoolOp):
        return all(fresh_expr(v, scope) for v in node.values)
    if isinstance(node, ast.Name):
        return scope.kind(node.id) == "fresh"
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "at":
        return True  # JAX's functional update (x.at[i]): its methods return new arrays
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id == "iter" and scope.kind("iter") == "builtin" and node.args:
        return _iterates_anew(node.args[0], scope)
    if isinstance(func, ast.Name):
        kind = scope.kind(func.id)
        return (kind == "builtin" and func.id in FRESH_BUILTINS) or func.id in scope.model.classes
    if isinstance(func, ast.Attribute):
        if func.attr in ALIASING_CALLS:
            return False
        if func.attr in COPY_METHODS:
            return True
        root = base_name(func)
        return root is not None and scope.kind(root.id) == "import" and dotted(func) != ""
    return False


def _iterates_anew(arg: ast.AST, scope: Scope) -> bool:
    """``iter(arg)`` is a new iterator: ``arg`` is fresh, an argument (a loader the check made), or a module-level
    value that is not itself an iterator (whose every use is flagged anyway)."""
    if not isinstance(arg, ast.Name):
        return fresh_expr(arg, scope)
    kind = scope.kind(arg.id)
    if kind == "module":
        return not any(is_stateful(value, scope.model) for value in scope.model.bindings.get(arg.id, []))
    return kind in ("fresh", "param")


def lambdas_of(node: ast.AST) -> list[ast.Lambda]:
    """The lambdas of an expression not inside another one."""
    found: list[ast.Lambda] = []

    def visit(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.Lambda):
                found.append(child)
            else:
                visit(child)

    visit(node) if not isinstance(node, ast.Lambda) else found.append(node)
    return found


def own_nodes(nodes: list[ast.AST]):
    """Every node of ``nodes`` and below, not inside a nested function, lambda or class (those are yielded)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def is_stateful(value: ast.AST, model: Any) -> bool:
    """A module-level value every use of which advances it: a random generator, an iterator, a generator."""
    if isinstance(value, ast.GeneratorExp):
        return True
    if not isinstance(value, ast.Call):
        return False
    name = dotted(value.func).rsplit(".", 1)[-1]
    yields = any(
        isinstance(n, (ast.Yield, ast.YieldFrom))
        for generator in model.functions.get(name, [])
        for n in ast.walk(generator)
    )
    return name in STATEFUL_MAKERS or yields
