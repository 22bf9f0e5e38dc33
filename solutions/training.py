"""Reference solution: Flax + Optax training with a functional ``train_step``."""

import flax.linen as nn
import jax
import optax
from flax.training import train_state


class SimpleClassifier(nn.Module):
    num_hidden: int
    num_outputs: int

    def setup(self):
        self.linear1 = nn.Dense(features=self.num_hidden)
        self.linear2 = nn.Dense(features=self.num_outputs)

    def __call__(self, x):
        x = self.linear1(x)
        x = nn.tanh(x)
        x = self.linear2(x)
        return x


def create_train_state(rng, model, learning_rate, sample_input):
    params = model.init(rng, sample_input)
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(learning_rate))


def calculate_loss_acc(state, params, batch):
    x, labels = batch
    logits = state.apply_fn(params, x).squeeze(axis=-1)
    loss = optax.sigmoid_binary_cross_entropy(logits, labels).mean()
    acc = ((logits > 0) == labels).mean()
    return loss, acc


@jax.jit
def train_step(state, batch):
    grad_fn = jax.value_and_grad(calculate_loss_acc, argnums=1, has_aux=True)
    (loss, acc), grads = grad_fn(state, state.params, batch)
    state = state.apply_gradients(grads=grads)
    return state, loss, acc


@jax.jit
def eval_step(state, batch):
    _, acc = calculate_loss_acc(state, state.params, batch)
    return acc


def train_model(state, loader, num_epochs):
    for _ in range(num_epochs):
        for batch in loader:
            state, _, _ = train_step(state, batch)
    return state
