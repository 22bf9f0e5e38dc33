"""What the test cells of a generated nbgrader notebook call.

A test cell of ``source/<module>/<module>.ipynb`` reads::

    from autograder.notebooks.runtime import check
    check("at_updates", "set_diagonal", globals())

:func:`check` runs the very checks ``pytest exercises/test_<module>.py`` runs
(the same test file, the same plugin, the same oracle) on the function the
notebook defines, prints what a student should read (the failed checks'
messages and the hint) and returns the points as a plain ``float`` in
``[0, points]``. Being the cell's last expression, that number is what
nbgrader's autograder reads as the cell's partial credit
(``nbgrader.utils.determine_grade``: an ``execute_result`` that converts to a
float; an error or *anything written to stderr* gives 0). So nothing the
checks do may reach the cell's stderr: pytest runs in-process with its output
captured, and only :func:`check`'s own summary is printed, on stdout.

How the notebook's function becomes a submission: the notebook namespace
(imports, helpers, constants) is copied into a fresh module written to a
temporary folder as ``<module>.py``, and the checked function is defined in
it again from its source (``inspect.getsource``), so stub detection, the
module-state purity check and line numbers work as for a file. A function
whose source cannot be recovered (e.g. a class, or a name bound to a lambda)
is used as the object the notebook holds. That folder is handed to the
plugin through its ordinary ``--submission DIR`` seam.

Hidden checks (``hidden = [...]`` of a function in ``course.toml``) run only
when the cell names them in ``hidden=``; the generated cell names them inside
``### BEGIN HIDDEN TESTS`` so that released notebooks run only the visible
checks and nbgrader's ``autograde``, which restores the instructor's cell,
runs all of them.

The kit (``course.toml``, ``exercises/test_<module>.py``, ``solutions/``) is
found, in this order, from the ``root=`` argument, the ``JAX_COURSE_ROOT``
environment variable (the generated ``nbgrader_config.py`` sets it), the
folders at and above the working directory, and the folder holding the
``autograder`` package.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import json
import os
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

from autograder.core import syntax
from autograder.core.attribution import AttributionError, attribute
from autograder.core.course import Course, Function, find_root, load_course
from autograder.core.outcomes import FunctionScore, points_text
from autograder.core.status import Status
from autograder.runtime import stores
from autograder.runtime.devices import use_course_backend  # noqa: F401  (the setup cell calls it)
from autograder.runtime.imports import own_imports

ROOT_ENV = "JAX_COURSE_ROOT"

# IPython's own names in a notebook namespace: never part of a submission.
_IPYTHON_NAMES = re.compile(r"^(_+|_i+|_i\d+|_\d+|_ih|_oh|_dh|__\w+__|In|Out|get_ipython|exit|quit)$")

_namespaces: dict[str, dict] = stores.register("notebooks.runtime.namespaces", {})
_tokens = itertools.count()


def summary(result: FunctionScore) -> str:
    """What a check cell prints for one function."""
    head = f"{result.qualname}: {points_text(result.points, None)}/{points_text(result.max_points, None)} points"
    if result.status == Status.PASSED:
        return f"{head} — all {result.total} checks pass"
    if result.status == Status.NOT_STARTED:
        return f"{head} — not started yet: replace `raise NotImplementedError()` with your code"
    lines = [f"{head} — {result.passed}/{result.total} checks pass" if result.total else head]
    seen = set()
    for message in result.messages:
        if message not in seen:
            seen.add(message)
            lines.append("")
            lines.append(message)
    return "\n".join(lines)


def _error(fn: Function, message: str) -> FunctionScore:
    return FunctionScore(fn.module, fn.name, 0.0, fn.points, Status.ERROR, 0, 0, [message])


def course_root(root: Path | str | None = None) -> Path:
    """The kit folder (the one holding ``course.toml``) the checks come from."""
    candidates = [root, os.environ.get(ROOT_ENV)]
    for candidate in candidates:
        if candidate:
            found = find_root(Path(candidate))
            if found is not None:
                return found
    found = find_root(Path.cwd()) or find_root(Path(__file__).resolve().parents[2])
    if found is None:
        raise RuntimeError(f"the course kit (a folder with course.toml) was not found: set {ROOT_ENV} to its path")
    return found


def namespace(token: str) -> dict:
    """The notebook namespace registered under ``token`` (read by a generated submission module)."""
    return _namespaces[token]


def notebook_names(ns: dict) -> dict:
    """The part of a notebook namespace that a submission module should see."""
    return {name: value for name, value in ns.items() if not _IPYTHON_NAMES.match(name)}


def function_source(obj, name: str) -> str | None:
    """The source defining ``name`` as ``obj`` was defined, or None when it cannot be recovered."""
    if not (inspect.isfunction(obj) or inspect.isfunction(inspect.unwrap(obj) if callable(obj) else None)):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        return None
    import ast

    try:
        tree = syntax.parse(source)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != name:
        return None
    return source


def write_submission(folder: Path, module: str, function: str, ns: dict) -> Path:
    """Write ``<module>.py`` into ``folder``: the notebook namespace, then ``function`` from its source."""
    token = f"nb{next(_tokens)}"
    _namespaces[token] = notebook_names(ns)
    lines = [
        f'"""{module} as the notebook defines it (written by autograder.notebooks.runtime)."""',
        "import autograder.notebooks.runtime as _autograder_notebook",
        f"globals().update(_autograder_notebook.namespace({token!r}))",
        "",
    ]
    source = function_source(ns.get(function), function) if function in ns else None
    if source is not None:
        lines += ["", source.rstrip(), ""]
    path = Path(folder) / f"{module}.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class _Select:
    """A pytest plugin keeping only the checks of one function, minus the hidden ones not asked for."""

    def __init__(self, course: Course, fn: Function, skip: set[str]):
        self.course, self.fn, self.skip = course, fn, skip

    def pytest_collection_modifyitems(self, session, config, items):
        keep: list = []
        drop: list = []
        for item in items:
            name = getattr(item, "originalname", item.name)
            try:
                owner = attribute(name, self.fn.module, self.course)
            except AttributionError:
                owner = None  # the plugin reports it
            (keep if owner == self.fn and name not in self.skip else drop).append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)


def _plugin_args() -> list[str]:
    """``-p autograder.pytest_plugin.hooks`` unless the installed package already registers it as an entry point."""
    from importlib.metadata import entry_points

    if any(ep.value == "autograder.plugin" for ep in entry_points(group="pytest11")):
        return []
    return ["-p", "autograder.plugin"]


def grading() -> bool:
    """Deterministic grading profile inside nbgrader (autograde, validate) and on CI."""
    return bool(os.environ.get("NBGRADER_EXECUTION") or os.environ.get("CI"))


def _pytest_args(checks: Path, folder: Path, out: Path, root: Path) -> list[str]:
    """pytest's arguments for one function's checks on the submission in ``folder``, results into ``out``."""
    args = [
        str(checks),
        "--submission",
        str(folder),
        "--results-json",
        str(out),
        "--rootdir",
        str(root),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        *_plugin_args(),
    ]
    if grading():
        args.append("--grading")
    return args


def run_checks(
    module: str,
    function: str,
    ns: dict,
    *,
    hidden: list[str] | tuple[str, ...] = (),
    root: Path | str | None = None,
) -> FunctionScore:
    """Run ``exercises/test_<module>.py``'s checks of ``function`` on the notebook's definition.

    Checks ``course.toml`` marks hidden run only when listed in ``hidden``.
    Nothing is printed; everything pytest writes is captured.
    """
    import pytest

    root = course_root(root)
    course = load_course(root)
    fn = course.module(module).function(function)
    unknown = sorted(set(hidden) - set(fn.hidden))
    if unknown:
        raise ValueError(f"{fn.qualname}: {unknown} are not hidden checks of it in course.toml")
    skip = set(fn.hidden) - set(hidden)

    folder = Path(tempfile.mkdtemp(prefix=f"notebook-{module}-"))
    try:
        write_submission(folder, module, function, ns)
        out = folder / "results.json"
        args = _pytest_args(course.checks_path(module), folder, out, root)
        log = io.StringIO()
        with (
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
            own_imports(course.checks_path(module).parent, folder),
        ):
            code = pytest.main(args, plugins=[_Select(course, fn, skip)])
        if not out.is_file():
            return _error(
                fn,
                f"the checks of {fn.qualname} could not run (pytest exit code {int(code)}):\n{log.getvalue()[-3000:]}",
            )
        data = json.loads(out.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for entry in data["functions"]:
        if entry["function"] == function and entry["module"] == module:
            return FunctionScore.from_json(entry)
    return _error(fn, f"no check of {fn.qualname} ran")


def check(
    module: str,
    function: str,
    ns: dict,
    *,
    hidden: list[str] | tuple[str, ...] = (),
    root: Path | str | None = None,
) -> float:
    """Run the checks of ``function``, print the verdict, return the points (a plain float).

    The value is meant to be a test cell's last expression: nbgrader reads it
    as the cell's partial credit.
    """
    result = run_checks(module, function, ns, hidden=hidden, root=root)
    print(summary(result))
    return float(result.points)
