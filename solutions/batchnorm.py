"""Reference solution: BatchNorm's running averages as explicit, mutable state."""

from typing import Any

import flax.linen as nn
import jax
import optax
from flax.training import train_state


class BNClassifier(nn.Module):
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
    batch_stats: Any = None


def create_train_state_bn(rng, model, learning_rate, sample_input):
    variables = model.init(rng, sample_input, train=False)
    return TrainStateBN.create(
        apply_fn=model.apply,
        params=variables["params"],
        batch_stats=variables["batch_stats"],
        tx=optax.sgd(learning_rate),
    )


@jax.jit
def train_step_bn(state, batch):
    x, labels = batch

    def loss_fn(params):
        logits, updates = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, x, train=True, mutable=["batch_stats"]
        )
        loss = optax.sigmoid_binary_cross_entropy(logits.squeeze(axis=-1), labels).mean()
        return loss, updates

    (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state = state.apply_gradients(grads=grads, batch_stats=updates["batch_stats"])
    return state, loss


@jax.jit
def eval_step_bn(state, batch):
    x, labels = batch
    logits = state.apply_fn({"params": state.params, "batch_stats": state.batch_stats}, x, train=False)
    return ((logits.squeeze(axis=-1) > 0) == labels).mean()
