"""The writes of one function's body (see :mod:`autograder.core.state_writes`): its scope first (which names are
fresh), then every line that can write what outlives the call; nested functions and lambdas are walked with
this scope around them."""

from __future__ import annotations

import ast
import builtins

from autograder.core.screen import COURSE_IMPORTS, DUNDERS_ALLOWED
from autograder.core.state_walk import (
    FIRST_ARG_WRITERS,
    MUTATING_METHODS,
    UNFOLLOWABLE,
    Reacher,
    Scope,
    Write,
    base_name,
    dotted,
    fresh_expr,
    is_cache_decorator,
    is_stateful,
    own_nodes,
)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
# Names that end in "_" but write nothing (NumPy's scalar types); any other such function (torch's init.normal_)
# writes its first argument.
NOT_IN_PLACE = frozenset({"round_", "float_", "int_", "bool_", "object_", "str_", "bytes_", "complex_", "unicode_"})


def _mutating(attr: str) -> bool:
    return attr in MUTATING_METHODS or (len(attr) > 1 and attr.endswith("_") and not attr.startswith("_"))


class FunctionWalk:
    """The writes of ``node`` (a function or lambda) whose free names resolve in ``outer``."""

    def __init__(
        self,
        node: FunctionNode,
        outer: Scope,
        reach: Reacher,
        via: str,
        method_of: ast.ClassDef | None,
        persistent: bool,
    ):
        self.node = node
        self.reach = reach
        self.via = via
        name = getattr(node, "name", "<lambda>")
        self.name = f"{method_of.name}.{name}" if method_of is not None else name
        self.scope = Scope(outer.model, outer, self.name, persistent)
        self.method_of = method_of
        self.init_like = method_of is not None and name in reach.init_like(method_of)
        self.self_name = ""
        self.stateful_attributes = reach.stateful_attributes(method_of) if method_of is not None else frozenset()
        self.writes: list[Write] = []
        self._parameters()
        self._bindings()

    def _parameters(self) -> None:
        args = self.node.args
        positional = args.posonlyargs + args.args
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        for arg, default in pairs:
            mutable = default is not None and not isinstance(default, (ast.Constant, ast.Tuple))
            self.scope.params[arg.arg] = "default" if mutable else "param"
        for star in (args.vararg, args.kwarg):
            if star is not None:
                self.scope.params[star.arg] = "fresh"
        if self.method_of is not None and positional:
            self.self_name = positional[0].arg

    def _body(self) -> list[ast.AST]:
        return [self.node.body] if isinstance(self.node, ast.Lambda) else list(self.node.body)

    def _bindings(self) -> None:
        """Which locals are bound only to fresh objects (a fixpoint: ``b = a`` is fresh when ``a`` is)."""
        bound: dict[str, list[ast.AST | None]] = {}
        rebound: set[str] = set()

        def bind(target: ast.AST, value: ast.AST | None) -> None:
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(value)
            elif isinstance(target, (ast.Tuple, ast.List)):
                pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
                for i, element in enumerate(target.elts):
                    bind(element, value.elts[i] if pairs and isinstance(value, (ast.Tuple, ast.List)) else None)
            elif isinstance(target, ast.Starred):
                bind(target.value, None)

        for node in own_nodes(self._body()):
            if isinstance(node, ast.Global):
                self.scope.globals.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                self.scope.nonlocals.update(node.names)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                bind(node.target, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                bind(node.target, None)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bind(node.optional_vars, None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    self.scope.imports.add(alias.asname or alias.name.split(".")[0])
                    self._import(node, alias.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(ast.Name(node.name, ast.Store()), ast.Constant(None))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                # a name a nested function rebinds (nonlocal) may hold anything: never fresh here
                rebound.update(n for sub in ast.walk(node) if isinstance(sub, ast.Nonlocal) for n in sub.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bind(ast.Name(node.name, ast.Store()), None)
        for name in [p for p in self.scope.params if p in bound and self._copied_first(p)]:
            del self.scope.params[name]  # ``p = dict(p)`` first: from there on, a local like any other
        self.scope.locals = {name: name not in rebound for name in bound if name not in self.scope.params}
        changed = True
        while changed:
            changed = False
            for name in self.scope.locals:
                fresh = all(fresh_expr(value, self.scope) for value in bound[name])
                if self.scope.locals[name] and not fresh:
                    self.scope.locals[name] = False
                    changed = True

    def _copied_first(self, param: str) -> bool:
        """The body's first statement that names ``param`` binds it to a fresh object made without changing it
        (``params = dict(params)``, ``p = p.copy()``), at the top level of the body."""
        for statement in self._body():
            if not any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(statement)):
                continue
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                return False
            target, value = statement.targets[0], statement.value
            if not (isinstance(target, ast.Name) and target.id == param) or not fresh_expr(value, self.scope):
                return False
            return not any(
                (isinstance(n, ast.Attribute) and _mutating(n.attr))
                or (isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] in FIRST_ARG_WRITERS | {"next"})
                for n in ast.walk(value)
            )
        return False

    def _import(self, node: ast.Import | ast.ImportFrom, name: str) -> None:
        module = name if isinstance(node, ast.Import) else (node.module or "")
        if node_level(node) or module.split(".")[0] not in COURSE_IMPORTS:
            self.add(node, f"imports {module} (the analysis cannot follow it)")

    def add(self, node: ast.AST, what: str, kind: str = "write") -> None:
        self.writes.append(Write(getattr(node, "lineno", getattr(self.node, "lineno", 1)), what, self.name, kind))

    def run(self) -> list[Write]:
        for node in own_nodes(self._body()):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self._nested(node)
            elif isinstance(node, ast.ClassDef):
                self.add(node, f"defines the class {node.name} inside a function (the analysis cannot follow it)")
            elif isinstance(node, ast.Name):
                self._name(node)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._store(node)
            elif isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if self.scope.kind(node.target.id) == "default":
                    self.add(node, self._changes(node.target, ast.unparse(node)))
        return self.writes

    def _nested(self, node: FunctionNode) -> None:
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                if is_cache_decorator(decorator, self.scope.model.imports):
                    self.add(node, f"caches {node.name} with {ast.unparse(decorator)}", "cache")
        self.writes.extend(FunctionWalk(node, self.scope, self.reach, self.via, None, False).run())

    def _name(self, node: ast.Name) -> None:
        kind = self.scope.kind(node.id)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            if node.id in self.scope.globals:
                self.add(node, f"rebinds the module-level variable {node.id!r}")
            elif node.id in self.scope.nonlocals:
                owner = self.scope.owner(node.id)
                if owner is None or owner.persistent:
                    self.add(node, f"rebinds {node.id!r} of an enclosing function, which outlives the call")
            return
        model = self.scope.model
        if kind == "module":
            self.reach.name(node.id, False, self.via)
            if any(is_stateful(value, model) for value in model.bindings.get(node.id, [])):
                self.add(node, f"uses the module-level {node.id!r}, which every draw or step advances")
        elif kind == "import" and node.id in model.imports and node.id not in self.scope.imports:
            if model.imports[node.id].split(".")[0] not in COURSE_IMPORTS:
                self.add(
                    node, f"uses {node.id}, imported from {model.imports[node.id]} (the analysis cannot follow it)"
                )
        elif kind == "builtin" and node.id in UNFOLLOWABLE - {"getattr", "setattr", "delattr", "hasattr"}:
            self.add(node, f"uses {node.id} (the analysis cannot follow it)")

    def _store(self, node: ast.Subscript | ast.Attribute) -> None:
        obj = node.value
        if self._own_attribute(obj):
            return
        if not fresh_expr(obj, self.scope):
            verb = "deletes" if isinstance(node.ctx, ast.Del) else "writes"
            self.add(node, self._changes(obj, f"{verb} {ast.unparse(node)}"))

    def _own_attribute(self, obj: ast.AST) -> bool:
        """``self`` in an initialising method (``__init__``, ``__post_init__``, ``setup`` and what only they call),
        or an attribute of it that they bind only to fresh objects (``self.data[i] += noise``)."""
        if not self.init_like or self.method_of is None:
            return False
        if isinstance(obj, ast.Name):
            return obj.id == self.self_name
        first = obj
        while isinstance(first, (ast.Attribute, ast.Subscript)) and not (
            isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name)
        ):
            first = first.value
        return (
            isinstance(first, ast.Attribute)
            and isinstance(first.value, ast.Name)
            and first.value.id == self.self_name
            and first.attr in self.reach.fresh_attributes(self.method_of)
        )

    def _attribute(self, node: ast.Attribute) -> None:
        obj = node.value
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in DUNDERS_ALLOWED:
            if not (node.attr == "__setattr__" and dotted(obj) == "object" and self.init_like):
                self.add(node, f"reads {ast.unparse(node)} (the analysis cannot follow it)")
            return
        if self._is_stateful_attribute(node):
            self.add(node, f"uses {ast.unparse(node)}, a generator every draw advances, outside __init__/setup")
        if not _mutating(node.attr) or self._of_an_import(obj):
            return
        parent = getattr(node, "parent_call", None)
        called = isinstance(parent, ast.Call) and parent.func is node
        if fresh_expr(obj, self.scope) and (called or not self.scope.persistent):
            return  # a fresh object's method, called here (a factory run at import may hand it out: log.append)
        if self._own_attribute(obj) or self._own_method(obj, node.attr):
            return  # an initialising method changing its own object, or a method of the class (walked itself)
        if node.attr == "update" and called and isinstance(parent, ast.Call) and len(parent.args) >= 2:
            return  # an optax transformation's update(updates, state, params): pure, not dict.update
        self.add(node, self._changes(obj, f"calls {ast.unparse(node)}"))

    def _own_method(self, obj: ast.AST, attribute: str) -> bool:
        if self.method_of is None or not (isinstance(obj, ast.Name) and obj.id == self.self_name):
            return False
        return any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == attribute for n in self.method_of.body
        )

    def _is_stateful_attribute(self, node: ast.Attribute) -> bool:
        return (
            not self.init_like
            and isinstance(node.value, ast.Name)
            and node.value.id == self.self_name
            and node.attr in self.stateful_attributes
        )

    def _of_an_import(self, obj: ast.AST) -> bool:
        """``obj`` is an imported module or a chain of attributes on one (``np.random``): its functions."""
        root = obj
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and self.scope.kind(root.id) == "import"

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            func.parent_call = node  # type: ignore[attr-defined]  # read by _attribute, visited after this node
        name = func.id if isinstance(func, ast.Name) and self.scope.kind(func.id) == "builtin" else ""
        first = node.args[0] if node.args else None
        if is_cache_decorator(node, self.scope.model.imports):
            self.add(node, f"makes a cache with {ast.unparse(node.func)} (a cache is state)", "cache")
        if name in ("getattr", "setattr", "delattr", "hasattr"):
            self._by_name(node, name)
        elif name == "next" and first is not None and not fresh_expr(first, self.scope):
            self.add(node, self._changes(first, f"advances {ast.unparse(first)} with next()"))
        last = dotted(func).rsplit(".", 1)[-1]
        imported = isinstance(func, ast.Name) and self.scope.kind(func.id) == "import"
        if imported and isinstance(func, ast.Name):
            last = self.scope.model.imports.get(func.id, func.id).rsplit(".", 1)[-1]
        writer = last in FIRST_ARG_WRITERS or (_mutating(last) and last not in MUTATING_METHODS | NOT_IN_PLACE)
        if (isinstance(func, ast.Attribute) or imported) and writer and first is not None:
            if not fresh_expr(first, self.scope):
                self.add(node, self._changes(first, f"writes {ast.unparse(first)} with {ast.unparse(func)}"))
        if last == "methodcaller" and first is not None and not isinstance(first, ast.Constant):
            self.add(node, "calls operator.methodcaller with a computed name (the analysis cannot follow it)")
        elif last == "methodcaller" and isinstance(first, ast.Constant) and _mutating(str(first.value)):
            self.add(node, f"calls a mutating method by name ({ast.unparse(node)})")
        for keyword in node.keywords:
            if keyword.arg == "out" and not fresh_expr(keyword.value, self.scope):
                self.add(node, self._changes(keyword.value, f"writes {ast.unparse(keyword.value)} through out="))
        self._passes_to_a_writer(node)

    def _by_name(self, node: ast.Call, name: str) -> None:
        """``getattr``/``setattr``/``delattr``/``hasattr``: a computed name cannot be followed; a constant one is
        the attribute (``getattr(G, "append")`` is ``G.append``)."""
        if len(node.args) < 2 or not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            if name != "hasattr":
                self.add(node, f"{name} with a computed attribute name (the analysis cannot follow it)")
            return
        obj, attribute = node.args[0], node.args[1].value
        if name in ("setattr", "delattr") and not self._own_attribute(obj) and not fresh_expr(obj, self.scope):
            self.add(
                node, self._changes(obj, f"{'sets' if name == 'setattr' else 'deletes'} {attribute!r} with {name}")
            )
        elif name == "getattr" and (_mutating(attribute) or attribute.startswith("__")):
            if not fresh_expr(obj, self.scope):
                self.add(node, self._changes(obj, f"reads the method {attribute!r} with getattr"))

    def _passes_to_a_writer(self, node: ast.Call) -> None:
        """A module-level variable passed to a module function that changes that argument in place
        (``acc += ...`` on a list or array parameter)."""
        if not isinstance(node.func, ast.Name) or self.scope.kind(node.func.id) != "module":
            return
        line = self.reach.mutates_a_parameter(node.func.id)
        if line is None:
            return
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            root = base_name(arg)
            if root is not None and self.scope.kind(root.id) in ("module", "closure", "default", "local"):
                self.add(
                    node,
                    self._changes(
                        arg,
                        f"passes {ast.unparse(arg)} to {node.func.id}, which changes an argument in place (line {line})",
                    ),
                )

    def _changes(self, obj: ast.AST, how: str) -> str:
        """What a write to ``obj`` changes, in words (``how``: the line's code, shortened)."""
        how = how if len(how) <= 80 else how[:77] + "..."
        root = base_name(obj)
        if root is None:
            return f"changes an object it did not create in the call ({how})"
        kind = self.scope.kind(root.id)
        if kind == "builtin" and not hasattr(builtins, root.id):
            # bound outside this source (a notebook's other cells, put in by globals().update; a star import): a
            # global of the module all the same
            kind = "module"
        if self.method_of is not None and root.id == self.self_name:
            return f"changes its object {root.id} outside __init__/setup, and the object outlives the call ({how})"
        words = {
            "module": f"changes the contents of the module-level variable {root.id!r}",
            "param": f"changes its argument {root.id!r} in place",
            "default": f"changes {root.id!r}, a default argument made once and kept between calls",
            "closure": f"changes {root.id!r} of an enclosing function, which outlives the call",
        }
        return f"{words.get(kind, 'changes an object it did not create in the call')} ({how})"


def node_level(node: ast.Import | ast.ImportFrom) -> int:
    return getattr(node, "level", 0) or 0
