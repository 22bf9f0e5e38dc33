"""Source names: what a module's names stand for, read from its syntax tree alone (:mod:`ast`; nothing imported or
run): imports and aliases as dotted names (``jax.jit`` for ``jit``, ``J`` or ``getattr(jax, "jit")``), module-level
bindings, names rebound with ``global``, the jax callables that trace a function they are given (:func:`tracer_of`),
and a module-level ``jax.jit``/``jax.pmap`` function with its static arguments (:func:`jitted_binding`). What
:mod:`autograder.core.retrace_sources` reads a function's code with.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

# Callables of jax (and flax) that trace the function they are given and cache by that function object: by the last
# part of their name, the positions of their function arguments.
TRACERS = {
    "jit": (0,),
    "pmap": (0,),
    "pjit": (0,),
    "xla_computation": (0,),
    "eval_shape": (0,),
    "make_jaxpr": (0,),
    "shard_map": (0,),
    "export": (0,),
}
# jax.lax's loops and branches, run eagerly (outside jit), compile their body anew for a new function object.
LAX_TRACERS = {
    "scan": (0,),
    "map": (0,),
    "fori_loop": (2,),
    "while_loop": (0, 1),
    "cond": (1, 2),
    "switch": (1,),
    "associative_scan": (0,),
}
LIBRARIES = frozenset({"jax", "flax"})
# Modules of jax and flax a ``from ... import`` may bind (``from jax import lax``, ``from flax import linen as nn``).
SUBMODULES = frozenset(
    {"lax", "numpy", "linen", "nn", "experimental", "tree_util", "tree", "api", "export", "sharding"}
)


class ModuleNames:
    """The module's bindings: imports (to dotted names), module-level definitions, names rebound by ``global``."""

    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}
        self.tracers: dict[str, tuple[str, tuple[int, ...]]] = {}  # module-level names of a partial of a tracer
        self.bindings: dict[str, ast.AST] = {}
        self.modules: set[str] = set()  # names bound to a module (``import jax``, ``from jax import lax``)
        for node in tree.body:
            self._bind(node)
        self.rebound = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}

    def _bind(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                self.aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]
                self.modules.add(bound)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if alias.name in SUBMODULES:
                    self.modules.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.aliases.pop(node.name, None)
            self.bindings[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            dotted = self.dotted(node.value)
            tracer = tracer_of(self, node.value, frozenset()) if dotted is None else None
            for target in targets:
                for name in names_stored(target):
                    self.aliases.pop(name, None)
                    self.tracers.pop(name, None)
                    self.bindings[name] = node.value
                    if dotted is not None and isinstance(target, ast.Name):  # ``jit = jax.jit``: an alias
                        self.aliases[name] = dotted
                    elif tracer is not None and isinstance(target, ast.Name):  # ``pjit = partial(jax.jit, ...)``
                        self.tracers[name] = tracer
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
            for inner in ast.iter_child_nodes(node):
                if isinstance(inner, ast.stmt):
                    self._bind(inner)

    def dotted(self, node: ast.AST, local: frozenset[str] = frozenset()) -> str | None:
        """``jax.jit`` for ``jax.jit``, ``jit`` (``from jax import jit``), ``j.jit`` (``import jax as j``): the
        dotted name of an imported object, or None."""
        if isinstance(node, ast.Name):
            return None if node.id in local else self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value, local)
            return None if base is None else f"{base}.{node.attr}"
        named = attribute_by_name(node)  # getattr(jax, "jit"), operator.attrgetter("jit")(jax)
        if named is not None:
            base = self.dotted(named[0], local)
            return None if base is None else f"{base}.{named[1]}"
        return None

    def stable(self, node: ast.AST, local: frozenset[str]) -> bool:
        """``node`` names one object for the life of the module: a module-level name (never rebound by
        ``global``, not shadowed by a local), or an attribute of an imported module."""
        if isinstance(node, ast.Name):
            return node.id not in local and node.id not in self.rebound and node.id in (*self.bindings, *self.aliases)
        return self.dotted(node, local) is not None


def attribute_by_name(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(object, name) of ``getattr(obj, "name")`` or ``operator.attrgetter("name")(obj)`` (constant names: the screen
    refuses computed ones)."""
    if not isinstance(node, ast.Call):
        return None
    func, args = node.func, node.args
    if isinstance(func, ast.Name) and func.id == "getattr" and len(args) >= 2 and isinstance(args[1], ast.Constant):
        return (args[0], str(args[1].value)) if isinstance(args[1].value, str) else None
    if isinstance(func, ast.Call) and len(args) == 1 and len(func.args) == 1 and isinstance(func.args[0], ast.Constant):
        name = last_name(func.func)
        if name == "attrgetter" and isinstance(func.args[0].value, str):
            return args[0], func.args[0].value
    return None


def named(node: ast.AST) -> bool:
    """A name, an attribute, or ``getattr``/``attrgetter`` of a constant name (what can stand for ``jax.jit``)."""
    return isinstance(node, (ast.Name, ast.Attribute)) or attribute_by_name(node) is not None


def last_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def names_stored(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id


def tracer_of(module: ModuleNames, node: ast.AST, local: frozenset[str]) -> tuple[str, tuple[int, ...]] | None:
    """(name, positions of its function arguments) when ``node`` is a jax tracer (:data:`TRACERS`,
    :data:`LAX_TRACERS`) or ``partial(<tracer>, ...)``."""
    if isinstance(node, ast.Name) and node.id in module.tracers and node.id not in local:
        return module.tracers[node.id]
    dotted = module.dotted(node, local)
    if dotted is not None:
        parts = dotted.split(".")
        if parts[0] in LIBRARIES and parts[-1] in TRACERS:
            return dotted, TRACERS[parts[-1]]
        if parts[0] == "jax" and "lax" in parts[1:-1] and parts[-1] in LAX_TRACERS:
            return dotted, LAX_TRACERS[parts[-1]]
        return None
    if isinstance(node, ast.Call) and is_partial(module, node.func, local) and node.args:
        inner = tracer_of(module, node.args[0], local)
        if inner is not None:
            return f"partial({inner[0]}, ...)", inner[1]
    return None


def is_partial(module: ModuleNames, node: ast.AST, local: frozenset[str]) -> bool:
    """``functools.partial`` or ``jax.tree_util.Partial``."""
    return (module.dotted(node, local) or "").split(".")[-1] in ("partial", "Partial")


def locals_of(fn: ast.AST) -> frozenset[str]:
    """The names a function (or lambda) binds: its parameters, assignments, nested defs and imports."""
    names: set[str] = set()
    arguments = getattr(fn, "args", None)
    if isinstance(arguments, ast.arguments):
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        names |= {a.arg for a in every if a is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
    globals_ = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
    return frozenset(names - globals_)


def literal(node: ast.AST | None) -> tuple | None:
    if node is None:
        return ()
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def static_of(call: ast.Call) -> tuple | None:
    """The static arguments a ``jax.jit``/``jax.pmap`` call (or ``partial`` of one) declares, as written."""
    found: tuple = ()
    for keyword in call.keywords:
        if keyword.arg in ("static_argnums", "static_argnames", "static_broadcasted_argnums"):
            value = literal(keyword.value)
            if value is None:
                return None
            found += value
        elif keyword.arg is None:  # **options: not known here
            return None
    return found


def jitted_binding(module: ModuleNames, node: ast.AST) -> tuple[list[ast.AST], tuple | None] | None:
    """(what is traced, static arguments) when a module-level binding is a ``jax.jit``/``jax.pmap`` function: a def
    whose outermost decorator is one, or ``jax.jit(X, ...)``/``partial(jax.jit, ...)(X)``; else None."""
    compiles = ("jit", "pmap", "pjit")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
        top = node.decorator_list[0]
        tracer = tracer_of(module, top, frozenset()) or (
            tracer_of(module, top.func, frozenset()) if isinstance(top, ast.Call) and not top.args else None
        )
        if tracer is not None and tracer[0].rstrip(", .)").split(".")[-1] in compiles:
            return [node], (static_of(top) if isinstance(top, ast.Call) else ())
        return None
    if isinstance(node, ast.Call) and node.args:
        tracer = tracer_of(module, node.func, frozenset())
        if tracer is not None and tracer[0].rstrip(", .)").split(".")[-1] in compiles:
            static = static_of(node)
            if isinstance(node.func, ast.Call):  # partial(jax.jit, static_argnames=...)(X)
                outer = static_of(node.func)
                static = None if static is None or outer is None else static + outer
            return [node.args[0]], static
    return None
