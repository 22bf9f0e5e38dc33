"""The pytrees checks judge right: answers written as students of the tutorial write them are rejected with
a message naming what was detected, attributed to the right function; correct answers written differently pass."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import SOLUTIONS, assert_accepted, assert_rejected, grade, with_function

from autograder.core.oracle import load_reference

MODULE = "pytrees"
IMPORTS = "import functools\nimport math\nimport optax\n"

CORRECT = [
    (
        "mse",
        "batched-formula",
        """
        def mse(params, x_batched, y_batched):
            d = y_batched - predict(params, x_batched)
            return 0.5 * jnp.mean(jnp.sum(d ** 2, axis=-1))
     """,
    ),
    (
        "mse",
        "square-sum-over-axis-1",
        """
        def mse(params, x_batched, y_batched):
            return jnp.mean(jnp.square(y_batched - x_batched @ params["W"] - params["b"]).sum(1)) / 2
     """,
    ),
    (
        "sgd_update",
        "value-and-grad-tree-util",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            _, grads = jax.value_and_grad(mse)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)
     """,
    ),
    (
        "sgd_update",
        "dict-comprehension-jit-by-assignment",
        """
        def _update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return {name: params[name] - learning_rate * grads[name] for name in params}

        sgd_update = jax.jit(_update)
     """,
    ),
    (
        "fit",
        "lax-fori-loop",
        """
        def fit(params, x, y, learning_rate, n_steps):
            return jax.lax.fori_loop(0, n_steps, lambda i, p: sgd_update(p, learning_rate, x, y), params)
     """,
    ),
    (
        "fit",
        "while-loop",
        """
        def fit(params, x, y, learning_rate, n_steps):
            step = 0
            while step < n_steps:
                params = sgd_update(params, learning_rate, x, y)
                step += 1
            return params
     """,
    ),
    (
        "fit",
        "functools-reduce",
        """
        def fit(params, x, y, learning_rate, n_steps):
            return functools.reduce(lambda p, _: sgd_update(p, learning_rate, x, y), range(n_steps), params)
     """,
    ),
    (
        "global_norm",
        "optax-global-norm",
        """
        def global_norm(tree):
            return optax.global_norm(tree)
     """,
    ),
    (
        "global_norm",
        "norm-of-concatenated-leaves",
        """
        def global_norm(tree):
            return jnp.linalg.norm(jnp.concatenate([jnp.ravel(leaf) for leaf in jax.tree.leaves(tree)]))
     """,
    ),
    (
        "global_norm",
        "tree-reduce-of-vdot",
        """
        def global_norm(tree):
            squares = jax.tree.map(lambda leaf: jnp.vdot(leaf, leaf), tree)
            return jnp.sqrt(jax.tree_util.tree_reduce(lambda a, b: a + b, squares))
     """,
    ),
    (
        "param_count",
        "math-prod-of-shapes",
        """
        def param_count(tree):
            return sum(math.prod(np.shape(leaf)) for leaf in jax.tree.leaves(tree))
     """,
    ),
    (
        "param_count",
        "tree-reduce-with-initial-0",
        """
        def param_count(tree):
            return jax.tree_util.tree_reduce(lambda n, leaf: n + int(np.prod(np.shape(leaf))), tree, 0)
     """,
    ),
]


@pytest.mark.parametrize(
    "function, replacement", [(c[0], c[2]) for c in CORRECT], ids=[f"{c[0]}-{c[1]}" for c in CORRECT]
)
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    result = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=function)[function]
    assert_accepted(result)


WRONG = [
    # (function, id, replacement, regex the message must match, -k expression or None for all the function's checks)
    (
        "mse",
        "keepdims-shape-1",
        """
        def mse(params, x_batched, y_batched):
            def squared_error(x, y):
                d = y - predict(params, x)
                return jnp.inner(d, d) / 2.0
            return jnp.mean(jax.vmap(squared_error)(x_batched, y_batched), keepdims=True)
     """,
        r"mse returned an array of shape \(1,\), not a scalar",
        "mse_matches",
    ),
    (
        "mse",
        "per-example-errors",
        """
        def mse(params, x_batched, y_batched):
            def squared_error(x, y):
                d = y - predict(params, x)
                return jnp.inner(d, d) / 2.0
            return jax.vmap(squared_error)(x_batched, y_batched)
     """,
        r"mse returned an array of shape \(\d+,\), not a scalar(.*\n)*.*per-example errors",
        "mse_matches",
    ),
    (
        "mse",
        "sum-instead-of-mean",
        """
        def mse(params, x_batched, y_batched):
            d = y_batched - predict(params, x_batched)
            return 0.5 * jnp.sum(d ** 2)
     """,
        r"result differs from the reference",
        "mse_matches",
    ),
    (
        "mse",
        "no-half",
        """
        def mse(params, x_batched, y_batched):
            d = y_batched - predict(params, x_batched)
            return jnp.mean(jnp.sum(d ** 2, axis=1))
     """,
        r"result differs from the reference",
        "mse_matches",
    ),
    (
        "mse",
        "numpy-loop-over-examples",
        """
        def mse(params, x_batched, y_batched):
            errors = [np.inner(y - predict(params, x), y - predict(params, x)) / 2 for x, y in zip(x_batched, y_batched)]
            return np.mean(errors)
     """,
        r"mse cannot be compiled with jax.jit: it converts a traced array to NumPy",
        None,
    ),
    (
        "sgd_update",
        "not-jitted",
        """
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
     """,
        r"sgd_update is not a jax.jit function",
        "sgd_update_is_jitted",
    ),
    (
        "sgd_update",
        "static-learning-rate",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
     """,
        r"sgd_update traced again at call\(s\) 4, 5, 6, 7(.*\n)*.*learning rate in static_argnums",
        "does_not_retrace",
    ),
    (
        "sgd_update",
        "only-W-updated",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return {"W": params["W"] - learning_rate * grads["W"], "b": params["b"]}
     """,
        r"new_params\['b'\] did not change at all",
        "moves_both",
    ),
    (
        "sgd_update",
        "gradient-ascent",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p + learning_rate * g, params, grads)
     """,
        r"new_params\['(W|b)'\] differs from the reference",
        "sgd_update_matches",
    ),
    (
        "sgd_update",
        "returns-a-tuple",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return params["W"] - learning_rate * grads["W"], params["b"] - learning_rate * grads["b"]
     """,
        r"new_params does not have the structure of the reference's",
        "sgd_update_matches",
    ),
    (
        "sgd_update",
        "in-place-dict-update",
        """
        _step = jax.jit(lambda params, lr, x, y: jax.tree.map(lambda p, g: p - lr * g, params, jax.grad(mse)(params, x, y)))

        def sgd_update(params, learning_rate, x, y):
            params.update(_step(params, learning_rate, x, y))
            return params
     """,
        r"sgd_update modified its argument: params\['W'\] was replaced",
        "leaves_params_unchanged",
    ),
    (
        "sgd_update",
        "logs-tracers-in-a-global",
        """
        LOSSES = []

        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            LOSSES.append(loss)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
     """,
        r"module-level (variable )?'LOSSES'|leaked a tracer",
        "sgd_update_keeps_no_module_state",
    ),
    (
        "sgd_update",
        "learning-rate-jittered-by-np-random",
        """
        _step = jax.jit(lambda params, lr, x, y: jax.tree.map(lambda p, g: p - lr * g, params, jax.grad(mse)(params, x, y)))

        def sgd_update(params, learning_rate, x, y):
            return _step(params, learning_rate * (1 + 1e-3 * np.random.rand()), x, y)
     """,
        r"returned something different the second time|changed when only .* was re-seeded",
        "sgd_update_is_pure",
    ),
    (
        "fit",
        "n-plus-one-steps",
        """
        def fit(params, x, y, learning_rate, n_steps):
            for _ in range(n_steps + 1):
                params = sgd_update(params, learning_rate, x, y)
            return params
     """,
        r"fit\(\.\.\., 0\) returned the params after 1 step\(s\), not 0",
        "fit_equals",
    ),
    (
        "fit",
        "every-step-from-the-start",
        """
        def fit(params, x, y, learning_rate, n_steps):
            new = params
            for _ in range(n_steps):
                new = sgd_update(params, learning_rate, x, y)
            return new
     """,
        r"fit\(\.\.\., 4\) returned the params after 1 step\(s\), not 4",
        "fit_equals",
    ),
    (
        "fit",
        "fixed-learning-rate",
        """
        def fit(params, x, y, learning_rate, n_steps):
            for _ in range(n_steps):
                params = sgd_update(params, 0.3, x, y)
            return params
     """,
        r"params\['\w'\] differs from the reference",
        "fit_equals",
    ),
    (
        "fit",
        "in-place-dict-update",
        """
        def fit(params, x, y, learning_rate, n_steps):
            for _ in range(n_steps):
                params.update(sgd_update(params, learning_rate, x, y))
            return params
     """,
        r"fit modified its argument: params\['W'\] was replaced",
        "fit_is_pure",
    ),
    (
        "global_norm",
        "only-W-and-b",
        """
        def global_norm(tree):
            return jnp.sqrt(jnp.sum(tree["W"] ** 2) + jnp.sum(tree["b"] ** 2))
     """,
        r"global_norm raised \w+: .* on (a list holding a tuple|nested layers|a single array|a tuple of one scalar)",
        "global_norm_matches",
    ),
    (
        "global_norm",
        "sum-of-leaf-norms",
        """
        def global_norm(tree):
            return sum(jnp.linalg.norm(leaf) for leaf in jax.tree.leaves(tree))
     """,
        r"on (a list holding a tuple|nested layers): result differs from the reference",
        "global_norm_matches",
    ),
    (
        "global_norm",
        "no-square-root",
        """
        def global_norm(tree):
            return sum(jnp.sum(leaf ** 2) for leaf in jax.tree.leaves(tree))
     """,
        r"result differs from the reference",
        "global_norm_matches",
    ),
    (
        "global_norm",
        "keepdims-shape-1",
        """
        def global_norm(tree):
            flat = jnp.concatenate([jnp.ravel(leaf) for leaf in jax.tree.leaves(tree)])
            return jnp.sqrt(jnp.sum(flat ** 2, keepdims=True))
     """,
        r"global_norm returned an array of shape \(1,\), not a scalar",
        "global_norm_matches",
    ),
    (
        "global_norm",
        "numpy-inside",
        """
        def global_norm(tree):
            return np.sqrt(sum(np.sum(np.square(leaf)) for leaf in jax.tree.leaves(tree)))
     """,
        r"global_norm cannot be compiled with jax.jit: it converts a traced array to NumPy",
        None,
    ),
    (
        "param_count",
        "jnp-sum",
        """
        def param_count(tree):
            return jnp.sum(jnp.array([jnp.size(leaf) for leaf in jax.tree.leaves(tree)]))
     """,
        r"param_count returned a jax\S* .*not a Python int",
        "returns_a_python_int",
    ),
    (
        "param_count",
        "np-sum",
        """
        def param_count(tree):
            return np.sum([np.size(leaf) for leaf in jax.tree.leaves(tree)])
     """,
        r"param_count returned a numpy.int64 .*not a Python int",
        "returns_a_python_int",
    ),
    (
        "param_count",
        "leaf-size-attribute",
        """
        def param_count(tree):
            return sum(leaf.size for leaf in jax.tree.leaves(tree))
     """,
        r"param_count raised AttributeError: .*'(float|int)' object has no attribute 'size'",
        "counts_a_python_number",
    ),
    (
        "param_count",
        "counts-leaves",
        """
        def param_count(tree):
            return len(jax.tree.leaves(tree))
     """,
        r"count differs from the reference",
        "param_count_matches",
    ),
    (
        "param_count",
        "jnp-prod-of-shapes",
        """
        def param_count(tree):
            return sum(int(jnp.prod(jnp.array(jnp.shape(leaf)))) for leaf in jax.tree.leaves(tree))
     """,
        r"param_count cannot be used as a shape under jit",
        "works_as_a_shape",
    ),
]


@pytest.mark.parametrize(
    "function, replacement, pattern, only",
    [(w[0], w[2], w[3], w[4]) for w in WRONG],
    ids=[f"{w[0]}-{w[1]}" for w in WRONG],
)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, only):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=only or function)
    assert_rejected(results[function], pattern)


def test_a_wrong_sgd_update_fails_only_sgd_update(pytester):
    """fit is judged with the student's own sgd_update: a fit that runs it n_steps times is right."""
    wrong = """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - 0.5 * learning_rate * g, params, grads)
    """
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, wrong), only="sgd_update_matches or fit")
    assert results["sgd_update"].status == "failed"
    assert results["fit"].status == "passed", results["fit"].message


# fit with an sgd_update that is wrong in another way: (id, replacement, fit's status, regex of fit's message)
FIT_WITH_ANOTHER_SGD_UPDATE = [
    (
        "inline-steps-and-a-wrong-sgd-update",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            return jax.tree.map(lambda p, g: p + learning_rate * g, params, jax.grad(mse)(params, x, y))

        def fit(params, x, y, learning_rate, n_steps):
            step = jax.jit(lambda p: jax.tree.map(lambda a, g: a - learning_rate * g, p, jax.grad(mse)(p, x, y)))
            for _ in range(n_steps):
                params = step(params)
            return params
     """,
        "passed",
        None,
    ),
    (
        "sgd-update-moves-nothing",
        """
        @jax.jit
        def sgd_update(params, learning_rate, x, y):
            grads = jax.grad(lambda p: mse(jax.lax.stop_gradient(p), x, y))(params)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
     """,
        "failed",
        r"your sgd_update leaves the params unchanged(.*\n)*.*fix sgd_update first",
    ),
    (
        "both-do-nothing",
        """
        def sgd_update(params, learning_rate, x, y):
            return params

        def fit(params, x, y, learning_rate, n_steps):
            return params
     """,
        "failed",
        r"leaves the params unchanged|returned the params after 0 step",
    ),
    (
        "sgd-update-not-started",
        """
        def sgd_update(params, learning_rate, x, y):
            raise NotImplementedError
     """,
        "failed",
        r"fit raised NotImplementedError.*and so does your sgd_update",
    ),
]


@pytest.mark.parametrize(
    "replacement, status, pattern",
    [c[1:] for c in FIT_WITH_ANOTHER_SGD_UPDATE],
    ids=[c[0] for c in FIT_WITH_ANOTHER_SGD_UPDATE],
)
def test_fit_is_judged_with_the_students_own_sgd_update(pytester, replacement, status, pattern):
    """Right when it gives the reference's values or runs a step that moves the params n_steps times; a
    step that moves nothing, or raises, is named in fit's message (fit cannot be told apart from doing nothing)."""
    result = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only="fit")["fit"]
    if status == "passed":
        assert_accepted(result)
    else:
        assert_rejected(result, pattern)


@pytest.fixture(scope="module")
def given_functions():
    """The reference file itself, by its path: an ``import pytrees`` would find whatever module of that name
    an earlier in-process run left in ``sys.modules`` (a gallery variant)."""
    return load_reference(SOLUTIONS, "pytrees")


def test_the_given_data_matches_the_numbers_of_the_contract(given_functions):
    """make_regression_data gives the same data for both key kinds; true params score 0.0259, 101 steps 0.0128."""
    ref = given_functions
    x, y, true_params = ref.make_regression_data(jax.random.key(0))
    x2, y2, _ = ref.make_regression_data(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    assert ref.tree_shapes(true_params) == {"W": (10, 5), "b": (5,)}
    assert abs(float(ref.mse(true_params, x, y)) - 0.0259) < 5e-4
    fitted = ref.fit(jax.tree.map(jnp.zeros_like, true_params), x, y, 0.3, 101)
    assert abs(float(ref.mse(fitted, x, y)) - 0.0128) < 5e-4


def test_the_stub_file_gives_the_same_given_functions(given_functions):
    """predict, make_regression_data and tree_shapes are written out identically in exercises/ and solutions/."""
    import ast

    from support import EXERCISES

    def given(path):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        return {
            node.name: ast.dump(ast.Module([n for n in node.body if not isinstance(n, ast.Expr)], []))
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in ("predict", "make_regression_data", "tree_shapes")
        }

    assert given(EXERCISES / "pytrees.py") == given(SOLUTIONS / "pytrees.py")
