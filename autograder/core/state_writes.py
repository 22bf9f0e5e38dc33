"""Whether calling a function of a submission can write state that outlives the call, read from its source.

Values cannot show a write to module state that changes no result, and what the student's process observes of
it a hostile submission can forge; this analysis decides it from the text (:mod:`ast`: nothing is imported or
run), so the trusted side can (:mod:`autograder.core.from_source`). It is *sound within the static screen's
subset* (:mod:`autograder.core.screen`: no exec/eval, dunder reads, computed getattr, module-attribute
assignment, imports outside the course's list): whatever a run could write, it flags; when it cannot prove that
an object written to was created in the call, it flags. What it follows, from the named function:

- the module's own functions it names (called, jitted, passed to ``lax.fori_loop``...), transitively, and the
  module-level bindings it names (``sgd_update = jax.jit(_update)``, ``f = make_f()``: the factory's locals
  outlive the call of the closure it returns); every method of every class of the module (an object of one may
  come in as an argument: a Flax model's ``__call__``);
- a write: ``global``/``nonlocal`` and a store; a store, ``del`` or augmented assignment to an item or attribute
  of an object not created in the call; a mutating method (``append``, ``update``, ``pop``, ``fill``, torch's
  ``add_``...) read on one (called, bound: ``f = G.append``, or unbound: ``list.append(G, x)``); ``next()`` on
  one; ``setattr``/``delattr``/``operator.setitem``; a library function that writes its first argument
  (``np.copyto``, ``random.shuffle``...) or an ``out=``; a draw from a module-level random generator or iterator;
  ``functools.lru_cache``/``cache`` (a cache is module state, and a jitted function's tracers leak into it);
- what it cannot follow (exec, ``globals()``, a dunder read, a computed attribute name, an import outside the
  course's list) is a write too.

Created in the call (fresh), so free to change: a local bound only to a display or comprehension (``{}``,
``[x for ...]``), a copy (``dict(p)``, ``list(xs)``, ``p.copy()``, ``copy.deepcopy``, ``np.array``...), an
instance of a class, ``*args``/``**kwargs``; ``self.<name> = ...`` in ``__init__``, ``__post_init__``, Flax's
``setup`` and the methods only they call. A mutable default argument is not fresh: it is made once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from autograder.core import syntax
from autograder.core.failures import CheckFailure
from autograder.core.screen import COURSE_IMPORTS
from autograder.core.state_function import FunctionWalk
from autograder.core.state_walk import (
    INIT_METHODS,
    STATEFUL_MAKERS,
    Scope,
    Write,
    dotted,
    fresh_expr,
    is_cache_decorator,
    lambdas_of,
)

ADVICE = (
    "keep everything the function needs in its arguments and everything it produces in its result: build new "
    "objects (out = dict(params); xs = []) instead of changing ones that outlive the call, and cache nothing "
    "at module level"
)


@dataclass
class ModuleModel:
    """What the module binds at its top level (``if``/``try``/``with`` blocks included)."""

    # name -> every top-level definition of it (a later one rebinds the name, but an earlier one may be kept
    # under another: ``_g = f`` between two ``def f``)
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=dict)
    bindings: dict[str, list[ast.expr]] = field(default_factory=dict)  # name -> the values bound to it
    imports: dict[str, str] = field(default_factory=dict)  # name -> what it was imported as (``functools.cache``)
    names: set[str] = field(default_factory=set)  # every name bound at the top level
    tree: ast.Module = field(default_factory=lambda: ast.Module([], []))

    @classmethod
    def of(cls, tree: ast.Module) -> ModuleModel:
        model = cls(tree=tree)
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                model.functions.setdefault(node.name, []).append(node)
                model.names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                model.classes.setdefault(node.name, []).append(node)
                model.names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    origin = alias.name if isinstance(node, ast.Import) else f"{node.module or ''}.{alias.name}"
                    bound = alias.asname or alias.name.split(".")[0]
                    model.imports[bound] = origin if alias.asname or isinstance(node, ast.ImportFrom) else bound
                    model.names.add(bound)
            else:
                model._bind(node)
        return model

    def _bind(self, node: ast.stmt) -> None:
        value = getattr(node, "value", None)
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            for name in _names_in(target):
                self.names.add(name)
                if isinstance(value, ast.expr):
                    self.bindings.setdefault(name, []).append(value)
        if isinstance(node, (ast.For, ast.With)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    self.names.add(sub.id)


def _top_level(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            yield from _top_level(node.body)
            yield from _top_level(getattr(node, "orelse", []))
            yield from _top_level(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)
            if isinstance(node, ast.With):
                yield node
        else:
            yield node


def _names_in(target: ast.AST | None) -> list[str]:
    if target is None:
        return []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


class Reach:
    """The walk from one function through everything it can run (see the module)."""

    def __init__(self, model: ModuleModel, module: str):
        self.model = model
        self.file = f"{module}.py"
        self.writes: list[Write] = []
        self.done: set[tuple[str, bool]] = set()
        self.todo: list[tuple[str, bool, str]] = []  # (module-level name, run at import, who reached it)
        self._init_like: dict[str, frozenset[str]] = {}
        self._users: dict[str, set[str]] | None = None

    def name(self, name: str, at_import: bool, via: str) -> None:
        """``name`` (a module-level function, class or binding) can run in the call."""
        if (name, at_import) not in self.done:
            self.done.add((name, at_import))
            self.todo.append((name, at_import, via))

    def run(self, function: str) -> list[Write]:
        self.name(function, False, function)
        for classes in self.model.classes.values():
            for cls in classes:
                self._class(cls)
        while self.todo:
            name, at_import, via = self.todo.pop()
            for node in self.model.functions.get(name, []):
                self._function(node, at_import, via, Scope.module(self.model))
            for value in self.model.bindings.get(name, []):
                self._binding(name, value, via)
        return self.writes

    def _function(self, node, at_import: bool, via: str, outer: Scope, method_of: ast.ClassDef | None = None) -> None:
        for decorator in node.decorator_list:
            if is_cache_decorator(decorator, self.model.imports):
                self.writes.append(Write(node.lineno, f"is cached with {ast.unparse(decorator)}", node.name, "cache"))
        defaults = [d for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None]
        for expression in [*node.decorator_list, *defaults]:
            self._import_time(expression, node.name, via)
        walk = FunctionWalk(node, outer, self, via, method_of, persistent=at_import)
        self.writes.extend(walk.run())

    def _binding(self, name: str, value: ast.expr, via: str) -> None:
        """A module-level ``name = value`` the call uses: what the value names runs (a factory it calls ran at
        import, and the closures it made outlive it); a lambda in it runs; a cache in it is module state."""
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in self.model.functions:
                    self.name(node.func.id, True, via)
            if is_cache_decorator(node, self.model.imports):
                self.writes.append(Write(value.lineno, f"is cached with {ast.unparse(node)}", name, "cache"))
            elif isinstance(node, ast.Name) and node.id in self.model.names:
                self.name(node.id, False, via)
        for lam in lambdas_of(value):
            self.writes.extend(FunctionWalk(lam, Scope.module(self.model), self, via, None, False).run())

    def _import_time(self, expression: ast.expr, label: str, via: str) -> None:
        """An expression run at import around a definition (a decorator, a default, a class's base or attribute):
        the module's functions it names may have run then (a decorator made the function the call runs, a
        factory the closure a default holds) and may run in the call."""
        for node in ast.walk(expression):
            if isinstance(node, ast.Name) and node.id in self.model.names:
                self.name(node.id, True, via)
                self.name(node.id, False, via)
        for lam in lambdas_of(expression):
            self.writes.extend(FunctionWalk(lam, Scope.module(self.model), self, via, None, False).run())

    def init_like(self, cls: ast.ClassDef) -> frozenset[str]:
        """The methods of ``cls`` that initialise an object: ``__init__``, ``__post_init__``, Flax's ``setup``, and
        the methods read (``self.m``) nowhere but in those."""
        if cls.name not in self._init_like:
            methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            found = {name for name in methods if name in INIT_METHODS}
            users = self._attribute_users()
            grown = True
            while grown:
                grown = False
                for name in methods:
                    if name not in found and users.get(name) and users[name] <= {f"{cls.name}.{m}" for m in found}:
                        found.add(name)
                        grown = True
            self._init_like[cls.name] = frozenset(found)
        return self._init_like[cls.name]

    def _attribute_users(self) -> dict[str, set[str]]:
        """attribute name -> where it is read (``Class.method``, a function's name, or ``<module>``)."""
        if self._users is None:
            self._users = {}
            for node in self.model.tree.body:
                places = (
                    [
                        (f"{node.name}.{m.name}", m)
                        for m in node.body
                        if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                    ]
                    if isinstance(node, ast.ClassDef)
                    else [(getattr(node, "name", "<module>"), node)]
                )
                for place, sub in places:
                    for attribute in ast.walk(sub):
                        if isinstance(attribute, ast.Attribute):
                            self._users.setdefault(attribute.attr, set()).add(place)
        return self._users

    def stateful_attributes(self, cls: ast.ClassDef) -> frozenset[str]:
        """The attributes of ``cls``'s objects bound to a random generator or iterator (``self.rng = ...``)."""
        found = set()
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                if dotted(node.value.func).rsplit(".", 1)[-1] in STATEFUL_MAKERS:
                    found |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
        return frozenset(found)

    def fresh_attributes(self, cls: ast.ClassDef) -> frozenset[str]:
        """The attributes ``cls``'s initialising methods bind (``self.a = ...``) only to fresh objects."""
        values: dict[str, list[ast.expr]] = {}
        init = self.init_like(cls)
        for method in cls.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(method):
                    if isinstance(node, ast.Assign):
                        for target in node.targets:
                            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                                key = target.attr if method.name in init else f"<not init> {target.attr}"
                                values.setdefault(key, []).append(node.value)
        module = Scope.module(self.model)
        return frozenset(
            a for a, vs in values.items() if f"<not init> {a}" not in values and all(fresh_expr(v, module) for v in vs)
        )

    def mutates_a_parameter(self, function: str) -> int | None:
        """The line where the module function ``function`` changes a parameter in place (``acc += x``), or None."""
        for node in self.model.functions.get(function, []):
            params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
            for sub in ast.walk(node):
                if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name) and sub.target.id in params:
                    return sub.lineno
        return None

    def _class(self, cls: ast.ClassDef) -> None:
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node, False, f"{cls.name}.{node.name}", Scope.module(self.model), cls)
        run_at_import: list[ast.AST] = [*cls.decorator_list, *cls.bases, *(k.value for k in cls.keywords)]
        run_at_import += [n for n in cls.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for part in run_at_import:  # a class's decorators, bases and attributes run at import
            parts = [part] if isinstance(part, ast.expr) else list(ast.iter_child_nodes(part))
            for expression in parts:
                if isinstance(expression, ast.expr):
                    self._import_time(expression, cls.name, cls.name)


def writes_of(source: str | bytes, module: str, function: str) -> list[Write]:
    """What calling ``function`` of ``<module>.py`` (``source``) can write that outlives the call, in line order;
    a source that does not parse, or has no such function, is one write (it cannot be decided)."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [Write(1, f"{module}.py cannot be read as Python", function, "unreadable")]
    model = ModuleModel.of(tree)
    if function not in model.functions and function not in model.bindings and function not in model.classes:
        how = "is imported" if function in model.imports else "is not defined at the top level"
        return [Write(1, f"{function} {how}: the analysis cannot read it", function, "unreadable")]
    try:
        found = Reach(model, module).run(function)
    except RecursionError:
        return [Write(1, "code nested too deeply to be read", function, "unreadable")]
    return sorted(set(found), key=lambda w: (w.line, w.what))


def module_state_failure(source: str, module: str, function: str) -> CheckFailure | None:
    """The analysis ``module_state`` of :data:`autograder.core.from_source.ANALYSES`: None when calling
    ``function`` writes nothing that outlives the call, else the failure naming the first write."""
    found = writes_of(source, module, function)
    if not found:
        return None
    first = found[0]
    where = "" if first.function == function else f" (in {first.function}, which {function} runs)"
    said = first.what if first.kind == "unreadable" else f"{first.function} {first.what}{where}"
    more = f"\n({len(found) - 1} more such line(s): " + ", ".join(f"{module}.py:{w.line}" for w in found[1:4]) + ")"
    return CheckFailure(
        f"{function} writes no state that outlives its call (decided from the source of {module}.py)",
        f"{module}.py:{first.line}: {said}",
        ADVICE + (more if len(found) > 1 else ""),
    )


__all__ = ["COURSE_IMPORTS", "ModuleModel", "Write", "module_state_failure", "writes_of"]
