"""Every process-wide mutable store of the package is registered in ``autograder.runtime.stores``.

A store, read from the source with ``ast`` (nothing imported): a module-level or class-level name bound
to a dict, list or set (a literal, a comprehension, ``dict()``, ``defaultdict()``, ...) that code anywhere
in the package writes into (``NAME[k] = v``, ``NAME.append(...)``, ``del NAME[k]``, ...), an instance of
one of the package's own classes kept at module level (a cache object), or a function under
``functools.cache`` / ``lru_cache``. It is registered when its definition is ``stores.register(...)``
or a module-level ``stores.register(name, NAME, ...)`` names it. A container nothing writes into is a
constant, not a store.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

PACKAGE = ROOT / "autograder"
REGISTRY = PACKAGE / "runtime" / "stores.py"  # the registry itself

CONTAINER_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter", "bytearray"}
MUTATORS = {
    "append",
    "extend",
    "insert",
    "add",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "remove",
    "discard",
    "clear",
    "appendleft",
    "popleft",
    "sort",
    "reverse",
    "__setitem__",
    "__delitem__",
}
CACHES = {"cache", "lru_cache"}


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def written_names(trees: list[ast.Module]) -> set[str]:
    """The last name of every expression written into anywhere (``X.NAME[k] = v`` -> ``NAME``)."""
    found = set()
    for tree in trees:
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    found.add(_last_name(target.value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                found.add(_last_name(node.func.value))
    return found - {None}


def _is_register(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Call) and _last_name(node.func) == "register"


def _keeps_state(cls: ast.ClassDef) -> bool:
    """Whether the class's methods write into something ``self`` holds (``self._loaded[k] = v``)."""
    return any(
        isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete))
        and any(
            isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Attribute)
            and isinstance(t.value.value, ast.Name)
            and t.value.value.id == "self"
            for t in (node.targets if not isinstance(node, ast.AugAssign) else [node.target])
        )
        or isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
        and isinstance(node.func.value, ast.Attribute)
        and isinstance(node.func.value.value, ast.Name)
        and node.func.value.value.id == "self"
        for node in ast.walk(cls)
    )


def _container(value: ast.AST | None, classes: set[str]) -> str | None:
    """``"container"``, ``"object"`` (an instance of the module's own class) or None."""
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return "container"
    if isinstance(value, ast.Call):
        name = _last_name(value.func)
        if name in CONTAINER_CALLS:
            return "container"
        if name in classes:
            return "object"
    return None


def stores_of(path: Path, tree: ast.Module, written: set[str]) -> list[tuple[str, bool]]:
    """``(name, registered)`` for every store defined in the module."""
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and _keeps_state(node)}
    registered_later = {
        node.value.args[1].id
        for node in tree.body
        if isinstance(node, ast.Expr)
        and _is_register(node.value)
        and len(node.value.args) > 1
        and isinstance(node.value.args[1], ast.Name)
    }
    found = []

    def scan(body: list[ast.stmt], owner: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                scan(node.body, f"{owner}{node.name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if not names or names == ["__all__"]:
                    continue
                if _is_register(node.value):
                    found.extend((owner + name, True) for name in names)
                    continue
                kind = _container(node.value, classes)
                if kind == "object" and owner:
                    continue  # a class attribute that is an instance: a default, not a store
                if kind == "object" or (kind == "container" and any(name in written for name in names)):
                    found.extend((owner + name, any(n in registered_later for n in names)) for name in names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = {_last_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
                if decorators & CACHES:
                    found.append((owner + node.name, node.name in registered_later))

    scan(tree.body, "")
    return found


def package_stores(package: Path = PACKAGE) -> dict[str, bool]:
    paths = [p for p in sorted(package.rglob("*.py")) if p != package / "runtime" / "stores.py"]
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in paths}
    written = written_names(list(trees.values()))
    return {
        f"{path.relative_to(package.parent)}:{name}": registered
        for path, tree in trees.items()
        for name, registered in stores_of(path, tree, written)
    }


def test_every_store_of_the_package_is_registered():
    found = package_stores()
    assert len(found) >= 14, sorted(found)  # the issue counted 14 across 8 files
    assert [name for name, registered in found.items() if not registered] == []


def test_the_reading_finds_unregistered_stores_and_leaves_constants(tmp_path):
    (tmp_path / "autograder" / "runtime").mkdir(parents=True)
    (tmp_path / "autograder" / "m.py").write_text(
        "import functools\n"
        "from autograder.runtime import stores\n"
        "CONSTANT = {'a': 1}\n"
        "_seen = set()\n"
        "_kept = stores.register('m.kept', {})\n"
        "class Cache:\n"
        "    _by_key: dict = {}\n"
        "    def put(self, k):\n"
        "        Cache._by_key[k] = 1\n"
        "        self._mine[k] = 1\n"
        "class Sentinel:\n"
        "    pass\n"
        "CACHE = Cache()\n"
        "SENTINEL = Sentinel()\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def made():\n"
        "    _seen.add(1)\n"
        "@functools.cache\n"
        "def known():\n"
        "    _kept['x'] = 1\n"
        "stores.register('m.known', known, clear=known.cache_clear)\n",
        encoding="utf-8",
    )
    assert package_stores(tmp_path / "autograder") == {
        "autograder/m.py:_seen": False,
        "autograder/m.py:_kept": True,
        "autograder/m.py:Cache._by_key": False,
        "autograder/m.py:CACHE": False,
        "autograder/m.py:made": False,
        "autograder/m.py:known": True,
    }


def test_registered_stores_are_listed_and_cleared():
    from autograder.core import oracle
    from autograder.recording import recorded
    from autograder.runtime import devices, stores

    listed = stores.registered()
    assert listed["recording.recorded.misses"] is recorded.misses()
    assert listed["core.oracle.references"] is oracle.REFERENCES
    saved_misses, saved_state = list(recorded.misses()), dict(devices._state)
    try:
        recorded.misses().append("an input")
        devices._state["warned"] = {"--flag"}
        assert "recording.recorded.misses" in stores.clear_all()
        assert recorded.misses() == []
        assert devices._state == {"warned": set(), "set_aside": None, "notes": []}  # as a fresh process has it
    finally:
        recorded.misses()[:] = saved_misses
        devices._state.clear()
        devices._state.update(saved_state)


def test_misses_hold_one_check_at_most():
    """The plugin clears the unjudged inputs before each check: the list does not grow for the life of a process."""
    source = (PACKAGE / "pytest_plugin" / "hooks.py").read_text(encoding="utf-8")
    call = source.index("def pytest_runtest_call")
    assert source.index("recorded.clear_misses()", call) < source.index("before = len(recorded.misses())", call)


@pytest.mark.parametrize("name", ["checks.structure.jit_once", "checks.values.array_types", "runtime.devices.state"])
def test_stores_register_under_their_module_name(name):
    import importlib

    from autograder.runtime import stores

    importlib.import_module("autograder." + name.rsplit(".", 1)[0])
    assert name in stores.registered()
