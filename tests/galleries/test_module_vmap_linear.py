"""The vmap_linear checks judge right: loops, hand-written batching, lax.map, retracing and impure
answers fail with the right message; other correct answers (other APIs, jitted or not) pass."""

import pytest
from support import assert_accepted, assert_rejected, gallery, grade, with_function

MODULE = "vmap_linear"
PRELUDE = "import functools\n\nimport numpy as np\n"


CORRECT_VARIANTS = [
    (
        "einsum",
        "linear",
        """
        def linear(x, W, b):
            return jnp.einsum("i,io->o", x, W) + b
    """,
    ),
    (
        "transposed-dot",
        "linear",
        """
        def linear(x, W, b):
            return b + jnp.dot(jnp.transpose(W), x)
    """,
    ),
    (
        "vmap-of-a-lambda",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            return jax.vmap(lambda x: linear(x, W, b))(xs)
    """,
    ),
    (
        "vmap-with-named-axes",
        "batched_linear",
        """
        _batched = jax.vmap(linear, in_axes=(0, None, None), out_axes=0)

        @jax.jit
        def batched_linear(xs, W, b):
            return _batched(xs, W, b)
    """,
    ),
    (
        "vmap-of-a-partial",
        "batched_linear",
        """
        @jax.jit
        def linear(x, W, b):
            return x @ W + b

        def batched_linear(xs, W, b):
            return jax.vmap(functools.partial(linear, W=W, b=b))(xs)
    """,
    ),
    (
        "vmap-of-a-grad-lambda",
        "per_example_grads",
        """
        @jax.jit
        def per_example_grads(params, xs, ys):
            def loss(p, x, y):
                err = linear(x, p["W"], p["b"]) - y
                return 0.5 * jnp.dot(err, err)
            grad = lambda x, y: jax.value_and_grad(loss)(params, x, y)[1]
            return jax.vmap(grad)(xs, ys)
    """,
    ),
    (
        "closed-form-from-batched-linear",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            residual = jax.vmap(linear, in_axes=(0, None, None))(xs, params["W"], params["b"]) - ys
            return {"W": xs[:, :, None] * residual[:, None, :], "b": residual}
    """,
    ),
    # the Jacobian of ONE example's loss (= its gradient), mapped over the batch
    (
        "vmap-of-jacrev-per-example",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            return jax.vmap(jax.jacrev(_loss), in_axes=(None, 0, 0))(params, xs, ys)
    """,
    ),
    # forward mode over the parameters: P pushforwards of the batch, linear in B
    (
        "jacfwd-over-params",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            return jax.jacfwd(lambda p: jax.vmap(_loss, in_axes=(None, 0, 0))(p, xs, ys))(params)
    """,
    ),
    # a module-level jitted helper, demo arrays and a constant kept at module level (issue 10)
    (
        "demo-objects-and-jitted-helper",
        "per_example_grads",
        """
        HALF = 0.5
        DEMO_PARAMS = {"W": jnp.ones((3, 2)), "b": jnp.zeros(2)}
        _per_example = jax.jit(jax.vmap(jax.grad(lambda p, x, y: HALF * jnp.sum((linear(x, p["W"], p["b"]) - y) ** 2)),
                                        in_axes=(None, 0, 0)))

        def per_example_grads(params, xs, ys):
            return _per_example(params, xs, ys)
    """,
    ),
]


@pytest.mark.parametrize("function, replacement", gallery(CORRECT_VARIANTS))
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = PRELUDE + with_function(MODULE, replacement)
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


QUADRATIC = (
    r"work of per_example_grads grows quadratically with the batch(.*\n)*.*largest one is \(32, 32(.*\n)*.*Jacobian"
    r"(.*\n)*.*jax.vmap\(jax.grad\(loss\), in_axes=\(None, 0, 0\)\)"
)

WRONG = [
    # (function, replacement, regex the message must match, -k expression of the checks to run)
    (
        "subtracts-the-bias",
        "linear",
        """
        def linear(x, W, b):
            return x @ W - b
     """,
        r"linear: result differs from the reference",
        "linear and matches_reference and not batched",
    ),
    (
        "jits-a-new-lambda-every-call",
        "linear",
        """
        def linear(x, W, b):
            return jax.jit(lambda x, W, b: x @ W + b)(x, W, b)
     """,
        r"linear traced \d+ and compiled \d+ more time\(s\)(.*\n)*.*created inside the function on every call",
        "linear and retrace and not batched",
    ),
    # a cache miss the check's loop never meets, read from the source (decided on the trusted side from it too)
    (
        "clears-jax-caches-on-a-branch-the-loop-never-takes",
        "linear",
        """
        def linear(x, W, b):
            if x.ndim > 5:
                jax.clear_caches()
            return x @ W + b
     """,
        r"linear would trace and compile again on calls that one program serves:\n- line \d+: jax.clear_caches",
        "linear and retrace and not batched",
    ),
    (
        "keeps-inputs-in-a-module-list",
        "linear",
        """
        SEEN = []
        def linear(x, W, b):
            SEEN.append(x)
            return x @ W + b
     """,
        r"module-level (variable )?'SEEN'",
        "linear and module_state and not batched",
    ),
    # a Python loop over the examples
    (
        "python-loop-over-examples",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            return jnp.stack([linear(x, W, b) for x in xs])
     """,
        r"calls linear on one example at a time \(8 call\(s\) for a batch of 8\): a loop over the examples"
        r"(.*\n)*.*jax.vmap\(linear, in_axes=\(0, None, None\)\) takes linear",
        "batched_linear and one_vmap",
    ),
    # a hand-written batched matmul
    (
        "hand-written-batched-matmul",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            return xs @ W + b
     """,
        r"never calls linear: a hand-written batched computation(.*\n)*.*one matrix product over all B",
        "batched_linear and one_vmap",
    ),
    # lax.map is a loop too
    (
        "lax-map",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            return jax.lax.map(lambda x: linear(x, W, b), xs)
     """,
        r"lax.map \(or lax.scan\) runs it once per example(.*\n)*.*one call and one program, with no loop",
        "batched_linear and one_vmap",
    ),
    # W and b copied per example
    (
        "maps-over-broadcast-weights",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            n = xs.shape[0]
            return jax.vmap(linear)(xs, jnp.broadcast_to(W, (n, *W.shape)), jnp.broadcast_to(b, (n, *b.shape)))
     """,
        r"maps linear over W, b too(.*\n)*.*in_axes=\(0, None, None\)",
        "batched_linear and one_vmap",
    ),
    # a new jit every call
    (
        "jits-a-new-vmap-every-call",
        "batched_linear",
        """
        def batched_linear(xs, W, b):
            return jax.jit(jax.vmap(linear, in_axes=(0, None, None)))(xs, W, b)
     """,
        r"batched_linear traced 3 and compiled 3 more time\(s\) in 3 calls(.*\n)*.*JAX explains the cache miss",
        "batched_linear and retrace",
    ),
    # the gradient of the mean
    (
        "gradient-of-the-mean-loss",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            def mean_loss(p):
                return jnp.mean(jax.vmap(_loss, in_axes=(None, 0, 0))(p, xs, ys))
            return jax.grad(mean_loss)(params)
     """,
        r"gradient\['W'\] has shape \(\d, \d\), expected \(\d, \d, \d\)(.*\n)*.*the gradient of the mean or sum",
        "per_example_grads and one_gradient",
    ),
    # a Python loop
    (
        "python-loop-of-grads",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            grads = [jax.grad(_loss)(params, x, y) for x, y in zip(xs, ys)]
            return jax.tree_util.tree_map(lambda *g: jnp.stack(g), *grads)
     """,
        r"compiled program of per_example_grads grows with the size of the batch \(4: \d+ operations, 8: \d+",
        "per_example_grads and scales_linearly",
    ),
    # the Jacobian of the vector of B losses: B x B work (issue 10)
    (
        "jacrev-of-batch-losses",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            losses = lambda p: jax.vmap(_loss, in_axes=(None, 0, 0))(p, xs, ys)
            return jax.jacrev(losses)(params)
     """,
        QUADRATIC,
        "per_example_grads and scales_linearly",
    ),
    (
        "jacobian-of-batch-losses-under-jit",
        "per_example_grads",
        """
        @jax.jit
        def per_example_grads(params, xs, ys):
            return jax.jacobian(lambda p: 0.5 * jnp.sum((xs @ p["W"] + p["b"] - ys) ** 2, axis=1))(params)
     """,
        QUADRATIC,
        "per_example_grads and scales_linearly",
    ),
    # a vjp of the batch of losses, pulled back along every row of an identity matrix
    (
        "vjp-over-identity-rows",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            _, pullback = jax.vjp(lambda p: jax.vmap(_loss, in_axes=(None, 0, 0))(p, xs, ys), params)
            return jax.vmap(pullback)(jnp.eye(xs.shape[0]))[0]
     """,
        QUADRATIC,
        "per_example_grads and scales_linearly",
    ),
    # the gradient of a one-hot weighted sum of the losses, once per example
    (
        "one-hot-weighted-grads",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            def weighted(p, onehot):
                return jnp.sum(onehot * jax.vmap(_loss, in_axes=(None, 0, 0))(p, xs, ys))
            return jax.vmap(jax.grad(weighted), in_axes=(None, 0))(params, jnp.eye(xs.shape[0]))
     """,
        QUADRATIC,
        "per_example_grads and scales_linearly",
    ),
    # a new jit every call
    (
        "jits-a-new-function-every-call",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            return jax.jit(jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0)))(params, xs, ys)
     """,
        r"per_example_grads traced \d+ and compiled \d+ more time",
        "per_example_grads and retrace",
    ),
    # writes into its argument
    (
        "mutates-the-params-dict",
        "per_example_grads",
        """
        def per_example_grads(params, xs, ys):
            params["W"] = jnp.asarray(params["W"])
            return jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))(params, xs, ys)
     """,
        r"modified its argument: params\['W'\] was replaced",
        "per_example_grads and pure",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern, checks", gallery(WRONG))
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, checks):
    results = grade(pytester, MODULE, PRELUDE + with_function(MODULE, replacement), only=checks)
    assert_rejected(results[function], pattern)
