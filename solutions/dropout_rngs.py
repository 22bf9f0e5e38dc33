"""Reference solution: Dropout with an explicit key for the 'dropout' stream."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.training import train_state


class DropoutClassifier(nn.Module):
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
    variables = model.init(rng, sample_input, train=False)
    return train_state.TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.sgd(learning_rate))


@jax.jit
def train_step_dropout(state, batch, dropout_key):
    x, labels = batch
    step_key = jax.random.fold_in(dropout_key, state.step)

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, x, train=True, rngs={"dropout": step_key}).squeeze(axis=-1)
        return optax.sigmoid_binary_cross_entropy(logits, labels).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


@jax.jit
def eval_step_dropout(state, batch):
    x, labels = batch
    logits = state.apply_fn({"params": state.params}, x, train=False).squeeze(axis=-1)
    return ((logits > 0) == labels).mean()


def mc_dropout_predict(state, x, key, n_samples):
    keys = jax.random.split(key, n_samples)

    def probabilities(sample_key):
        logits = state.apply_fn({"params": state.params}, x, train=True, rngs={"dropout": sample_key})
        return jax.nn.sigmoid(logits.squeeze(axis=-1))

    return jnp.mean(jax.vmap(probabilities)(keys), axis=0)
