"""Nothing shipped to students holds the answer of a contracted function, of its own module or another one
(issue 37): no function body of any Python file of a release (stubs, check files, the kit) and no hint of
``course.toml`` is a reference's contracted function written again.

The release is written as ``autograder release`` writes it (``builder.write_tree``, every module; the oracle
is not recorded, it is arrays). Bodies are compared as normalised ASTs: docstrings dropped and the names a
function binds (arguments, locals, inner functions) renamed in order of first use, so renaming ``d`` to
``diff`` hides nothing. ``parallel``'s given ``mse`` was ``pytrees.mse``'s reference body, word for word; it
is its own loss now, and no exception is left.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from support import ROOT, SOLUTIONS

pytestmark = pytest.mark.timeout(600)


def _bound_names(fn: ast.AST) -> list[str]:
    """The names ``fn`` binds, in order of first appearance: arguments, assigned names, inner definitions."""
    names: list[str] = []
    for node in ast.walk(fn):
        found = []
        if isinstance(node, ast.arg):
            found = [node.arg]
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn:
            found = [node.name]
        names += [n for n in found if n not in names]
    return names


def normalised_body(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> str:
    """``fn``'s body as an AST dump, without docstrings, with its own names renamed ``_0, _1, ...``."""
    renames = {name: f"_{i}" for i, name in enumerate(_bound_names(fn))}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(ast.Name(id=renames.get(node.id, node.id), ctx=node.ctx), node)

        def visit_arg(self, node):
            return ast.copy_location(ast.arg(arg=renames.get(node.arg, node.arg)), node)

        def visit_FunctionDef(self, node):
            self.generic_visit(node)
            node.name = renames.get(node.name, node.name)
            node.body = [s for s in node.body if not _is_docstring(s)] or [ast.Pass()]
            return node

    body = fn.body if isinstance(fn, ast.Lambda) else [s for s in fn.body if not _is_docstring(s)]
    module = ast.Module(body=[ast.Return(value=body)] if isinstance(fn, ast.Lambda) else body, type_ignores=[])
    module = Rename().visit(ast.parse(ast.unparse(module)))
    return ast.dump(module, annotate_fields=False)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def functions_in(source: str):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


def answers(solutions: Path = SOLUTIONS) -> dict[str, str]:
    """``module.function`` -> the normalised body of its reference, for every contracted function."""
    from autograder.core.course import load_course

    found = {}
    for module in load_course(ROOT).modules:
        contracted = {fn.name for fn in module.functions}
        for node in ast.parse((solutions / f"{module.name}.py").read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in contracted:
                found[f"{module.name}.{node.name}"] = normalised_body(node)
    return found


def given_away(tree: Path, known: dict[str, str]) -> list[str]:
    """Where a Python file under ``tree`` defines a function whose body is a contracted function's answer."""
    by_body = {}
    for name, body in known.items():
        by_body.setdefault(body, []).append(name)
    leaks = []
    for path in sorted(tree.rglob("*.py")):
        for fn in functions_in(path.read_text(encoding="utf-8")):
            for name in by_body.get(normalised_body(fn), []):
                leaks.append(f"{path.relative_to(tree)}:{fn.lineno} holds the answer of {name}")
    return leaks


def code_of_hints(course_toml: str):
    """Every hint and reveal of course.toml, as (module.function, text)."""
    data = tomllib.loads(course_toml)
    for module in data["modules"]:
        for fn in module["functions"]:
            for key in ("hint", "reveal"):
                if fn.get(key):
                    yield f"{module['name']}.{fn['name']}", fn[key]


def statements_of(solutions: Path = SOLUTIONS) -> dict[str, list[str]]:
    """``module.function`` -> the source of each statement of its reference body (the answer, line by line)."""
    from autograder.core.course import load_course

    found = {}
    for module in load_course(ROOT).modules:
        contracted = {fn.name for fn in module.functions}
        source = (solutions / f"{module.name}.py").read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in contracted:
                body = [s for s in node.body if not _is_docstring(s)]
                found[f"{module.name}.{node.name}"] = [ast.unparse(s) for s in body]
    return found


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def hints_giving_away(course_toml: str, statements: dict[str, list[str]]) -> list[str]:
    """Hints of one function that hold every statement of another contracted function's reference (two or more
    statements, or one of 40 characters or more: a short line such as ``return target`` is no answer)."""
    leaks = []
    for where, text in code_of_hints(course_toml):
        flat = squeeze(text)
        for name, lines in statements.items():
            if name == where or not lines or (len(lines) == 1 and len(lines[0]) < 40):
                continue
            if all(squeeze(line) in flat for line in lines):
                leaks.append(f"the hint of {where} holds every line of {name}'s answer")
    return leaks


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    from autograder.core.course import load_course
    from autograder.release.builder import write_tree

    out = tmp_path_factory.mktemp("release") / "course"
    out.mkdir()
    write_tree(load_course(ROOT), out)
    return out


def test_no_python_file_of_the_release_holds_a_contracted_answer(shipped):
    """No exception: parallel's given ``mse`` is its own loss now (curriculum.md, module 11), not pytrees.mse's."""
    assert list((shipped / "exercises").glob("test_*.py")), "the release has no check files"
    leaks = given_away(shipped, answers())
    assert not leaks, "\n".join(leaks)


def test_parallel_gives_its_own_loss_the_mean_squared_error_over_every_entry(shipped):
    """Issue 44, finding 8: the contract's loss, and not the half squared norm per example of pytrees.mse."""
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("released_parallel", shipped / "exercises" / "parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    params = {"W": rng.normal(size=(3, 4)).astype(np.float32), "b": rng.normal(size=(4,)).astype(np.float32)}
    x, y = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 4)).astype(np.float32)  # 4 outputs: not 2x
    pred = np.stack([np.asarray(module.predict(params, xi)) for xi in x])
    assert float(module.mse(params, x, y)) == pytest.approx(float(np.mean((pred - y) ** 2)), rel=1e-5)


def test_no_hint_holds_another_functions_answer(shipped):
    leaks = hints_giving_away((shipped / "course.toml").read_text(encoding="utf-8"), statements_of())
    assert not leaks, "\n".join(leaks)


LEAKY_STUB = '''
import jax
import jax.numpy as jnp


def mse(params, x_batched, y_batched):
    """Given: as in the pytrees module."""

    def error_of_one(xi, yi):
        diff = yi - predict(params, xi)
        return jnp.inner(diff, diff) / 2.0

    return jnp.mean(jax.vmap(error_of_one)(x_batched, y_batched), axis=0)
'''


def test_the_comparison_finds_an_answer_given_away_under_other_names(tmp_path):
    """``parallel``'s given ``mse``, its names changed (the function's own name too), is found as
    ``pytrees.mse``'s answer; another loss is not."""
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "parallel.py").write_text(LEAKY_STUB, encoding="utf-8")
    assert given_away(tmp_path, answers()) == ["exercises/parallel.py:6 holds the answer of pytrees.mse"]
    (tmp_path / "exercises" / "parallel.py").write_text(
        LEAKY_STUB.replace("parallel", "x").replace("mse", "helper_loss"), encoding="utf-8"
    )
    assert given_away(tmp_path, answers()) == ["exercises/parallel.py:6 holds the answer of pytrees.mse"]
    (tmp_path / "exercises" / "parallel.py").write_text(
        "def mse(p, x, y):\n    return ((x - y) ** 2).mean()\n", encoding="utf-8"
    )
    assert given_away(tmp_path, answers()) == []


def test_the_hint_comparison_finds_a_reveal_quoting_another_answer():
    statements = statements_of()
    lines = statements["pytrees.mse"]
    toml = (
        '[[modules]]\nname = "parallel"\n[[modules.functions]]\nname = "pmap_sgd_step"\n'
        f'reveal = """{"; ".join(lines)}"""\n'
    )
    assert hints_giving_away(toml, statements) == [
        "the hint of parallel.pmap_sgd_step holds every line of pytrees.mse's answer"
    ]
