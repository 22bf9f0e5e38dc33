"""Module 5 — training a Flax model with Optax, the functional way.

In PyTorch a model owns its weights and an optimizer holds pointers to them;
``loss.backward()`` and ``optimizer.step()`` change both in place. In JAX
nothing changes in place, so training is written as a pure function from an
old state to a new one:

    new_state = train_step(state, batch)

Three libraries share the work:

* **Flax** (``flax.linen``) describes the model. A ``nn.Module`` holds no
  weights: ``params = model.init(rng, sample_input)`` creates a pytree (nested
  dicts of arrays) and ``model.apply(params, x)`` runs the model with it.
* **Optax** describes the optimizer as a *gradient transformation*:
  ``tx = optax.sgd(0.1)`` owns no parameters either. ``tx.init(params)``
  creates its state (momentum buffers, counters; plain SGD has none) and
  ``tx.update(grads, opt_state)`` turns gradients into updates.
* **TrainState** (``flax.training.train_state``) bundles everything one step
  needs: ``step``, ``params``, ``opt_state``, ``apply_fn`` (``model.apply``)
  and ``tx``. ``TrainState.create(apply_fn=..., params=..., tx=...)`` calls
  ``tx.init`` for you; ``state.apply_gradients(grads=grads)`` runs the
  optimizer and returns a *new* state with ``step + 1``; the old one is left
  as it was. A TrainState is a pytree, so it can be passed to ``jax.jit``:
  ``apply_fn`` and ``tx`` are static fields (part of what jit compiles for),
  the arrays are traced.

One training step is then: compute the loss and its gradient with respect to
the parameters (``jax.value_and_grad``), apply the gradient, return the new
state. Wrapped in ``jax.jit`` it is traced once and then runs as one compiled
XLA program per batch shape. Anything created anew on every call (an
optimizer, a lambda, a ``jax.jit``) or read back to Python from a traced value
makes it trace again, which costs a full compilation per step.

``SimpleClassifier`` is given. Run the checks with

    pytest exercises/test_training.py
"""

import flax.linen as nn
import jax


class SimpleClassifier(nn.Module):
    """Dense(num_hidden) -> tanh -> Dense(num_outputs): one logit per example for XOR."""

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
    """Initialise ``model`` and bundle it with an SGD optimizer in a ``TrainState``.

    ``params = model.init(rng, sample_input)`` creates the parameters (the
    sample input only fixes their shapes). Return a
    ``flax.training.train_state.TrainState`` at step 0 whose ``apply_fn`` is
    ``model.apply``, whose ``params`` are those, and whose optimizer ``tx`` is
    plain SGD with ``learning_rate`` (``optax.sgd``).
    """
    # TODO: model.init, then train_state.TrainState.create(apply_fn=..., params=..., tx=...)
    raise NotImplementedError


def calculate_loss_acc(state, params, batch):
    """Return ``(loss, acc)`` of the model ``state.apply_fn`` with ``params`` on ``batch``.

    ``batch`` is ``(x, labels)`` (a tuple or a list): ``x`` float32 (B, 2),
    ``labels`` int32 (B,) of 0 and 1. Run the model with the ``params``
    *argument*, not ``state.params``: ``train_step`` differentiates this
    function with respect to ``params``, and a loss that reads another copy
    of the parameters has zero gradient.

    * ``logits = state.apply_fn(params, x).squeeze(-1)``, shape (B,)
    * ``loss`` is the mean binary cross-entropy *on the logits*:
      ``optax.sigmoid_binary_cross_entropy``. Applying a sigmoid first and
      taking logs of probabilities overflows for large logits.
    * ``acc`` is the fraction of examples where ``logits > 0`` (probability
      above 1/2) agrees with the label.
    """
    # TODO: forward pass with params, BCE on logits, accuracy with threshold 0
    raise NotImplementedError


@jax.jit
def train_step(state, batch):
    """One SGD step on ``batch``; return ``(new_state, loss, acc)``.

    Take the loss and its gradient with respect to the parameters in one pass
    with ``jax.value_and_grad(calculate_loss_acc, argnums=1, has_aux=True)``
    (``argnums=1``: the gradient is for the second argument, ``params``;
    ``has_aux=True``: the function returns ``(loss, acc)`` and only ``loss``
    is differentiated). Apply the gradients with the state's own optimizer
    and return the new state; ``state`` itself must not change.

    It is compiled with ``jax.jit``: called again with a batch of the same
    shape it must not trace again.
    """
    # TODO: value_and_grad of calculate_loss_acc, then state.apply_gradients(grads=...)
    raise NotImplementedError


@jax.jit
def eval_step(state, batch):
    """The accuracy of ``state.params`` on ``batch`` (a float32 scalar); changes nothing."""
    # TODO: reuse calculate_loss_acc with state.params
    raise NotImplementedError


def train_model(state, loader, num_epochs):
    """Train for ``num_epochs`` epochs and return the final state.

    One ``train_step`` per batch, for every batch of ``loader`` (its last
    batch may be smaller) in every epoch, in the order the loader gives
    them. The state returned by one step is the input of the next.
    """
    # TODO: two nested loops around train_step
    raise NotImplementedError
