"""``autograder mutate``: the mutation operators, in process (the runner on a tiny course, which runs pytest on
each mutant, is in ``tests/system/test_mutate_runs.py``; the real run is ``benchmarks/mutation.py``)."""

import ast
import itertools

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
        ("kit/ReplaceNoneTestWithFalsy", "axis is None", "not axis"),
        ("core/ReplaceComparisonOperator_Is_IsNot", "axis is None", "axis is not None"),
        ("core/AddNot", "axis is None", "not axis is None"),
        ("core/NumberReplacer", "-1", "-0"),  # an axis moves
        ("core/ReplaceUnaryOperator_Delete_USub", "-1", "1"),
        ("core/ReplaceBinaryOperator_Mul_Div", "x * scale", "x / scale"),
        ("kit/DropKeyword", "jnp.sum(x * scale, axis=axis, keepdims=True)", "jnp.sum(x * scale, keepdims=True)"),
        ("kit/DropKeyword", "jnp.sum(x * scale, axis=axis, keepdims=True)", "jnp.sum(x * scale, axis=axis)"),
        (
            "core/ReplaceTrueWithFalse",
            "jnp.sum(x * scale, axis=axis, keepdims=True)",
            "jnp.sum(x * scale, axis=axis, keepdims=False)",
        ),
        ("core/ReplaceComparisonOperator_Gt_GtE", "y > 0", "y >= 0"),
        ("kit/DropArgument", "jnp.where(y > 0, y, -y)", "jnp.where(y > 0, y)"),
        ("core/ReplaceUnaryOperator_Delete_Not", "not False", "False"),
        ("core/ReplaceAndWithOr", "not False and True", "not False or True"),
        ("core/ReplaceBinaryOperator_FloorDiv_Div", "y // 2", "y / 2"),
        ("core/NumberReplacer", "2", "3"),
        ("core/NumberReplacer", "2.0", "3.0"),  # a default
    }
    assert expected <= found, expected - found
    assert all(m.function == "graded" for m in mutants)
    assert not any("1 + 1" in m.before or "x + 1" in m.before for m in mutants)  # docstrings, given code
    original = ast.dump(ast.parse(SOURCE))
    for mutant in mutants:
        tree = ast.parse(mutant.source)  # every mutant is valid Python, one change away, with comments and layout
        assert ast.dump(tree) != original
        assert "Docstring with 1 + 1" in mutant.source and "return x + 1" in mutant.source
        assert mutant.source.startswith('\n"""A module docstring')
    assert len({ast.dump(ast.parse(m.source)) for m in mutants}) == len(mutants)  # no program twice
    assert len({m.id for m in mutants}) == len(mutants)  # ids are unique
    assert all(m.id.startswith("mod.graded | ") for m in mutants)


def test_the_mutants_are_cosmic_rays_own_and_the_kits_operators_only_what_it_lacks():
    """Every mutant is made by an operator of cosmic-ray's core provider, exactly as cosmic-ray writes it
    (``mutate_code``), or by one of the kit's four operators for what the library has no operator for."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    from autograder.authoring.mutants import KIT_OPERATORS, library_operators, operators

    core = [name for name in cosmic_ray.plugins.operator_names() if name.startswith("core/")]
    assert set(library_operators()) == {n for n in core if not cosmic_ray.plugins.get_operator(n).arguments()}
    assert len(library_operators()) == 211  # VariableReplacer and VariableInserter need a variable named
    assert set(operators()) == set(library_operators()) | set(KIT_OPERATORS)
    assert all(name.startswith("kit/") for name in KIT_OPERATORS)
    mutants = mutants_of(SOURCE, "mod", ["graded"])
    assert sum(m.operator.startswith("core/") for m in mutants) > 3 * sum(
        m.operator.startswith("kit/") for m in mutants
    )
    written: dict[str, set[str]] = {}  # operator -> every module cosmic-ray writes with it
    for mutant in mutants:
        assert mutant.operator in operators(), mutant.id
        if mutant.operator.startswith("kit/"):
            continue
        if mutant.operator not in written:
            operator = cosmic_ray.plugins.get_operator(mutant.operator)()
            texts = (mutate_code(SOURCE, operator, occurrence) for occurrence in range(100))
            written[mutant.operator] = set(itertools.takewhile(lambda text: text is not None, texts))
        assert mutant.source in written[mutant.operator], mutant.id
    # the kit's own operators change what the library's cannot: a keyword or argument dropped, @ for *
    lacking = mutants_of("def f(x, W):\n    return jnp.sum(x @ W, 0, axis=1)\n", "mod", ["f"])
    assert {m.operator for m in lacking if "@" in m.before and "*" in m.after} == {"kit/ReplaceMatMultWithMul"}
    assert {"kit/DropKeyword", "kit/DropArgument"} <= {m.operator for m in lacking}


def test_an_id_does_not_depend_on_the_line():
    moved = SOURCE.replace("def given(x):", "def given(x):\n    z = 3\n")
    assert {m.id for m in mutants_of(SOURCE, "mod", ["graded"])} == {m.id for m in mutants_of(moved, "mod", ["graded"])}


def test_the_kits_own_operators_run_in_cosmic_rays_machinery():
    """The kit's four are cosmic-ray ``Operator``s: the library's ``mutate_code`` applies them as it applies its
    own, and each does what its examples say."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.operators.operator import Operator

    from autograder.authoring.mutants import KIT_OPERATORS

    for name, operator in KIT_OPERATORS.items():
        assert issubclass(operator, Operator), name
        for example in operator.examples():
            assert mutate_code(example.pre_mutation_code, operator(), example.occurrence) == (
                example.post_mutation_code
            ), (name, example)
