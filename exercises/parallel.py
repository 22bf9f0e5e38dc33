"""Module 11 — data parallelism across devices: ``pmap``, ``pmean`` and shardings.

``vmap`` vectorises over a batch on *one* device. Data parallelism spreads
the batch over *several* devices: every device holds the same parameters and
a slice of the batch (one program, many pieces of data: SPMD), computes the
gradient on its slice, and the devices then average their gradients. With
slices of equal size that average is exactly the gradient of the whole
batch, so the parallel step equals the single-device step on the whole batch.

The checks run with 8 CPU devices (``jax.device_count() == 8``), which the
course sets before JAX starts. Never write 8 into your code: use
``jax.local_device_count()``, the leading axis of your input, or the mesh
you are given.

Two ways to write it:

* **``jax.pmap``**, the tutorial's way. ``jax.pmap(f, axis_name="devices")``
  runs ``f`` once per device, on slice ``i`` of axis 0 of every argument
  (so the input has a leading *device axis*, of length at most the number
  of devices). Inside ``f``, collectives talk across devices by that axis
  name: ``jax.lax.pmean(x, "devices")`` is the mean of ``x`` over all
  devices, the same on every device; ``jax.lax.psum`` is the sum.
  ``in_axes=None`` for an argument broadcasts it to every device unsplit.
  The result keeps the device axis and lives on those devices.
* **Shardings**, JAX's current way. ``jax.device_put(x, NamedSharding(mesh,
  P("batch")))`` places an array split along axis 0 over the mesh axis
  ``"batch"``; ``NamedSharding(mesh, P())`` copies it to every device
  (replicated). A plain ``jax.jit`` function called on such arrays is
  partitioned by the compiler, which inserts the cross-device sum
  (all-reduce) the gradient needs, by itself.

``predict``, ``mse`` (as in the ``pytrees`` module) and ``make_data_mesh``
are given. Run the checks with

    pytest exercises/test_parallel.py
"""

import functools  # noqa: F401  (for functools.partial(jax.pmap, ...))

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding  # noqa: F401
from jax.sharding import PartitionSpec as P  # noqa: F401


def predict(params, x):
    """The linear model ``x @ W + b``, for one example or a batch."""
    return jnp.dot(x, params["W"]) + params["b"]


def mse(params, x_batched, y_batched):
    """The mean of the squared error over every entry of the batch (a float32 scalar): not ``pytrees.mse``."""
    return jnp.mean((jax.vmap(lambda x: predict(params, x))(x_batched) - y_batched) ** 2)


def make_data_mesh():
    """A 1-D mesh of every device, with the axis name ``"batch"``.

    The axis type is ``Auto`` (the compiler decides how results are sharded):
    with JAX's default *Explicit* axes, the gradient of ``mse`` on a
    batch-sharded ``x`` fails with ``ShardingTypeError``.
    """
    return jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


def shard_batch(tree, n_devices):
    """Give every leaf of ``tree`` a leading device axis, for ``jax.pmap``.

    Every leaf has shape (B, ...) with ``B % n_devices == 0``; it becomes
    (n_devices, B // n_devices, ...). Device ``i`` gets the *consecutive*
    rows ``i*b : (i+1)*b`` (``b = B // n_devices``), in their order; values
    and dtypes do not change. ``tree`` is any pytree (the tuple ``(x, y)``, a
    dict, ...) of NumPy or JAX arrays: ``jax.tree.map`` reaches every leaf.
    Return new arrays; the caller's arrays must stay as they were.
    """
    # TODO: jax.tree.map a reshape over the leaves
    raise NotImplementedError


def all_device_mean(xs):
    """The mean of the slices of ``xs``, computed on every device at once.

    ``xs`` has shape (n, ...), with ``n <= jax.local_device_count()``. Make
    this a module-level ``jax.pmap`` function with an axis name (decorate it
    with ``@functools.partial(jax.pmap, axis_name=...)``): device ``i`` gets
    ``xs[i]``, and ``jax.lax.pmean`` over that axis name averages across the
    devices. The result has shape (n, ...), every slice equals
    ``xs.mean(axis=0)``, and it lives on the n devices (computing the mean on
    one device and broadcasting it is not data parallelism).
    """
    # TODO: a jax.pmap with an axis_name, and jax.lax.pmean inside
    raise NotImplementedError


def pmap_sgd_step(params, xs, ys, learning_rate):
    """One data-parallel SGD step on ``mse``; returns ``(new_params, loss)``.

    A module-level ``jax.pmap`` function with ``in_axes=(0, 0, 0, None)``:

    * ``params``: replicated, every leaf has a leading device axis n with n
      identical copies;
    * ``xs`` (n, b, x_dim) and ``ys`` (n, b, y_dim): the batch, as made by
      ``shard_batch``;
    * ``learning_rate``: a Python float, the same on every device (``None``
      in ``in_axes``). It must stay a traced value: making it static would
      compile again for every new learning rate.

    On each device: ``loss, grads = jax.value_and_grad(mse)(params, x, y)``
    on its slice, then average ``grads`` *and* ``loss`` over the devices
    with ``jax.lax.pmean``, then the update ``p - learning_rate * g`` leaf by
    leaf (``jax.tree.map``). Without the average every device would take its
    own step; a sum (``psum``) would take a step n times too large.

    Returns replicated ``new_params`` (leading axis n) and ``loss`` (n,);
    every slice equals the single-device step (and loss) on the whole batch.
    """
    # TODO: jax.pmap with an axis_name and in_axes; value_and_grad, pmean, update
    raise NotImplementedError


def distribute(params, batch, mesh):
    """Place ``params`` and ``batch`` on the devices of ``mesh``; return ``(params, batch)``.

    Use ``jax.device_put`` (it accepts a whole pytree and one sharding):

    * ``params`` replicated on every device: ``NamedSharding(mesh, P())``;
    * every leaf of ``batch`` split along axis 0 over the mesh axis
      ``"batch"``: ``NamedSharding(mesh, P("batch"))`` (B is divisible by
      the number of devices).

    Values do not change, and neither do the arguments.
    """
    # TODO: two jax.device_put calls, each with a NamedSharding of mesh
    raise NotImplementedError


@jax.jit
def sharded_sgd_step(params, x, y, learning_rate):
    """One SGD step on ``mse``, written for ONE device; returns ``(new_params, loss)``.

    ``loss, grads = jax.value_and_grad(mse)(params, x, y)``, then
    ``p - learning_rate * g`` leaf by leaf. Nothing about devices: called on
    arrays that ``distribute`` placed, ``jax.jit`` partitions the program over
    the mesh and inserts the cross-device sum of the gradients itself. The
    results are replicated on every device and equal the single-device step
    on the whole batch. ``learning_rate`` stays traced: a new value must not
    compile again.
    """
    # TODO: value_and_grad of mse, then the update with jax.tree.map
    raise NotImplementedError
