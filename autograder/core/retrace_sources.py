"""Retrace sources: what in a module's source makes a function trace or compile again on calls that one program
should serve (issue 42), read from its syntax tree alone (:mod:`ast`: nothing is imported or run, so the trusted
side reads it).

A program says what was compiled, not how often Python traced: a wrapper that makes a new ``jax.jit`` on every call
compiles the same program each time. What a student's code controls that misses JAX's caches on the Python side
(the other cause, values baked into the program, is decided from the program itself) is code that runs on *every*
call (:func:`analyse`: the function's own body unless it is jitted at module level, and the module's functions it
calls from there) doing one of:

- handing a function made on this call to something that traces it and caches by the function object: ``jax.jit``,
  ``jax.pmap``, ``partial(jax.jit, ...)``, ``jax.eval_shape``, ``jax.make_jaxpr``, ``shard_map``, or a ``jax.lax``
  loop or branch run eagerly (a lambda, a nested def, a ``functools.partial``, ``jax.vmap(...)``'s result, a bound
  method, a parameter, a name rebound with ``global``); ``jax.jit(module_level_function)`` is one program;
- using one of those as a value (``wrap = jax.jit``), or decorating a nested def with it;
- compiling ahead of time (``.lower(...)``, ``.compile()``, ``.trace(...)``);

and, wherever the function's code runs (traced once included): clearing JAX's caches (``jax.clear_caches``,
``.clear_cache()``) or changing its configuration (``jax.config``). For a step fed its own result (``chained``), a
returned state with new static parts: a call given ``apply_fn=``/``tx=`` anything but ``<state>.apply_fn``/``.tx``
or a module-level object, or a state class of the module's own with a static field (``pytree_node=False``).

The analysis reads the subset of Python the static screen (:mod:`autograder.core.screen`) lets through: no
``exec``/``eval``, no computed ``getattr``, no dunder reads, no assignment to a module's attributes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from autograder.core import syntax

# Callables of jax (and flax) that trace the function they are given and cache by that function object: by the last
# part of their name, the positions (and keywords) of their function arguments.
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
FUNCTION_KEYWORDS = frozenset({"f", "fun", "fn", "body_fun", "cond_fun", "true_fun", "false_fun", "branches"})
LIBRARIES = frozenset({"jax", "flax"})
CLEARS = frozenset({"clear_caches", "clear_cache", "clear_backends"})
AHEAD_OF_TIME = frozenset({"lower", "compile", "trace"})
STATIC_FIELDS = ("apply_fn", "tx")


@dataclass(frozen=True)
class Cause:
    """One thing that retraces: what, and the line it is on."""

    what: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


@dataclass
class Analysis:
    """What :func:`analyse` found for one function: whether its module-level binding is a ``jax.jit``/``jax.pmap``
    function (and its static arguments as written, ``None`` when not literal), and the causes."""

    jitted: bool = False
    static: tuple | None = ()
    found: bool = False
    causes: list[Cause] = field(default_factory=list)


class _Module:
    """The module's bindings: imports (to dotted names), module-level definitions, names rebound by ``global``."""

    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}
        self.tracers: dict[str, tuple[str, tuple[int, ...]]] = {}  # module-level names of a partial of a tracer
        self.bindings: dict[str, ast.AST] = {}
        for node in tree.body:
            self._bind(node)
        self.rebound = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}

    def _bind(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.aliases.pop(node.name, None)
            self.bindings[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            dotted = self.dotted(node.value)
            tracer = tracer_of(self, node.value, frozenset()) if dotted is None else None
            for target in targets:
                for name in _names_stored(target):
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
        named = _attribute_by_name(node)  # getattr(jax, "jit"), operator.attrgetter("jit")(jax)
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


def _attribute_by_name(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(object, name) of ``getattr(obj, "name")`` or ``operator.attrgetter("name")(obj)`` (constant names: the screen
    refuses computed ones)."""
    if not isinstance(node, ast.Call):
        return None
    func, args = node.func, node.args
    if isinstance(func, ast.Name) and func.id == "getattr" and len(args) >= 2 and isinstance(args[1], ast.Constant):
        return (args[0], str(args[1].value)) if isinstance(args[1].value, str) else None
    if isinstance(func, ast.Call) and len(args) == 1 and len(func.args) == 1 and isinstance(func.args[0], ast.Constant):
        name = _last(func.func)
        if name == "attrgetter" and isinstance(func.args[0].value, str):
            return args[0], func.args[0].value
    return None


def _named(node: ast.AST) -> bool:
    """A name, an attribute, or ``getattr``/``attrgetter`` of a constant name (what can stand for ``jax.jit``)."""
    return isinstance(node, (ast.Name, ast.Attribute)) or _attribute_by_name(node) is not None


def _last(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _names_stored(target: ast.AST) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id


def tracer_of(module: _Module, node: ast.AST, local: frozenset[str]) -> tuple[str, tuple[int, ...]] | None:
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
    if isinstance(node, ast.Call) and _is_partial(module, node.func, local) and node.args:
        inner = tracer_of(module, node.args[0], local)
        if inner is not None:
            return f"partial({inner[0]}, ...)", inner[1]
    return None


def _is_partial(module: _Module, node: ast.AST, local: frozenset[str]) -> bool:
    """``functools.partial`` or ``jax.tree_util.Partial``."""
    return (module.dotted(node, local) or "").split(".")[-1] in ("partial", "Partial")


def _locals(fn: ast.AST) -> frozenset[str]:
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


def _literal(node: ast.AST | None) -> tuple | None:
    if node is None:
        return ()
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _static_of(call: ast.Call) -> tuple | None:
    """The static arguments a ``jax.jit``/``jax.pmap`` call (or ``partial`` of one) declares, as written."""
    found: tuple = ()
    for keyword in call.keywords:
        if keyword.arg in ("static_argnums", "static_argnames", "static_broadcasted_argnums"):
            value = _literal(keyword.value)
            if value is None:
                return None
            found += value
        elif keyword.arg is None:  # **options: not known here
            return None
    return found


def jitted_binding(module: _Module, node: ast.AST) -> tuple[list[ast.AST], tuple | None] | None:
    """(what is traced, static arguments) when a module-level binding is a ``jax.jit``/``jax.pmap`` function: a def
    whose outermost decorator is one, or ``jax.jit(X, ...)``/``partial(jax.jit, ...)(X)``; else None."""
    compiles = ("jit", "pmap", "pjit")
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
        top = node.decorator_list[0]
        tracer = tracer_of(module, top, frozenset()) or (
            tracer_of(module, top.func, frozenset()) if isinstance(top, ast.Call) and not top.args else None
        )
        if tracer is not None and tracer[0].rstrip(", .)").split(".")[-1] in compiles:
            return [node], (_static_of(top) if isinstance(top, ast.Call) else ())
        return None
    if isinstance(node, ast.Call) and node.args:
        tracer = tracer_of(module, node.func, frozenset())
        if tracer is not None and tracer[0].rstrip(", .)").split(".")[-1] in compiles:
            static = _static_of(node)
            if isinstance(node.func, ast.Call):  # partial(jax.jit, static_argnames=...)(X)
                outer = _static_of(node.func)
                static = None if static is None or outer is None else static + outer
            return [node.args[0]], static
    return None


class _Walk:
    """The code that runs on every call of a function, and the code traced once, followed through the module."""

    def __init__(self, module: _Module, parents: dict[int, ast.AST], chained: bool):
        self.module = module
        self.parents = parents
        self.chained = chained
        self.causes: list[Cause] = []
        self.seen: dict[int, bool] = {}  # node id -> visited per call (True) or traced only (False)

    def add(self, node: ast.AST, what: str) -> None:
        self.causes.append(Cause(what, getattr(node, "lineno", 0)))

    def visit(self, node: ast.AST, per_call: bool) -> None:
        if self.seen.get(id(node)) is True or (id(node) in self.seen and not per_call):
            return
        self.seen[id(node)] = per_call
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            local = _locals(node)
            if per_call:
                self.per_call_causes(node, local)
            self.anywhere_causes(node, local)
            self.follow(node, local, per_call)
        else:  # a module-level value: made once at import; the functions in it run per call (or traced)
            self.anywhere_causes(node, frozenset())
            for inner in ast.walk(node):  # ``TOOLS = [jax.jit]``: a tracer kept to be called later
                if inner is not node and tracer_of(self.module, inner, frozenset()) is not None:
                    if per_call and not _called_or_partial(
                        inner, self.parents.get(id(inner)), self.module, frozenset()
                    ):
                        self.add(inner, f"{ast.unparse(inner)} kept as a value and called later")
            for inner in ast.walk(node):
                if isinstance(inner, ast.Lambda):
                    self.visit(inner, per_call)
            self.follow(node, frozenset(), per_call)

    def follow(self, node: ast.AST, local: frozenset[str], per_call: bool) -> None:
        """Visit the module-level bindings ``node`` names (a jitted one: what it traces, traced only)."""
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in self.module.bindings and inner.id not in local:
                binding = self.module.bindings[inner.id]
                jitted = jitted_binding(self.module, binding)
                for target in jitted[0] if jitted else [binding]:
                    self.visit(target, per_call and jitted is None)

    def per_call_causes(self, node: ast.AST, local: frozenset[str]) -> None:
        module = self.module
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                tracer = tracer_of(module, inner.func, local)
                if tracer is not None:
                    for arg in _function_arguments(inner, tracer[1]):
                        if not module.stable(arg, local):
                            self.add(inner, f"{tracer[0]} of {_describe(arg)}, made on every call")
                if isinstance(inner.func, ast.Attribute) and inner.func.attr in AHEAD_OF_TIME:
                    given = bool(inner.args or inner.keywords)
                    if given == (inner.func.attr != "compile"):
                        self.add(inner, f".{inner.func.attr}(...): compiles ahead of time on every call")
            if (_named(inner) or isinstance(inner, ast.Call)) and tracer_of(module, inner, local) is not None:
                parent = self.parents.get(id(inner))
                if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent is not node:
                    self.add(inner, f"a function defined on every call and decorated with {ast.unparse(inner)}")
                elif not _called_or_partial(inner, parent, module, local):
                    self.add(inner, f"{ast.unparse(inner)} used as a value on every call")

    def anywhere_causes(self, node: ast.AST, local: frozenset[str]) -> None:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and inner.attr in CLEARS:
                self.add(inner, f"{ast.unparse(inner)}: clears the compiled programs, so the next call compiles again")
            elif isinstance(inner, (ast.Name, ast.Attribute)):
                dotted = self.module.dotted(inner, local) or ""
                if dotted.split(".")[-1] in CLEARS:
                    self.add(inner, f"{dotted}: clears the compiled programs, so the next call compiles again")
                elif dotted == "jax.config" or dotted.startswith("jax.config."):
                    self.add(inner, "jax.config: a configuration change is a new signature for every jitted function")
            elif self.chained and isinstance(inner, ast.Call):
                for keyword in inner.keywords:
                    if keyword.arg in STATIC_FIELDS and not self.same_static(keyword.value, keyword.arg, local):
                        self.add(
                            inner,
                            f"{keyword.arg}={ast.unparse(keyword.value)[:60]}: a returned state whose {keyword.arg} is a "
                            "new object (a static field) compiles again in the next step",
                        )

    def same_static(self, value: ast.AST, name: str, local: frozenset[str]) -> bool:
        """``<state>.apply_fn`` (the given state's own object) or a module-level object made once."""
        if isinstance(value, ast.Attribute) and value.attr == name:
            return True
        return isinstance(value, ast.Name) and self.module.stable(value, local)


def _function_arguments(call: ast.Call, positions: tuple[int, ...]) -> Iterator[ast.AST]:
    for position in positions:
        if position < len(call.args):
            yield from _elements(call.args[position])
    for keyword in call.keywords:
        if keyword.arg in FUNCTION_KEYWORDS:
            yield from _elements(keyword.value)


def _elements(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, (ast.List, ast.Tuple)):  # lax.switch's branches
        yield from node.elts
    elif not isinstance(node, ast.Starred):
        yield node


def _called_or_partial(node: ast.AST, parent: ast.AST | None, module: _Module, local: frozenset[str]) -> bool:
    """``node`` is called (``jax.jit(f)``) or handed to ``partial`` as its function (``partial(jax.jit, ...)``)."""
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return True
        return bool(parent.args) and parent.args[0] is node and _is_partial(module, parent.func, local)
    return isinstance(parent, ast.Attribute)  # jax.jit.<attr>: its own attribute, judged as a name of its own


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Lambda):
        return "a lambda"
    if isinstance(node, ast.Call):
        return f"{ast.unparse(node.func)[:40]}(...)'s result"
    return ast.unparse(node)[:60]


def analyse(source: str | bytes, function: str, *, chained: bool = False) -> Analysis:
    """The retrace causes of ``function`` in the module ``source`` (see the module); ``chained``: a step fed the
    state it returned. A source that does not parse, or has no such function, has ``found`` False."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Analysis()
    module = _Module(tree)
    binding = module.bindings.get(function)
    if binding is None:
        return Analysis()
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    walk = _Walk(module, parents, chained)
    jitted = jitted_binding(module, binding)
    try:
        for target in jitted[0] if jitted else [binding]:
            walk.visit(target, per_call=jitted is None)
    except RecursionError:
        walk.add(binding, "code nested too deeply to be read")
    if chained:
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "pytree_node" and _literal(node.value) == (False,):
                walk.add(
                    node.value,
                    "a static field of a state class of the module's own (pytree_node=False): "
                    "a returned state whose static field changed compiles again in the next step",
                )
    causes = sorted(dict.fromkeys(walk.causes), key=lambda c: (c.line, c.what))
    return Analysis(jitted=jitted is not None, static=jitted[1] if jitted else (), found=True, causes=causes)
