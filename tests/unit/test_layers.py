"""The package's import graph: no circle between modules, no arrow from a lower layer up to a higher one.

Every ``import`` of every module of ``autograder/`` counts, at module level or inside a function
(an import deferred to a call is still a dependency), read with ``ast`` (nothing is imported).
A module's layer is that of its subpackage (``autograder.grading.<anything>`` is ``grading``,
whatever rooms the grading wing is grouped in) or, for a module at the top of the package,
its own name.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from support import ROOT

# Lowest first. A module may import from its own layer and from the layers below it, never above.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the process plumbing (JAX devices, lowering, caches, preload list, RNGs): knows no course
    ("runtime",),
    # the domain model: course, status, outcomes, attribution, submission, oracle seam, progress and hints;
    # ``autograder/__init__.py`` re-exports two of its names
    ("core", "__init__"),
    # what check files import; the recorded oracle (plain data replayed in a release)
    ("checks", "recording"),
    # the pytest plugin (and its pytest11 entry point)
    ("pytest_plugin", "plugin"),
    # the student's commands, which run pytest with the plugin
    ("student",),
    # the instructor's wing, in layers of its own: what every shipped environment needs (the kit's wheel, the pinned
    # stack, the course cut to some modules, the references and the instructor seed); grading (every room of it)
    # and course authoring; the platforms' bundles and runners, and nbgrader; the student release, which writes
    # the GitHub Actions workflow a platform module keeps
    ("shipped",),
    ("grading", "authoring"),
    ("platforms", "notebooks", "notebook"),
    ("release",),
    # the command line
    ("cli", "__main__"),
)

# Inside the grading wing, its rooms (one per process that runs the code) in layers of their own, lowest first:
# the messages every room shares, the grader's isolation of students' processes, the pool of those processes,
# the rooms that run in (or read from) them, and the orchestration of a class on top.
GRADING_LAYERS: tuple[tuple[str, ...], ...] = (
    ("wire", "events", "transcript", "options"),
    ("isolation",),
    ("pool",),
    ("untrusted", "trusted", "outputs", "desk", "preflight"),
    ("verdicts", "unrun", "runs", "pipeline", "executor", "grader", "cluster", "api", "command", "__init__"),
)

PACKAGE = ROOT / "autograder"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    return {t for t in targets if t in known and t != name}


@functools.cache  # read once per run: three tests walk the same graph (none changes it)
def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def layer_key(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(module: str) -> int:
    key = layer_key(module)
    for level, names in enumerate(LAYERS):
        if key in names:
            return level
    raise AssertionError(f"{module}: {key!r} is in no layer of LAYERS (tests/unit/test_layers.py): declare it")


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def arrows_up(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} ({layer_key(source)}) imports {target} ({layer_key(target)})"
        for source, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(source)
    )


def test_every_module_is_in_a_declared_layer():
    for name in modules():
        layer_of(name)


def test_no_import_runs_up_the_layers():
    assert arrows_up(graph()) == []


def test_no_import_circle():
    assert [sorted(c) for c in circles(graph())] == []


def grading_room_of(module: str) -> int:
    """The layer of a module of ``autograder.grading`` in GRADING_LAYERS (by its room, or its own name at the top)."""
    parts = module.split(".")
    key = parts[2] if len(parts) > 2 else "__init__"
    for level, names in enumerate(GRADING_LAYERS):
        if key in names:
            return level
    raise AssertionError(f"{module}: {key!r} is in no layer of GRADING_LAYERS (tests/unit/test_layers.py): declare it")


def test_no_import_runs_up_the_grading_wings_rooms():
    edges = graph()
    wing = [m for m in edges if m.startswith("autograder.grading")]
    up = sorted(
        f"{source} imports {target}"
        for source in wing
        for target in edges[source]
        if target.startswith("autograder.grading") and grading_room_of(target) > grading_room_of(source)
    )
    assert up == []


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / "autograder" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "autograder"


def test_the_reading_finds_a_circle_through_a_function_level_import(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/a.py": "from autograder.core import b\n",
            "core/b.py": "def f():\n    from autograder.core.a import thing\n",
            "core/c.py": "from . import a\n",
        },
    )
    assert circles(graph(package)) == [frozenset({"autograder.core.a", "autograder.core.b"})]


def test_the_reading_finds_an_arrow_up_by_relative_and_absolute_imports(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/a.py": "def f():\n    import autograder.grading.deep.room.x\n",
            "checks/__init__.py": "",
            "checks/b.py": "from ..pytest_plugin import hooks\n",
            "pytest_plugin/__init__.py": "",
            "pytest_plugin/hooks.py": "from autograder.checks import b\n",
            "grading/__init__.py": "",
            "grading/deep/__init__.py": "",
            "grading/deep/room/__init__.py": "",
            "grading/deep/room/x.py": "import autograder.cli\n",
            "cli.py": "",
        },
    )
    assert arrows_up(graph(package)) == [
        "autograder.checks.b (checks) imports autograder.pytest_plugin.hooks (pytest_plugin)",
        "autograder.core.a (core) imports autograder.grading.deep.room.x (grading)",
        "autograder.grading.deep.room.x (grading) imports autograder.cli (cli)",
    ]
