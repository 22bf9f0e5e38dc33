"""Module 10 — Dropout, and where its randomness comes from.

Dropout zeroes a random part of the activations while training (and scales
the rest up by ``1 / (1 - rate)``), and does nothing at evaluation. So it
needs *new* randomness at every training step, and none at all afterwards.

A Flax module holds no random state, and neither does JAX. The randomness is
a key that you hand to ``apply`` for a named *stream*, ``'dropout'``:

    logits = model.apply({"params": params}, x, train=True,
                         rngs={"dropout": key})

``nn.Dropout(rate, deterministic=not train)`` turns it off for evaluation
(``train=False``): then no key is needed and the output is the plain network.

Which key, at which step? A training loop gives the step function one base
key, the **same** one at every step, and the step derives its own key from it
and the step number:

    step_key = jax.random.fold_in(dropout_key, state.step)

``fold_in`` mixes a number into a key without consuming it, so the base key
can be given again at the next step, and each step number gives another mask.
``state.step`` is an array traced by ``jax.jit``: never turn it into a Python
``int`` (that would compile a new program for every step). Splitting the base
key inside the step (``jax.random.split(dropout_key)``) consumes the caller's
key: the next step, given the same key, repeats it (the checks run under
``jax.debug_key_reuse(True)``, which reports that).

For several independent draws at once, ``jax.random.split(key, n)`` gives an
array of ``n`` keys, and ``jax.vmap`` over that array runs one draw per key
in one program: Monte-Carlo dropout averages the predictions of many random
sub-networks this way.

``DropoutClassifier`` is given. Run the checks with

    pytest exercises/test_dropout_rngs.py
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state


class DropoutClassifier(nn.Module):
    """Dense(num_hidden) -> relu -> Dropout(rate) -> Dense(num_outputs); dropout only when ``train``."""

    num_hidden: int
    num_outputs: int
    rate: float = 0.5

    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(features=self.num_hidden)(x)
        x = nn.relu(x)
        x = nn.Dropout(rate=self.rate, deterministic=not train)(x)
        x = nn.Dense(features=self.num_outputs)(x)
        return x


def create_train_state_dropout(rng, model, learning_rate, sample_input):
    """Initialise ``model`` in evaluation mode and return a ``TrainState`` at step 0.

    ``variables = model.init(rng, sample_input, train=False)``: in evaluation
    mode Dropout draws nothing, so ``init`` needs only ``rng``. The
    ``TrainState`` (``flax.training.train_state.TrainState``) has
    ``apply_fn=model.apply``, ``params=variables["params"]`` (the two Dense
    layers, not the whole ``variables`` dict) and plain SGD with
    ``learning_rate`` (``optax.sgd``).
    """
    # TODO: model.init(..., train=False), then train_state.TrainState.create(...)
    raise NotImplementedError


@jax.jit
def train_step_dropout(state, batch, dropout_key):
    """One SGD step with dropout on; return ``(new_state, loss)``.

    ``batch = (x, labels)``. This step's key is
    ``jax.random.fold_in(dropout_key, state.step)``. The loss, a function of
    ``params``, runs ``state.apply_fn({"params": params}, x, train=True,
    rngs={"dropout": step_key})``, squeezes the logits to (B,) and takes the
    mean ``optax.sigmoid_binary_cross_entropy`` with ``labels``. Take its
    value and gradient with respect to ``params`` (``jax.value_and_grad``) and
    apply the gradients with the state's optimizer.

    The caller passes the same ``dropout_key`` at every step: do not split or
    consume it. ``state`` is left as it was, and once warm, a loop of steps
    compiles nothing new.
    """
    # TODO: fold_in the step number, a loss function of params with rngs={"dropout": ...}, value_and_grad
    raise NotImplementedError


@jax.jit
def eval_step_dropout(state, batch):
    """The accuracy ``mean((logits > 0) == labels)`` of the model in evaluation mode.

    ``batch = (x, labels)``. With ``train=False`` Dropout is off: no key, no
    randomness, no rescaling, the same result every time. Changes nothing.
    """
    # TODO: apply with train=False (no rngs), squeeze, compare with the labels
    raise NotImplementedError


def mc_dropout_predict(state, x, key, n_samples):
    """Monte-Carlo dropout: the mean over ``n_samples`` random dropout masks of ``sigmoid(logits)``.

    ``keys = jax.random.split(key, n_samples)``; sample ``i`` is
    ``jax.nn.sigmoid`` of the squeezed logits of
    ``state.apply_fn({"params": state.params}, x, train=True,
    rngs={"dropout": keys[i]})``. Return the mean over the samples, float32
    (B,). Build it with ``jax.vmap`` over the keys (or ``jax.lax.map``), not a
    Python loop: the program must stay the same size for 4 or 1000 samples.
    Must work under ``jax.jit`` with ``n_samples`` static.
    """
    # TODO: split once into n_samples keys, vmap one sample over them, average
    raise NotImplementedError
