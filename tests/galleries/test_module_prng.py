"""The prng checks judge right: wrong, impure and key-reusing answers fail with the right message,
other correct answers (other APIs, other loop constructs, other order of operations) pass."""

import pytest
from support import assert_accepted, assert_rejected, gallery, grade, with_function

MODULE = "prng"
PRELUDE = "import functools\nimport math\nimport random\n\nimport numpy as np\nimport torch\n"


CORRECT_VARIANTS = [
    (
        "indexed-split",
        "two_normals",
        """
        def two_normals(key):
            keys = jax.random.split(key, num=3)
            a = jax.random.normal(keys[1], (), dtype=jnp.float32)
            b = jax.random.normal(keys[2], shape=())
            return keys[0], a, b
    """,
    ),
    (
        "star-unpacked-split",
        "two_normals",
        """
        @jax.jit
        def two_normals(key):
            new_key, *subkeys = jax.random.split(key, 3)
            a, b = (jax.random.normal(k) for k in subkeys)
            return new_key, a, b
    """,
    ),
    (
        "python-loop-with-math-sqrt",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            layers = []
            for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
                scale = math.sqrt(2 / m)
                layers.append({"b": jnp.zeros((n,), jnp.float32), "W": scale * jax.random.normal(k, (m, n))})
            return layers
    """,
    ),
    (
        "comprehension-divides-by-sqrt",
        "init_mlp",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def init_mlp(key, sizes):
            keys = jax.random.split(key, len(sizes) - 1)
            return [
                {"W": jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) / jnp.sqrt(sizes[i] / 2),
                 "b": jnp.zeros(sizes[i + 1])}
                for i in range(len(keys))
            ]
    """,
    ),
    (
        "lax-select-and-rate-zero-shortcut",
        "dropout",
        """
        def dropout(key, x, rate):
            if rate == 0:
                return x
            keep = jax.random.bernoulli(key, p=1.0 - rate, shape=jnp.shape(x))
            return jax.lax.select(keep, x * (1.0 / (1.0 - rate)), jnp.zeros_like(x))
    """,
    ),
    (
        "float-mask-multiply",
        "dropout",
        """
        def dropout(key, x, rate):
            mask = jax.random.bernoulli(key, 1 - rate, x.shape).astype(x.dtype)
            return mask * x / (1 - rate)
    """,
    ),
    (
        "python-loop",
        "random_walk",
        """
        def random_walk(key, n_steps):
            total, walk = 0.0, []
            for _ in range(n_steps):
                key, sub = jax.random.split(key)
                total = total + jax.random.normal(sub)
                walk.append(total)
            return jnp.stack(walk)
    """,
    ),
    (
        "fori-loop",
        "random_walk",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def random_walk(key, n_steps):
            def body(i, carry):
                key, out = carry
                key, sub = jax.random.split(key)
                return key, out.at[i].set(jax.random.normal(sub))
            _, steps = jax.lax.fori_loop(0, n_steps, body, (key, jnp.zeros(n_steps)))
            return jnp.cumsum(steps)
    """,
    ),
    (
        "uniform-below-keep-probability",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jax.random.uniform(key, x.shape) < 1 - rate  # what bernoulli draws
            return jnp.where(keep, x / (1 - rate), 0)
    """,
    ),
    (
        "lax-scan",
        "random_walk",
        """
        def random_walk(key, n_steps):
            def step(carry, _):
                key, total = carry
                key, sub = jax.random.split(key)
                total = total + jax.random.normal(sub)
                return (key, total), total
            return jax.lax.scan(step, (key, jnp.float32(0)), length=n_steps)[1]
    """,
    ),
]


@pytest.mark.parametrize("function, replacement", gallery(CORRECT_VARIANTS))
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = PRELUDE + with_function(MODULE, replacement)
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


WRONG = [
    # (function, replacement, regex the message must match, -k expression of the checks to run)
    # key reuse: two draws from one key
    (
        "draws-twice-from-one-subkey",
        "two_normals",
        """
        def two_normals(key):
            key, sub = jax.random.split(key)
            return key, jax.random.normal(sub), jax.random.normal(sub)
     """,
        r"used the key `sub` a second time.*at line \d+: return key, jax.random.normal\(sub\)(.*\n)*.*jax.random.split\(key, 3\)",
        "two_normals and uses_each_key",
    ),
    # key reuse: the parent used after split
    (
        "reuses-the-input-key",
        "two_normals",
        """
        def two_normals(key):
            new_key, k1 = jax.random.split(key)
            return new_key, jax.random.normal(k1), jax.random.normal(key)
     """,
        r"used the key `key` a second time",
        "two_normals and uses_each_key",
    ),
    # the parent returned after split
    (
        "returns-the-input-key",
        "two_normals",
        """
        def two_normals(key):
            _, k1, k2 = jax.random.split(key, 3)
            return key, jax.random.normal(k1), jax.random.normal(k2)
     """,
        r"the returned key\[0\] was already used inside two_normals(.*\n)*.*return the new key that jax.random.split gave you",
        "two_normals and uses_each_key",
    ),
    # the key kind converted
    (
        "returns-a-legacy-key-for-a-typed-one",
        "two_normals",
        """
        def two_normals(key):
            key, k1, k2 = jax.random.split(key, 3)
            if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
                key = jax.random.key_data(key)
            return key, jax.random.normal(k1), jax.random.normal(k2)
     """,
        r"legacy (uint32 )?key.*typed key",
        "two_normals and kind",
    ),
    # wrong split pattern
    (
        "splits-a-used-key-for-the-new-key",
        "two_normals",
        """
        def two_normals(key):
            k1, k2 = jax.random.split(key)
            key, _ = jax.random.split(k2)
            return key, jax.random.normal(k1), jax.random.normal(k2)
     """,
        r"two_normals: result\[0\] differs from the reference",
        "two_normals and matches_reference",
    ),
    # key reuse: the same key for every layer
    (
        "one-key-for-every-layer",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            return [{"W": jax.random.normal(key, (m, n)) * jnp.sqrt(2.0 / m), "b": jnp.zeros(n)}
                    for m, n in zip(sizes[:-1], sizes[1:])]
     """,
        r"used the key `key` a second time.*line \d+",
        "init_mlp and uses_each_key",
    ),
    # a hard-coded key ignores the argument
    (
        "hard-coded-key",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            keys = jax.random.split(jax.random.PRNGKey(0), len(sizes) - 1)
            return [{"W": jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) * jnp.sqrt(2.0 / sizes[i]),
                     "b": jnp.zeros(sizes[i + 1])} for i in range(len(sizes) - 1)]
     """,
        r"returned the same result for two different keys(.*\n)*.*hard-coded key",
        "init_mlp and randomness",
    ),
    # NumPy's global RNG
    (
        "adds-numpy-global-noise",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            keys = jax.random.split(key, len(sizes) - 1)
            return [{"W": jax.random.normal(keys[i], (sizes[i], sizes[i + 1])) * np.sqrt(2.0 / sizes[i])
                          + np.random.normal(scale=1e-3),
                     "b": jnp.zeros(sizes[i + 1])} for i in range(len(sizes) - 1)]
     """,
        r"changed when only NumPy's global RNG \(np.random\) was re-seeded",
        "init_mlp and randomness",
    ),
    # a sequential split per layer is another pattern
    (
        "splits-in-a-chain",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            layers = []
            for m, n in zip(sizes[:-1], sizes[1:]):
                key, sub = jax.random.split(key)
                layers.append({"W": jax.random.normal(sub, (m, n)) * jnp.sqrt(2.0 / m), "b": jnp.zeros(n)})
            return layers
     """,
        r"init_mlp: result\[0\]\['W'\] differs from the reference",
        "init_mlp and matches_reference",
    ),
    # no rescaling
    (
        "forgets-to-rescale",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jax.random.bernoulli(key, 1 - rate, x.shape)
            return jnp.where(keep, x, 0)
     """,
        r"none of the allowed values \(0 = 0, x / \(1 - rate\) = [\d.]+\)(.*\n)*.*inverted dropout",
        "dropout and rescales",
    ),
    # keep probability and drop probability swapped
    (
        "keeps-with-probability-rate",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jax.random.bernoulli(key, rate, x.shape)
            return jnp.where(keep, x / (1 - rate), 0)
     """,
        r"dropout\(key, x, 0.0\) returns x unchanged",
        "dropout and rate_zero",
    ),
    # torch's global RNG
    (
        "draws-from-torch",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jnp.asarray((torch.rand(x.shape) >= rate).numpy())
            return jnp.where(keep, x / (1 - rate), 0)
     """,
        r"same result for two different keys",
        "dropout and randomness",
    ),
    # Python control flow on a traced value
    (
        "python-if-on-a-traced-value",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jax.random.bernoulli(key, 1 - rate, x.shape)
            if keep.all():
                return x
            return jnp.where(keep, x / (1 - rate), 0)
     """,
        r"cannot be (traced by JAX|compiled with jax.jit): it uses a traced value in Python control flow",
        "dropout and works_under_jit",
    ),
    # key reuse: the same subkey on every step of a scan
    (
        "reuses-the-subkey-in-scan",
        "random_walk",
        """
        def random_walk(key, n_steps):
            key, sub = jax.random.split(key)
            def step(total, _):
                total = total + jax.random.normal(sub)
                return total, total
            return jax.lax.scan(step, 0.0, None, length=n_steps)[1]
     """,
        r"used the key `sub` a second time.*at line \d+: total = total \+ jax.random.normal\(sub\)",
        "random_walk and uses_each_key",
    ),
    # key reuse: drawing with the carried key instead of the subkey
    (
        "draws-from-the-carried-key",
        "random_walk",
        """
        def random_walk(key, n_steps):
            steps = []
            for _ in range(n_steps):
                key, sub = jax.random.split(key)
                steps.append(jax.random.normal(key))
            return jnp.cumsum(jnp.stack(steps))
     """,
        r"used the key `key` a second time",
        "random_walk and uses_each_key",
    ),
    # all keys split up front is another pattern
    (
        "splits-into-n-keys-at-once",
        "random_walk",
        """
        def random_walk(key, n_steps):
            keys = jax.random.split(key, n_steps)
            return jnp.cumsum(jax.vmap(jax.random.normal)(keys))
     """,
        r"random_walk: result differs from the reference",
        "random_walk and matches_reference",
    ),
    # key use decided from the program (the verdict decided on the trusted side): a key used twice
    (
        "splits-the-same-key-once-per-layer",
        "init_mlp",
        """
        def init_mlp(key, sizes):
            n = len(sizes) - 1  # the reference's keys, but the key is split n times
            return [{"W": jax.random.normal(jax.random.split(key, n)[i], (sizes[i], sizes[i + 1]))
                          * jnp.sqrt(2.0 / sizes[i]), "b": jnp.zeros(sizes[i + 1])} for i in range(n)]
     """,
        r"used the key `key` a second time",
        "init_mlp and uses_each_key",
    ),
    (
        "one-mask-for-every-row",
        "dropout",
        """
        def dropout(key, x, rate):
            keep = jnp.stack([jax.random.bernoulli(key, 1 - rate, x.shape[1:]) for _ in range(x.shape[0])])
            return jnp.where(keep, x / (1 - rate), 0)
     """,
        r"used the key `key` a second time",
        "dropout and uses_each_key",
    ),
    (
        "draws-with-the-carried-key-in-fori-loop",
        "random_walk",
        """
        def random_walk(key, n_steps):
            def body(i, carry):
                key, out = carry
                step = jax.random.normal(key)
                key, _ = jax.random.split(key)
                return key, out.at[i].set(step)
            return jnp.cumsum(jax.lax.fori_loop(0, n_steps, body, (key, jnp.zeros(n_steps)))[1])
     """,
        r"uses every PRNG key at most once",
        "random_walk and uses_each_key",
    ),
    (
        "returns-the-input-key-jitted",
        "two_normals",
        """
        @jax.jit
        def two_normals(key):
            _, k1, k2 = jax.random.split(key, 3)
            return key, jax.random.normal(k1), jax.random.normal(k2)
     """,
        r"the returned key\[0\] was already used inside two_normals",
        "two_normals and uses_each_key",
    ),
    # Python's random module
    (
        "adds-python-random-noise",
        "random_walk",
        """
        def random_walk(key, n_steps):
            def step(key, _):
                key, sub = jax.random.split(key)
                return key, jax.random.normal(sub)
            steps = jax.lax.scan(step, key, None, length=n_steps)[1]
            return jnp.cumsum(steps) + random.gauss(0, 1e-3)
     """,
        r"changed when only Python's random module was re-seeded",
        "random_walk and randomness",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern, checks", gallery(WRONG))
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, checks):
    results = grade(pytester, MODULE, PRELUDE + with_function(MODULE, replacement), only=checks)
    assert_rejected(results[function], pattern)
