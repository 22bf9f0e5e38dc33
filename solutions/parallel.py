"""Reference solution: data parallelism with pmap/pmean and with shardings."""

import functools

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def predict(params, x):
    return jnp.dot(x, params["W"]) + params["b"]


def mse(params, x_batched, y_batched):
    return jnp.mean((jax.vmap(lambda x: predict(params, x))(x_batched) - y_batched) ** 2)


def make_data_mesh():
    return jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


def shard_batch(tree, n_devices):
    return jax.tree.map(lambda x: x.reshape((n_devices, x.shape[0] // n_devices) + x.shape[1:]), tree)


@functools.partial(jax.pmap, axis_name="devices")
def all_device_mean(xs):
    return jax.lax.pmean(xs, axis_name="devices")


@functools.partial(jax.pmap, axis_name="devices", in_axes=(0, 0, 0, None))
def pmap_sgd_step(params, xs, ys, learning_rate):
    loss, grads = jax.value_and_grad(mse)(params, xs, ys)
    grads = jax.lax.pmean(grads, axis_name="devices")
    loss = jax.lax.pmean(loss, axis_name="devices")
    new_params = jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
    return new_params, loss


def distribute(params, batch, mesh):
    replicated = NamedSharding(mesh, P())
    split_rows = NamedSharding(mesh, P("batch"))
    return jax.device_put(params, replicated), jax.device_put(batch, split_rows)


@jax.jit
def sharded_sgd_step(params, x, y, learning_rate):
    loss, grads = jax.value_and_grad(mse)(params, x, y)
    new_params = jax.tree.map(lambda p, g: p - learning_rate * g, params, grads)
    return new_params, loss
