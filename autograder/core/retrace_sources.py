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
from autograder.core.failures import CheckFailure
from autograder.core.source_names import (
    ModuleNames,
    attribute_by_name,
    is_partial,
    jitted_binding,
    literal,
    locals_of,
    named,
    tracer_of,
)

# The keywords that hand a tracer its function (``jax.lax.cond(p, true_fun=...)``).
FUNCTION_KEYWORDS = frozenset({"f", "fun", "fn", "body_fun", "cond_fun", "true_fun", "false_fun", "branches"})
CLEARS = frozenset({"clear_caches", "clear_cache", "clear_backends"})
AHEAD_OF_TIME = frozenset({"lower", "compile", "trace"})
STATIC_FIELDS = ("apply_fn", "tx")
# jax callables that run a function they are given without compiling it, or make a new function of it: a function
# made per call handed to any *other* jax callable (lax.reduce, jax.checkpoint, odeint, ...) is compiled anew.
RUNS_UNCOMPILED = frozenset(
    {"vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "jvp", "vjp", "linearize", "custom_jvp"}
    | {"custom_vjp", "named_call", "named_scope", "vectorize", "apply_along_axis", "apply_over_axes", "print"}
    | {"callback", "pure_callback", "io_callback", "Partial", "defjvp", "defvjp", "closure_convert"}
)
MAKES_FUNCTIONS = frozenset(
    {"partial", "Partial", "vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian", "checkpoint", "remat"}
    | {"custom_jvp", "custom_vjp", "named_call", "jit", "pmap", "vectorize"}
)


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


class _Walk:
    """The code that runs on every call of a function, and the code traced once, followed through the module."""

    def __init__(self, module: ModuleNames, parents: dict[int, ast.AST], chained: bool):
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
            local = locals_of(node)
            if per_call:
                self.per_call_causes(node, local)
            self.anywhere_causes(node, local)
            self.follow(node, local, per_call)
            self.callbacks(node, local)
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

    def callbacks(self, node: ast.AST, local: frozenset[str]) -> None:
        """What a jitted function hands to a host callback (``jax.debug.callback``, ``jax.pure_callback``) runs on
        every call of the compiled program: per call."""
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Call)
                and "callback" in (self.module.dotted(inner.func, local) or "").split(".")[-1]
            ):
                for arg in [*inner.args, *(k.value for k in inner.keywords)]:
                    if isinstance(arg, ast.Lambda):
                        self.visit(arg, True)
                    else:
                        self.follow(arg, local, True)

    def follow(self, node: ast.AST, local: frozenset[str], per_call: bool) -> None:
        """Visit the module-level bindings ``node`` names (a jitted one: what it traces, traced only)."""
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in self.module.bindings and inner.id not in local:
                binding = self.module.bindings[inner.id]
                jitted = jitted_binding(self.module, binding)
                for target in jitted[0] if jitted else [binding]:
                    self.visit(target, per_call and jitted is None)

    def per_call_causes(self, node: ast.AST, local: frozenset[str]) -> None:
        fresh = self.fresh_functions(node, local)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                self.call_causes(inner, local, fresh)
            self.value_causes(inner, node, local)

    def call_causes(self, call: ast.Call, local: frozenset[str], fresh: set[str]) -> None:
        """A tracer given a function that is not one object for the module's life, any other compiling jax callable
        given a function made on this call, a compilation ahead of time."""
        module = self.module
        tracer = tracer_of(module, call.func, local)
        if tracer is not None:
            for arg in _function_arguments(call, tracer[1]):
                if not module.stable(arg, local):
                    self.add(call, f"{tracer[0]} of {_describe(arg)}, made on every call")
        elif self.compiles_its_functions(call.func, local):
            given = [*call.args, *(k.value for k in call.keywords)]
            for arg in (element for value in given for element in _elements(value)):
                if (
                    isinstance(arg, ast.Lambda)
                    or (isinstance(arg, ast.Name) and arg.id in fresh)
                    or (isinstance(arg, ast.Call) and self.makes_a_function(arg.func, local))
                ):
                    dotted = module.dotted(call.func, local)
                    self.add(call, f"{dotted} given {_describe(arg)}, made on every call (compiled anew)")
        if isinstance(call.func, ast.Attribute) and call.func.attr in AHEAD_OF_TIME:
            has_arguments = bool(call.args or call.keywords)
            if has_arguments == (call.func.attr != "compile"):
                self.add(call, f".{call.func.attr}(...): compiles ahead of time on every call")

    def value_causes(self, inner: ast.AST, node: ast.AST, local: frozenset[str]) -> None:
        """A library module or a tracer used as a value (kept, handed on, aliased), or decorating a nested def."""
        module = self.module
        parent = self.parents.get(id(inner))
        if isinstance(inner, ast.Name) and inner.id in module.modules and inner.id not in local:
            if not (isinstance(parent, ast.Attribute) and parent.value is inner) and not (
                isinstance(parent, ast.Call) and inner in parent.args[:1] and attribute_by_name(parent)
            ):
                self.add(inner, f"the module {inner.id} used as a value on every call (its jax.jit out of sight)")
        if (named(inner) or isinstance(inner, ast.Call)) and tracer_of(module, inner, local) is not None:
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and parent is not node:
                self.add(inner, f"a function defined on every call and decorated with {ast.unparse(inner)}")
            elif not _called_or_partial(inner, parent, module, local):
                self.add(inner, f"{ast.unparse(inner)} used as a value on every call")

    def compiles_its_functions(self, func: ast.AST, local: frozenset[str]) -> bool:
        """A jax callable other than those that run a function they are given without compiling it."""
        parts = (self.module.dotted(func, local) or "").split(".")
        return parts[0] == "jax" and not ({"tree", "tree_util"} & set(parts) or parts[-1] in RUNS_UNCOMPILED)

    def makes_a_function(self, func: ast.AST, local: frozenset[str]) -> bool:
        """``partial``, ``jax.vmap``, ``jax.grad``...: a new function object on every call."""
        return (self.module.dotted(func, local) or "").split(".")[-1] in MAKES_FUNCTIONS

    def fresh_functions(self, node: ast.AST, local: frozenset[str]) -> set[str]:
        """The names a function binds to functions it makes on every call (nested defs, lambdas, partials...)."""
        names = {
            n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not node
        }
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assign) and (
                isinstance(inner.value, ast.Lambda)
                or isinstance(inner.value, ast.Call)
                and self.makes_a_function(inner.value.func, local)
            ):
                names |= {t.id for t in inner.targets if isinstance(t, ast.Name)}
        return names

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
            elif self.chained:
                self.static_parts(inner, local)

    def static_parts(self, node: ast.AST, local: frozenset[str]) -> None:
        """A state's static field given a new object (``tx=optax.sgd(...)``, ``{"apply_fn": ...}``), or a state built
        from positional arguments (which may be anything)."""
        given: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.Call):
            given = [(k.arg, k.value) for k in node.keywords if k.arg is not None]
            if "State" in ast.unparse(node.func).split(".")[-1]:  # a state built from positional arguments
                for arg in node.args:
                    if (
                        isinstance(arg, ast.Lambda)
                        or isinstance(arg, ast.Call)
                        and self.makes_a_function(arg.func, local)
                    ):
                        self.add(
                            node, f"{_describe(arg)} in a state: a new function object every step (a static field)"
                        )
        elif isinstance(node, ast.Dict):
            given = [(str(k.value), v) for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)]
        for name, value in given:
            if name in STATIC_FIELDS and not self.same_static(value, name, local):
                self.add(
                    node,
                    f"{name}={ast.unparse(value)[:60]}: a returned state whose {name} is a new object (a static field) "
                    "compiles again in the next step",
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


def _called_or_partial(node: ast.AST, parent: ast.AST | None, module: ModuleNames, local: frozenset[str]) -> bool:
    """``node`` is called (``jax.jit(f)``) or handed to ``partial`` as its function (``partial(jax.jit, ...)``)."""
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return True
        return bool(parent.args) and parent.args[0] is node and is_partial(module, parent.func, local)
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
    module = ModuleNames(tree)
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
            if isinstance(node, ast.keyword) and node.arg == "pytree_node" and literal(node.value) == (False,):
                walk.add(
                    node.value,
                    "a static field of a state class of the module's own (pytree_node=False): "
                    "a returned state whose static field changed compiles again in the next step",
                )
    causes = sorted(dict.fromkeys(walk.causes), key=lambda c: (c.line, c.what))
    return Analysis(jitted=jitted is not None, static=jitted[1] if jitted else (), found=True, causes=causes)


RETRACE_ADVICE = (
    "make every jax.jit (or jax.pmap) function once, at module level (@jax.jit, `name = jax.jit(...)`, "
    "jax.jit(a_module_level_function) inside a body), never of a lambda, a nested function, a partial or a bound "
    "method made on every call; compile nothing ahead of time per call; never clear JAX's caches"
)
LOOP_ADVICE = (
    RETRACE_ADVICE + "; return a state built from the one you received (state.apply_gradients(...), "
    "state.replace(...)) with the same apply_fn and tx objects"
)


def _failure(function: str, found: Analysis, check: str, advice: str) -> CheckFailure | None:
    if not found.found:
        return CheckFailure(check, f"{function} is not defined at module level", advice)
    if not found.causes:
        return None
    shown = "\n".join(f"- {cause}" for cause in found.causes[:5])
    return CheckFailure(
        check, f"{function} would trace and compile again on calls that one program serves:\n{shown}", advice
    )


def no_retrace_cause(source: str, module: str, function: str) -> CheckFailure | None:
    """The analysis ``retraces`` (:data:`autograder.core.from_source.ANALYSES`): no Python-side retrace cause."""
    check = f"{function} does not trace or compile again on same-shaped inputs once warm (read from {module}.py)"
    return _failure(function, analyse(source, function), check, RETRACE_ADVICE)


def no_retrace_cause_in_a_loop(source: str, module: str, function: str) -> CheckFailure | None:
    """The analysis ``retraces_in_a_loop``: no retrace cause, nor a returned state with new static parts."""
    check = f"{function} does not trace or compile again in a training loop once warm (read from {module}.py)"
    return _failure(function, analyse(source, function, chained=True), check, LOOP_ADVICE)


def jitted_without_retrace_cause(source: str, module: str, function: str) -> CheckFailure | None:
    """The analysis ``jitted_without_retraces``: a ``jax.jit`` function at module level whose static arguments are
    written out (one program per static value, traced once), and no retrace cause."""
    check = f"{function} is one jax.jit function, traced once per new static value (read from {module}.py)"
    found = analyse(source, function)
    if found.found and not found.jitted:
        return CheckFailure(
            check,
            f"{function} is not a jax.jit function made at module level: how often it traces cannot be read from "
            "its source",
            f"decorate it with @jax.jit (or functools.partial(jax.jit, static_argnames=...)), or write "
            f"`{function} = jax.jit(...)` at module level",
        )
    if found.found and found.static is None:
        return CheckFailure(
            check,
            f"the static arguments of {function}'s jax.jit are not written out (**options)",
            "name them in the call: static_argnames=('...',)",
        )
    return _failure(function, found, check, RETRACE_ADVICE)
