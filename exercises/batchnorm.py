"""Module 6 — stateful layers: BatchNorm's running averages.

A Flax module holds no state, yet BatchNorm must remember something between
steps: the running mean and variance of its inputs, used at evaluation time
instead of the statistics of the current batch. They are not trained by
gradients, so they do not live in ``params`` but in a second *collection* of
variables, ``batch_stats``:

    variables = model.init(rng, x, train=False)
    variables["params"]        # trained by the optimizer
    variables["batch_stats"]   # {"BatchNorm_0": {"mean": ..., "var": ...}}

Flax cannot write into them behind your back. In training mode you pass the
current values in, declare the collection mutable, and get the new values
back next to the output:

    logits, updates = model.apply(
        {"params": params, "batch_stats": batch_stats}, x,
        train=True, mutable=["batch_stats"])
    updates["batch_stats"]   # the new running averages

Keeping them is your job: the new ``batch_stats`` go into the new state, just
like the new params. With ``momentum=0.9`` each step moves the running
averages 10% towards the statistics of the batch. Leave the current
``batch_stats`` out of the variables and Flax silently starts them again from
their initial values (mean 0, variance 1) on every step.

In evaluation (``train=False``) BatchNorm uses the running averages, nothing
is mutable, and nothing changes.

``BNClassifier`` and ``TrainStateBN`` are given. Run the checks with

    pytest exercises/test_batchnorm.py
"""

from typing import Any

import flax.linen as nn
import jax
import optax
from flax.training import train_state


class BNClassifier(nn.Module):
    """Dense(num_hidden) -> BatchNorm -> tanh -> Dense(num_outputs); batch statistics when ``train``."""

    num_hidden: int
    num_outputs: int

    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Dense(features=self.num_hidden)(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
        x = nn.tanh(x)
        x = nn.Dense(features=self.num_outputs)(x)
        return x


class TrainStateBN(train_state.TrainState):
    """A TrainState that also carries BatchNorm's running averages.

    ``batch_stats`` is a pytree field like ``params``: jax.jit traces it, and
    ``state.replace(batch_stats=...)`` or
    ``state.apply_gradients(grads=..., batch_stats=...)`` returns a new state
    with new values.
    """

    batch_stats: Any = None


def create_train_state_bn(rng, model, learning_rate, sample_input):
    """Initialise ``model`` (in evaluation mode) and return a ``TrainStateBN`` at step 0.

    ``variables = model.init(rng, sample_input, train=False)``; the state has
    ``apply_fn=model.apply``, ``params=variables["params"]``,
    ``batch_stats=variables["batch_stats"]`` and plain SGD with
    ``learning_rate`` as its optimizer.
    """
    # TODO: model.init(..., train=False), then TrainStateBN.create(...) with both collections
    raise NotImplementedError


@jax.jit
def train_step_bn(state, batch):
    """One SGD step on ``batch = (x, labels)``; return ``(new_state, loss)``.

    Run the model in training mode on ``{"params": params, "batch_stats":
    state.batch_stats}`` with ``mutable=["batch_stats"]``; ``loss`` is the
    mean ``optax.sigmoid_binary_cross_entropy`` of the logits (squeezed to
    (B,)) and ``labels``. Differentiate with respect to ``params`` only (the
    new batch statistics come out as an auxiliary result: ``has_aux=True``),
    apply the gradients, and store the new ``batch_stats`` in the returned
    state. ``state`` itself must not change, and a second call with
    same-shaped inputs must not trace again.
    """
    # TODO: a loss function of params returning (loss, updates); value_and_grad; apply_gradients + batch_stats
    raise NotImplementedError


@jax.jit
def eval_step_bn(state, batch):
    """The accuracy (logits > 0 agrees with the label) of the model in evaluation mode on ``batch``.

    Evaluation uses the running averages (``train=False``) and changes
    nothing: no mutable collection, no new state.
    """
    # TODO: apply with both collections and train=False, then the accuracy
    raise NotImplementedError
