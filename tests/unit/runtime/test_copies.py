"""Fresh copies of argument trees (:mod:`autograder.runtime.copies`): every array leaf in a buffer of its own, as it
was (dtype, weak type, sharding, values), put there without compiling a program for each shape and dtype."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from support import compiles_during

from autograder.runtime.copies import fresh_copy


def test_every_leaf_is_a_new_buffer_of_the_same_array_and_nothing_is_compiled():
    devices = jax.devices()
    mesh = jax.make_mesh((len(devices),), ("d",))
    sharded = jax.device_put(jnp.arange(4.0 * len(devices)).reshape(len(devices), 4), NamedSharding(mesh, P("d")))
    tree = {
        "f": jnp.arange(6.0).reshape(2, 3) + 1,
        "weak": jnp.asarray(2.5),
        "i": jnp.arange(5, dtype=jnp.int32) * 3,
        "key": jax.random.key(3),
        "raw": jax.random.PRNGKey(4),
        "sharded": sharded,
        "np": np.ones((2, 2), np.float32),
        "other": ("text", 3, None),
    }
    copied, compiled = compiles_during(lambda: fresh_copy(tree))
    assert compiled == 0
    assert copied["other"] == tree["other"]
    assert copied["np"] is not tree["np"] and np.array_equal(copied["np"], tree["np"])
    for name in ("f", "weak", "i", "key", "raw", "sharded"):
        got, want = copied[name], tree[name]
        assert got is not want
        assert (got.dtype, got.shape, got.sharding) == (want.dtype, want.shape, want.sharding)
        assert jax.typeof(got) == jax.typeof(want)  # the weak type included
        data = (lambda a: jax.random.key_data(a)) if jnp.issubdtype(want.dtype, jax.dtypes.prng_key) else (lambda a: a)
        assert np.asarray(data(got)).tobytes() == np.asarray(data(want)).tobytes()
        own = {s.data.unsafe_buffer_pointer() for s in data(got).addressable_shards}
        assert own.isdisjoint(s.data.unsafe_buffer_pointer() for s in data(want).addressable_shards)


def test_a_donated_copy_leaves_the_original_alive():
    original = jnp.arange(8.0) + 1
    donating = jax.jit(lambda x: x * 2, donate_argnums=0)
    donating(fresh_copy(original))
    assert not original.is_deleted() and float(original.sum()) == 36.0
