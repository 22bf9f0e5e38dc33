"""The parallel checks judge right, on 8 CPU devices: wrong data-parallel code fails with a message naming
what was detected, attributed to the right function; correct code written differently (shard_map, tree.map of
device_put, ...) passes."""

import jax
import pytest
from support import assert_accepted, assert_rejected, grade, with_function

MODULE = "parallel"
IMPORTS = "import numpy as np\n"


def test_the_kit_runs_with_the_course_devices():
    """The plugin set 8 CPU devices before tests/conftest.py imported JAX."""
    assert jax.device_count() == 8


CORRECT = [
    (
        "shard_batch",
        "tree-util-and-numpy-split",
        """
        def shard_batch(tree, n_devices):
            return jax.tree_util.tree_map(lambda a: np.stack(np.split(np.asarray(a), n_devices)), tree)
    """,
    ),
    (
        "all_device_mean",
        "psum-divided-by-axis-size",
        """
        @functools.partial(jax.pmap, axis_name="i")
        def all_device_mean(xs):
            return jax.lax.psum(xs, "i") / jax.lax.psum(1, "i")
    """,
    ),
    (
        "pmap_sgd_step",
        "pmean-of-the-loss-and-grads-together",
        """
        def _step(params, xs, ys, learning_rate):
            loss, grads = jax.lax.pmean(jax.value_and_grad(mse)(params, xs, ys), axis_name="d")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss

        pmap_sgd_step = jax.pmap(_step, axis_name="d", in_axes=(0, 0, 0, None))
    """,
    ),
    (
        "distribute",
        "tree-map-of-device-put",
        """
        def distribute(params, batch, mesh):
            rep, rows = NamedSharding(mesh, P()), NamedSharding(mesh, P("batch", None))
            return (jax.tree.map(lambda p: jax.device_put(p, rep), params),
                    jax.tree.map(lambda b: jax.device_put(b, NamedSharding(mesh, P("batch"))), batch))
    """,
    ),
    (
        "sharded_sgd_step",
        "shard-map-no-vma-pmean-grads",
        """
        def _local(params, x, y, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            grads = jax.lax.pmean(grads, "batch")
            loss = jax.lax.pmean(loss, "batch")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss

        @jax.jit
        def sharded_sgd_step(params, x, y, learning_rate):
            step = jax.shard_map(_local, mesh=make_data_mesh(), in_specs=(P(), P("batch"), P("batch"), P()),
                                 out_specs=(P(), P()), check_vma=False)
            return step(params, x, y, learning_rate)
    """,
    ),
    (
        "sharded_sgd_step",
        "shard-map-vma-pmean-loss",
        """
        def _local(params, x, y, learning_rate):
            loss, grads = jax.value_and_grad(lambda p: jax.lax.pmean(mse(p, x, y), "batch"))(params)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss

        @jax.jit
        def sharded_sgd_step(params, x, y, learning_rate):
            step = jax.shard_map(_local, mesh=make_data_mesh(), in_specs=(P(), P("batch"), P("batch"), P()),
                                 out_specs=(P(), P()))
            return step(params, x, y, learning_rate)
    """,
    ),
]


@pytest.mark.parametrize("function, replacement", [(f, src) for f, _, src in CORRECT], ids=[i for _, i, _ in CORRECT])
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = IMPORTS + with_function(MODULE, replacement)
    assert_accepted(grade(pytester, MODULE, source, only=function)[function])


WRONG = [
    (
        "shard_batch",
        "reshape-transposed",
        """
        def shard_batch(tree, n_devices):
            return jax.tree.map(lambda a: np.swapaxes(np.asarray(a).reshape((-1, n_devices) + a.shape[1:]), 0, 1), tree)
    """,
        r"device i got the rows i, i\+\d+, .*not a block of consecutive rows",
    ),
    (
        "shard_batch",
        "hard-coded-8-devices",
        """
        def shard_batch(tree, n_devices):
            return jax.tree.map(lambda a: a.reshape((8, -1) + a.shape[1:]), tree)
    """,
        r"has shape \(8, .*expected \(\d, |cannot reshape",
    ),
    (
        "shard_batch",
        "only-the-first-leaf",
        """
        def shard_batch(tree, n_devices):
            x, y = tree
            return (x.reshape((n_devices, -1) + x.shape[1:]), y)
    """,
        r"result\[1\] has shape",
    ),
    (
        "shard_batch",
        "in-place-shape-assignment",
        """
        def shard_batch(tree, n_devices):
            def split(a):
                a.shape = (n_devices, a.shape[0] // n_devices) + a.shape[1:]
                return a
            return jax.tree.map(split, tree)
    """,
        r"modified its argument: .* was replaced or reshaped",
    ),
    (
        "all_device_mean",
        "jnp-mean-broadcast",
        """
        def all_device_mean(xs):
            return jnp.broadcast_to(jnp.mean(xs, axis=0), xs.shape)
    """,
        r"result lives on 1 device\(s\), expected 8(.*\n)*.*jax.pmap",
    ),
    (
        "all_device_mean",
        "pmap-without-pmean",
        """
        @functools.partial(jax.pmap, axis_name="i")
        def all_device_mean(xs):
            return xs
    """,
        r"differs from the reference",
    ),
    (
        "pmap_sgd_step",
        "psum-instead-of-pmean",
        """
        @functools.partial(jax.pmap, axis_name="d", in_axes=(0, 0, 0, None))
        def pmap_sgd_step(params, xs, ys, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, xs, ys)
            grads = jax.lax.psum(grads, "d")
            loss = jax.lax.pmean(loss, "d")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"the step is \d times too large(.*\n)*.*pmean",
    ),
    (
        "pmap_sgd_step",
        "no-pmean",
        """
        @functools.partial(jax.pmap, axis_name="d", in_axes=(0, 0, 0, None))
        def pmap_sgd_step(params, xs, ys, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, xs, ys)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"every device took its own step with the gradient of its own slice",
    ),
    (
        "pmap_sgd_step",
        "loss-not-averaged",
        """
        @functools.partial(jax.pmap, axis_name="d", in_axes=(0, 0, 0, None))
        def pmap_sgd_step(params, xs, ys, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, xs, ys)
            grads = jax.lax.pmean(grads, "d")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"every device returned the loss of its own slice",
    ),
    (
        "pmap_sgd_step",
        "static-learning-rate",
        """
        @functools.partial(jax.pmap, axis_name="d", in_axes=(0, 0, 0, None), static_broadcasted_argnums=3)
        def pmap_sgd_step(params, xs, ys, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, xs, ys)
            grads = jax.lax.pmean(grads, "d")
            loss = jax.lax.pmean(loss, "d")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"pmap_sgd_step traced 3 and compiled 3 more time\(s\)(.*\n)*.*JAX explains",
        "new_learning_rate",
    ),
    # right values from one device: vmap names the axis as pmap does, but the program runs on one device
    (
        "pmap_sgd_step",
        "jit-of-vmap-on-one-device",
        """
        def _step(params, xs, ys, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, xs, ys)
            grads, loss = jax.lax.pmean((grads, loss), "d")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss

        pmap_sgd_step = jax.jit(jax.vmap(_step, axis_name="d", in_axes=(0, 0, 0, None)))
    """,
        r"\(new_params, loss\) lives on 1 device\(s\), expected 8(.*\n)*.*jax.pmap function",
        "spread_over",
    ),
    (
        "distribute",
        "device-put-without-sharding",
        """
        def distribute(params, batch, mesh):
            return jax.device_put(params), jax.device_put(batch, NamedSharding(mesh, P("batch")))
    """,
        r"params\['W'\] lives on 1 device\(s\), expected 8",
    ),
    (
        "distribute",
        "batch-replicated",
        """
        def distribute(params, batch, mesh):
            rep = NamedSharding(mesh, P())
            return jax.device_put(params, rep), jax.device_put(batch, rep)
    """,
        r"batch\[0\] is sharded as P\(\): each device holds the whole batch",
    ),
    # the module's own mesh of every device instead of the mesh it is given (right only for that one mesh)
    (
        "distribute",
        "own-mesh-of-every-device",
        """
        def distribute(params, batch, mesh):
            own = make_data_mesh()
            return (jax.device_put(params, NamedSharding(own, P())),
                    jax.device_put(batch, NamedSharding(own, P("batch"))))
    """,
        r"params\['W'\] lives on 8 device\(s\), expected 4(.*\n)*.*all 4 devices of the mesh",
    ),
    (
        "sharded_sgd_step",
        "not-jitted",
        """
        def sharded_sgd_step(params, x, y, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"sharded_sgd_step is not a jax.jit function",
    ),
    (
        "sharded_sgd_step",
        "static-learning-rate",
        """
        @functools.partial(jax.jit, static_argnums=3)
        def sharded_sgd_step(params, x, y, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"sharded_sgd_step traced 3 and compiled 3 more time\(s\)",
    ),
    # every device gathers the whole batch and redoes all the work: right values, no all-reduce
    (
        "sharded_sgd_step",
        "batch-gathered-onto-every-device",
        """
        @jax.jit
        def sharded_sgd_step(params, x, y, learning_rate):
            every = NamedSharding(make_data_mesh(), P())
            x, y = jax.lax.with_sharding_constraint((x, y), every)
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss
    """,
        r"the compiled program has no all-reduce",
        "all_reduce",
    ),
    (
        "sharded_sgd_step",
        "shard-map-vma-and-pmean-grads",
        """
        def _local(params, x, y, learning_rate):
            loss, grads = jax.value_and_grad(mse)(params, x, y)
            grads = jax.lax.pmean(grads, "batch")
            loss = jax.lax.pmean(loss, "batch")
            return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), loss

        @jax.jit
        def sharded_sgd_step(params, x, y, learning_rate):
            step = jax.shard_map(_local, mesh=make_data_mesh(), in_specs=(P(), P("batch"), P("batch"), P()),
                                 out_specs=(P(), P()))
            return step(params, x, y, learning_rate)
    """,
        r"new_params, loss\)\[0\]\['W'\] differs from the reference",
    ),
]


@pytest.mark.parametrize(
    "function, replacement, pattern, only",
    [(*w[0:1], *w[2:4], w[4] if len(w) > 4 else None) for w in WRONG],
    ids=[f"{w[0]}-{w[1]}" for w in WRONG],
)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, only):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=only or function)
    assert_rejected(results[function], pattern)
