"""The autodiff checks judge right: answers that call f too often, build a Jacobian or Hessian, loop in
Python or return the wrong thing fail with the right message; other correct answers (other AD orders,
linearize, jit decorators) pass."""

import pytest
from support import assert_accepted, assert_rejected, grade, with_function

MODULE = "autodiff"
PRELUDE = "import functools\n\nimport numpy as np\n"


CORRECT_VARIANTS = [
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            value, grad = jax.value_and_grad(f, argnums=0)(x)
            return (value, grad)
    """,
        id="value_and_grad-argnums",
    ),
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            value, pullback = jax.vjp(f, x)
            return value, pullback(jnp.ones_like(value))[0]
    """,
        id="vjp-with-cotangent-one",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            return jax.jvp(f, (x,), (v,))[1]
    """,
        id="jvp-index-1",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            _, f_jvp = jax.linearize(f, x)
            return f_jvp(v)
    """,
        id="linearize",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            _, pullback = jax.vjp(f, x)
            return jax.vmap(pullback)(cotangents)[0]
    """,
        id="vmap-pullback-then-index",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            _, pullback = jax.vjp(f, x)
            (rows,) = jax.vmap(pullback, in_axes=0, out_axes=0)(cotangents)
            return rows
    """,
        id="vmap-pullback-unpack",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.grad(lambda y: jnp.vdot(jax.grad(f)(y), v))(x)
    """,
        id="reverse-over-reverse",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.grad(lambda y: jax.jvp(f, (y,), (v,))[1])(x)
    """,
        id="reverse-over-forward",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            _, tangent = jax.jvp(jax.grad(f), [x], [v])
            return tangent
    """,
        id="forward-over-reverse-lists",
    ),
    # "calls f once" is counted in the program (marked f): every transformation traces f once
    pytest.param(
        "value_and_gradient",
        """
        @functools.partial(jax.jit, static_argnums=0)
        def value_and_gradient(f, x):
            return jax.value_and_grad(lambda y: f(y))(x)
    """,
        id="jitted-with-static-f-value_and_grad-of-a-lambda",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            return jax.linearize(f, x)[1](v)
    """,
        id="linearize-inline",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            _, pullback = jax.vjp(f, x)
            return jax.vmap(lambda c: pullback(c)[0])(cotangents)
    """,
        id="vmap-of-a-lambda-over-the-pullback",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.linearize(jax.grad(f), x)[1](v)
    """,
        id="linearize-of-grad",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            _, pullback = jax.vjp(jax.grad(f), x)
            return pullback(v)[0]  # H is symmetric: v^T H = H v
    """,
        id="vjp-of-grad",
    ),
]


@pytest.mark.parametrize("function, replacement", CORRECT_VARIANTS)
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = PRELUDE + with_function(MODULE, replacement)
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


WRONG = [
    # (function, replacement, regex the message must match, -k expression of the checks to run)
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            return f(x), jax.grad(f)(x)
     """,
        r"called f 2 times for one call(.*\n)*.*jax.value_and_grad\(f\)\(x\)",
        "value_and_gradient and calls_f_once",
        id="f-then-grad",
    ),
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            eps = 1e-3
            flat = x.reshape(-1)
            grad = jnp.stack([(f((flat + eps * e).reshape(x.shape)) - f((flat - eps * e).reshape(x.shape))) / (2 * eps)
                              for e in jnp.eye(flat.size)])
            return f(x), grad.reshape(x.shape)
     """,
        r"called f \d+ times for one call(.*\n)*.*finite differences",
        "value_and_gradient and calls_f_once",
        id="finite-differences",
    ),
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            return jax.value_and_grad(f)(x)[1]
     """,
        r"returned an? \w+.*(value, gradient)|must return|tuple",
        "value_and_gradient and matches_reference",
        id="gradient-only",
    ),
    pytest.param(
        "value_and_gradient",
        """
        HISTORY = []
        def value_and_gradient(f, x):
            HISTORY.append(np.asarray(x).copy())
            return jax.value_and_grad(f)(x)
     """,
        r"change[sd] the contents of the module-level variable 'HISTORY'",
        "value_and_gradient and module_state",
        id="global-log",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            return jax.jvp(f, (x,), (v,))
     """,
        r"returned a tuple of 2 values, not one array(.*\n)*.*return only",
        "directional_derivative and only_the_tangent",
        id="returns-primal-tangent-pair",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            jacobian = jax.jacfwd(f)(x)
            return jnp.tensordot(jacobian, v, axes=v.ndim)
     """,
        r"builds the whole Jacobian.*float32\[1024,1024\](.*\n)*.*jax.jvp",
        "directional_derivative and no_jacobian",
        id="jacfwd-then-dot",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            return jnp.tensordot(jax.jacobian(f)(x), v, axes=v.ndim)
     """,
        r"builds the whole Jacobian",
        "directional_derivative and no_jacobian",
        id="jacobian-then-dot",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            eps = 1e-3
            return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
     """,
        r"called f 2 times",
        "directional_derivative and calls_f_once",
        id="central-difference",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            rows = []
            for c in cotangents:
                _, pullback = jax.vjp(f, x)
                rows.append(pullback(c)[0])
            return jnp.stack(rows)
     """,
        r"vjp_rows \(with k = 2 rows\) called f 2 times(.*\n)*.*Python loop of jax.vjp",
        "vjp_rows and calls_f_once",
        id="python-loop-of-vjp",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            _, pullback = jax.vjp(f, x)
            return jnp.stack([pullback(c)[0] for c in cotangents])
     """,
        r"grows with the size of cotangents \(k rows\) \(2: \d+ operations, 5: \d+ operations\)",
        "vjp_rows and does_not_grow",
        id="python-loop-over-one-pullback",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            return cotangents @ jax.jacrev(f)(x)
     """,
        r"builds the whole Jacobian.*\[1024,1024\](.*\n)*.*jax.jacrev",
        "vjp_rows and no_jacobian",
        id="cotangents-at-jacrev",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            _, pullback = jax.vjp(f, x)
            return jax.vmap(pullback)(cotangents)
     """,
        r"returned a tuple of 1 values(.*\n)*.*one entry per argument",
        "vjp_rows and matches_reference",
        id="pullback-tuple-not-unpacked",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.hessian(f)(x) @ v
     """,
        r"builds the whole Hessian.*\[1024,1024\](.*\n)*.*jax.hessian",
        "hvp and no_hessian",
        id="jax-hessian",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.jacfwd(jax.jacrev(f))(x) @ v
     """,
        r"builds the whole Hessian",
        "hvp and no_hessian",
        id="jacfwd-of-jacrev",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            eps = 1e-2
            return (jax.grad(f)(x + eps * v) - jax.grad(f)(x - eps * v)) / (2 * eps)
     """,
        r"called f 2 times",
        "hvp and calls_f_once",
        id="finite-difference-of-gradients",
    ),
    # f called twice, counted in the program (the verdict decided on the trusted side)
    pytest.param(
        "value_and_gradient",
        """
        def value_and_gradient(f, x):
            value, _ = jax.jvp(f, (x,), (jnp.zeros_like(x),))
            return value, jax.grad(f)(x)
     """,
        r"value_and_gradient called f 2 times for one call: its compiled program runs the forward pass of f 2 times",
        "value_and_gradient and calls_f_once",
        id="value-from-a-jvp-then-grad",
    ),
    pytest.param(
        "directional_derivative",
        """
        def directional_derivative(f, x, v):
            _, pullback = jax.vjp(f, x)  # an unused pullback still traces f
            return jax.jvp(f, (x,), (v,))[1] + 0 * jnp.sum(pullback(f(x))[0])
     """,
        r"directional_derivative called f 3 times",
        "directional_derivative and calls_f_once",
        id="jvp-plus-a-pullback",
    ),
    pytest.param(
        "vjp_rows",
        """
        def vjp_rows(f, x, cotangents):
            return jnp.stack([jax.grad(lambda y: jnp.vdot(f(y), c))(x) for c in cotangents])
     """,
        r"vjp_rows \(with k = 2 rows\) called f 2 times",
        "vjp_rows and calls_f_once",
        id="python-loop-of-grad",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.jvp(jax.grad(f), (x,), (v,))[1] + 0 * f(x)
     """,
        r"hvp called f 2 times",
        "hvp and calls_f_once",
        id="forward-over-reverse-plus-f",
    ),
    pytest.param(
        "hvp",
        """
        def hvp(f, x, v):
            return jax.jvp(jax.grad(f), (x,), (v,))
     """,
        r"returned a tuple of 2 values",
        "hvp and matches_reference",
        id="returns-gradient-pair",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern, checks", WRONG)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, checks):
    results = grade(pytester, MODULE, PRELUDE + with_function(MODULE, replacement), only=checks)
    assert_rejected(results[function], pattern)
