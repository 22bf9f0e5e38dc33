"""Module 2 — stateless random numbers: keys and ``split``.

NumPy's ``np.random.normal()`` reads and updates a hidden global generator:
call it twice and you get two different numbers, because the state changed
behind your back. A pure function cannot do that, so JAX has no hidden state
at all. Randomness comes from a *key* that you pass explicitly:

    key = jax.random.key(42)            # or the older jax.random.PRNGKey(42)
    a = jax.random.normal(key)          # a draw: a pure function of the key
    b = jax.random.normal(key)          # same key, same number: a == b !

The same key always gives the same numbers. To get new randomness you derive
new keys from the one you have with ``split``:

    key, sub = jax.random.split(key)        # two fresh keys from one
    key, k1, k2 = jax.random.split(key, 3)  # or as many as you need
    keys = jax.random.split(key, n)         # an array of n keys: keys[i]

The rule to live by: **use every key exactly once** — for one draw, or for
one split. After splitting, the old key is spent: draw with the subkeys and
carry the new ``key`` forward for the next split. Using a key twice gives
correlated (identical!) numbers without any error. The checks read the
program your function compiles to for a key passed to two draws or splits,
and compare its keys and draws with the reference's; when they differ, your
code runs under ``jax.debug_key_reuse(True)``, which turns such reuse into an
error at your line.

Every function here returns exactly what the reference returns for the same
key, so the *pattern* of splits written in each docstring matters. Keys may
be typed keys (``jax.random.key``) or legacy ``PRNGKey`` arrays; everything
above works for both, and a key you return must be of the kind you were given
(``split`` keeps the kind). Never use ``np.random``, ``random`` or a
hard-coded key inside a function: take the key argument.

Run the checks with

    pytest exercises/test_prng.py
"""

import jax
import jax.numpy as jnp


def two_normals(key):
    """Draw two standard-normal float32 scalars and return ``(new_key, a, b)``.

    Split ``key`` into three: ``key, k1, k2 = jax.random.split(key, 3)``.
    Draw ``a`` with ``k1`` and ``b`` with ``k2`` (``jax.random.normal(k)`` gives
    a scalar), and return the new ``key`` so the caller can keep splitting it.
    Must work under ``jax.jit``.
    """
    # TODO: split into three keys, draw once with each subkey, return the carried key first
    raise NotImplementedError


def init_mlp(key, sizes):
    """Initialise the parameters of an MLP with layer sizes ``sizes`` (a tuple of ints).

    Split once into one key per layer: ``keys = jax.random.split(key, len(sizes) - 1)``.
    Layer ``i`` maps ``sizes[i]`` features to ``sizes[i + 1]`` and is the dict

        {"W": normal(keys[i], (sizes[i], sizes[i + 1])) * sqrt(2 / sizes[i]),
         "b": zeros(sizes[i + 1])}

    (He initialisation). Return the list of the layer dicts, first layer first.
    Must work under ``jax.jit`` with ``sizes`` static.
    Example: ``init_mlp(key, (3, 4, 2))`` has W shapes (3, 4) and (4, 2).
    """
    # TODO: one split into len(sizes) - 1 keys, then one draw per layer with its own key
    raise NotImplementedError


def dropout(key, x, rate):
    """Inverted dropout: zero each entry of ``x`` with probability ``rate``.

    ``keep = jax.random.bernoulli(key, 1 - rate, x.shape)`` says which entries
    survive; kept entries are divided by ``1 - rate`` so that the expected
    value of each entry stays ``x``, dropped ones become 0. ``0 <= rate < 1``;
    with ``rate = 0`` the result is ``x`` itself. Must work under ``jax.jit``
    with ``rate`` static.
    """
    # TODO: draw the keep mask with the key, then choose x / (1 - rate) or 0 entry by entry
    raise NotImplementedError


def random_walk(key, n_steps):
    """A 1-D random walk: the running sum of ``n_steps`` standard-normal steps.

    On every step, split the carried key, ``key, sub = jax.random.split(key)``,
    and the step is ``jax.random.normal(sub)``. Return the float32 array of
    shape ``(n_steps,)`` whose entry ``t`` is the sum of steps ``0..t``.
    Must work under ``jax.jit`` with ``n_steps`` static; a Python loop works,
    and ``jax.lax.scan`` (carry the key, emit the step) compiles faster.
    """
    # TODO: carry the key through the steps, splitting it on each one; then a running sum
    raise NotImplementedError
