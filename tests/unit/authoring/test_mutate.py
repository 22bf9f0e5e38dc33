"""``autograder mutate``: the mutation operators, in process (the runner on a tiny course, which runs pytest on
each mutant, is in ``tests/system/test_mutate_runs.py``; the real run is ``benchmarks/mutation.py``)."""

import ast

from autograder.authoring.mutants import mutants_of

SOURCE = '''
"""A module docstring: 1 + 2 < 3."""
import jax.numpy as jnp


def given(x):
    return x + 1


def graded(x, axis=None, scale=2.0):
    """Docstring with 1 + 1."""
    if axis is None:
        axis = -1
    y = jnp.sum(x * scale, axis=axis, keepdims=True)
    return jnp.where(y > 0, y, -y) if not False and True else y // 2
'''


def ids(mutants):
    return {(m.operator, m.before, m.after) for m in mutants}


def test_every_operator_changes_the_graded_function_only():
    mutants = mutants_of(SOURCE, "mod", ["graded"])
    found = ids(mutants)
    expected = {
        ("none-test", "axis is None", "not axis"),
        ("compare", "axis is None", "axis is not None"),
        ("constant", "-1", "0"),  # an axis moves
        ("negate", "-1", "1"),
        ("arith", "x * scale", "x / scale"),
        ("drop-keyword", "jnp.sum(x * scale, axis=axis, keepdims=True)", "jnp.sum(x * scale, keepdims=True)"),
        ("drop-keyword", "jnp.sum(x * scale, axis=axis, keepdims=True)", "jnp.sum(x * scale, axis=axis)"),
        ("constant", "True", "False"),
        ("compare", "y > 0", "y >= 0"),
        ("drop-argument", "jnp.where(y > 0, y, -y)", "jnp.where(y > 0, y)"),
        ("negate", "not False", "False"),
        ("boolop", "not False and True", "not False or True"),
        ("arith", "y // 2", "y / 2"),
        ("constant", "2", "3"),
        ("constant", "2.0", "4.0"),  # a default
    }
    assert expected <= found, expected - found
    assert all(m.function == "graded" for m in mutants)
    assert not any("1 + 1" in m.before or "x + 1" in m.before for m in mutants)  # docstrings, given code
    for mutant in mutants:
        tree = ast.parse(mutant.source)  # every mutant is valid Python, one change away
        assert ast.unparse(tree) != ast.unparse(ast.parse(SOURCE))
        assert "Docstring with 1 + 1" in mutant.source and "return x + 1" in mutant.source
    assert len({m.id for m in mutants}) == len(mutants)  # ids are unique
    assert all(m.id.startswith("mod.graded | ") for m in mutants)


def test_an_id_does_not_depend_on_the_line():
    moved = SOURCE.replace("def given(x):", "def given(x):\n    z = 3\n")
    assert {m.id for m in mutants_of(SOURCE, "mod", ["graded"])} == {m.id for m in mutants_of(moved, "mod", ["graded"])}
