"""The shared TrainState scenario of the ``training`` and ``batchnorm`` checks.

A model trained with SGD on ``TRAIN_SIZE`` XOR points of ``data``'s reference
``XORDataset``, in batches of ``BATCH`` (the last batch of every epoch is
smaller) for ``EPOCHS`` epochs of a real shuffling ``DataLoader``. Every input
is built with the references, so a bug in the student's ``data`` module fails
only that module's checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.checks import purity, values
from autograder.checks.keys import make_key
from autograder.core.failures import CheckFailure

TRAIN_SIZE, TEST_SIZE, BATCH, EPOCHS = 100, 36, 32, 3


# TrainState helpers of the check files (training, batchnorm, dropout_rngs) -----------------------------------

TRAIN_STATE_ADVICE = "build it with train_state.TrainState.create(apply_fn=..., params=..., tx=...)"


def given_state(create: Callable, model: Any, seed: int, learning_rate: float, sample: Any) -> Any:
    """A state a check is given: ``create(key, model, learning_rate, sample)`` (the reference's
    ``create_train_state*``), its key the legacy one drawn for "a given state" from ``seed``."""
    return create(drawn_key("a given state", seed, "legacy"), model, learning_rate, sample)


def created_state(create: Callable, model: Any, case: dict, sample: Any, kind: str | None = None) -> Any:
    """``create(key, model, case["learning_rate"], sample)`` for one of a check file's ``CREATE_CASES``, its key
    drawn for "create_train_state" from ``case["key"]`` (``(kind, seed)``), of ``kind`` when given."""
    key = drawn_key("create_train_state", case["key"][1], kind or case["key"][0])
    return create(key, model, case["learning_rate"], sample)


def assert_is_train_state(
    state: Any, check: str, *, function: str, field: str | None = None, advice: str = TRAIN_STATE_ADVICE
) -> None:
    """``state`` (what ``function`` returned) is a flax ``TrainState``, with a ``field`` field when one is named."""
    from flax.training import train_state

    if field is None:
        if isinstance(state, train_state.TrainState):
            return
        wanted = "a flax.training.train_state.TrainState"
    else:
        if isinstance(state, train_state.TrainState) and hasattr(state, field):
            return
        wanted = f"a TrainState with a {field} field"
    raise CheckFailure(check, f"{function} returned a {type(state).__qualname__}, not {wanted}", advice)


def run_step(
    step: Callable, state: Any, batch: Any, *rest: Any, returns: tuple[str, ...], function: str, check: str
) -> tuple:
    """``step(state, batch, *rest)`` on fresh copies of ``state`` and ``batch`` (a step may donate them), checked to
    return the tuple ``returns`` names."""
    result = step(purity.fresh_copy(state), purity.fresh_copy(batch), *rest)
    return values.assert_returns_tuple(result, returns, function=function, check=check)


def epochs_of(loader: Any, epochs: int) -> list[tuple[str, Any]]:
    """``(label, batch)`` of every step of ``epochs`` passes over ``loader``, in order (a shuffling loader gives
    each epoch its own order); the label names the step, the epoch and the batch."""
    return [
        (
            f"at step {e * len(loader) + i + 1} (epoch {e + 1}, batch {i + 1} of {len(loader)}, {len(batch[0])} examples)",
            batch,
        )
        for e in range(epochs)
        for i, batch in enumerate(loader)
    ]


class EpochsLoader:
    """A loader as a check gives one: its ``k``-th pass yields the ``k``-th of ``epochs`` (the batches of a real
    shuffling ``DataLoader``'s passes, in order: a new order per epoch). It is data, digested by the batches it
    holds and the passes made, so the trusted side can replay a function that takes one; a pass beyond the
    last epoch starts them again."""

    def __init__(self, epochs: list[list[Any]]):
        self.epochs, self.passes = epochs, 0

    def __len__(self) -> int:
        return len(self.epochs[0])

    def __iter__(self):
        epoch, self.passes = self.epochs[self.passes % len(self.epochs)], self.passes + 1
        return iter(purity.fresh_copy(epoch))

    def __repr__(self) -> str:
        return f"<a loader of {len(self.epochs)} epochs of {len(self)} batches>"

    def plain_data(self, enc: Callable) -> list:
        return ["epochs", enc(self.epochs), self.passes]


def passes_of(loader: Any, epochs: int) -> list[list[Any]]:
    """The batches of ``epochs`` passes over ``loader``, one list per pass."""
    return [list(loader) for _ in range(epochs)]


def epoch_batches(data: Any, *, epochs: int = EPOCHS) -> list[tuple[str, Any]]:
    """``(label, batch)`` of every step of ``epochs`` epochs of the scenario's shuffling DataLoader: the batches a
    check runs the student's own steps over, from a given start state, comparing each with the reference's
    step from the same state (``oracle.continue_from``)."""
    return epochs_of(xor_loader(data, TRAIN_SIZE, 7, BATCH, shuffle_seed=3), epochs)


def states_trained_elsewhere(step: Callable, data: Any, start: Any, *, epochs: int = EPOCHS) -> list[Any]:
    """The first, a middle and the last state of the reference ``step`` trained from ``start`` on other data than
    :func:`epoch_batches` (a given of the checks of other properties and of evaluation: never a state on the
    path the training checks judge)."""
    states = [start]
    for _, next_batch in epochs_of(xor_loader(data, TRAIN_SIZE, 8, BATCH, shuffle_seed=4), epochs):
        states.append(step(states[-1], next_batch)[0])
    return [states[0], states[len(states) // 2], states[-1]]


def evaluation_batches(data: Any) -> list:
    """The batches of a held-out XOR set, in order."""
    return list(xor_loader(data, TEST_SIZE, 11, BATCH))


def unseen_step(state: Any, i: int) -> Any:
    """A fresh copy of ``state`` at a step number no other check used, as in a long training run
    (a step that passes ``int(state.step)`` as a static argument retraces for every new value)."""
    return purity.fresh_copy(state.replace(step=state.step + 1000 * (i + 1)))


def full_batches(steps: list[tuple[str, Any]], size: int = BATCH) -> list:
    """The batches of ``steps`` (``(label, batch)``) that hold ``size`` examples: one shape, so a jitted step
    must not retrace on them."""
    return [batch for _, batch in steps if len(batch[0]) == size]


def two_steps(start: Any, trained: Any, steps: list[tuple[str, Any]]) -> list[tuple[str, Any, Any]]:
    """``(label, state, batch)`` of the checks of other properties: the start state on the first batch, and a
    state trained elsewhere on the second."""
    return [
        (steps[0][0], start, steps[0][1]),
        (
            f"from a trained state at step {int(trained.step)}, batch of {len(steps[1][1][0])} examples",
            trained,
            steps[1][1],
        ),
    ]


def eval_cases(states: list[Any], batches: list) -> list[tuple[str, Any, Any]]:
    """(label, state, batch): every state (early, middle and final ones) on every evaluation batch.

    With batch normalisation, their running averages differ from the batches' statistics,
    so the mode (``train=False``) shows in the accuracy."""
    return [(f"state at step {int(s.step)}, test batch of {len(b[0])}", s, b) for s in states for b in batches]


def eval_cases_of_two_models(states: list[Any], other_start: Any, batches: list, model: str, other: str) -> list[tuple]:
    """(label, state, batch, model): :func:`eval_cases` of ``states`` (a ``model``), then ``other_start`` (a state of
    ``other``, another model size) on every batch: an evaluation must run the state's model."""
    cases = [(label, state, batch, model) for label, state, batch in eval_cases(states, batches)]
    return cases + [(f"with a {other} state, test batch of {len(b[0])}", other_start, b, other) for b in batches]


def sample_input(n: int) -> np.ndarray:
    """``n`` float32 XOR-like points in [-1, 1], to initialise a model with."""
    return np.linspace(-1, 1, n * 2, dtype=np.float32).reshape(n, 2)


_instructor_seed: int | None = None


def use_instructor_seed(seed: int) -> None:
    """Draw the scenarios from ``seed`` in this process (``grade --seed N``: the pytest plugin's ``use_seed``)."""
    global _instructor_seed
    _instructor_seed = seed


def instructor_seed() -> int | None:
    """The seed of ``grade --seed N`` (``--grading-seed``) in this process, or None (the published inputs)."""
    return _instructor_seed


def instructor_rng(label: str) -> np.random.Generator | None:
    """A generator drawn from the instructor's seed (``grade --seed N``) and ``label`` (one stream per scenario),
    or None when no seed was given: the published scenario, whose answers a public check file spells."""
    import zlib

    seed = instructor_seed()
    return None if seed is None else np.random.default_rng([seed, zlib.crc32(label.encode())])


def saved_steps(label: str, published: tuple[int, ...], keep: int) -> tuple[tuple[int, ...], int]:
    """``(steps, keep)``: the steps a checkpoint scenario saves, in order, and how many its manager keeps.
    Without an instructor seed, ``published`` and ``keep``; with one, as many distinct steps as ``published``
    drawn from 1..999 (sorted) and a ``keep`` of 2 or 3 below their number, so that the steps kept (the
    scenario's expected answer) are the instructor's, not the ones a public check file spells."""
    rng = instructor_rng(label)
    if rng is None:
        return tuple(published), keep
    new_keep = int(rng.integers(2, min(3, len(published) - 1) + 1))
    while True:
        steps = tuple(sorted(int(s) for s in rng.choice(np.arange(1, 1000), size=len(published), replace=False)))
        if steps[-new_keep:] != tuple(published)[-keep:]:  # never the published answer
            return steps, new_keep


# The published seeds of the course's scenarios are small numbers (keys, datasets, loaders: all below
# DRAWN_SEEDS[0]); an instructor's are drawn at or above it, so they never equal a published one.
DRAWN_SEEDS = (1000, 2**31 - 1)


def drawn_seed(label: str, published: int) -> int:
    """The seed a check builds an input from (a key, a dataset, a loader's shuffle): ``published`` without an
    instructor seed (the inputs a release recorded answers for, which a public check file spells), and with
    one a seed drawn from it, ``label`` (what the seed builds) and ``published`` (one stream per input), never a
    published one."""
    rng = instructor_rng(f"{label} {published}")
    return published if rng is None else int(rng.integers(*DRAWN_SEEDS))


def drawn_key(label: str, published: int, kind: str = "typed") -> Any:
    """``make_key(drawn_seed(label, published), kind)``: a key a check gives (a model's init, a dropout base key)."""
    return make_key(drawn_seed(label, published), kind)


def xor_loader(data: Any, size: int, data_seed: int, batch: int, *, shuffle_seed: int | None = None) -> Any:
    """``data.make_loader(data.XORDataset(size, data_seed), batch, ...)`` of the reference ``data``, shuffling with
    ``shuffle_seed`` when one is given; both seeds are :func:`drawn_seed` ones (the published ones without an
    instructor seed)."""
    dataset = data.XORDataset(size, drawn_seed("XORDataset", data_seed))
    if shuffle_seed is None:
        return data.make_loader(dataset, batch, shuffle=False)
    return data.make_loader(dataset, batch, shuffle=True, seed=drawn_seed("make_loader shuffle", shuffle_seed))
