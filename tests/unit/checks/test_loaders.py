"""The data-loading and global-RNG checks themselves: they catch what they claim, and are fast."""

import random
import threading
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

from autograder.checks import datasets, loaders, purity
from autograder.core.failures import CheckFailure


def stuck_in_workers(batch):
    """A collate function that never returns in a worker process (as a deadlocked one would)."""
    if tud.get_worker_info() is not None:
        threading.Event().wait()
    return np.stack(batch)


def test_a_stuck_worker_fails_the_check_instead_of_hanging():
    dataset = loaders.SampleDataset([np.zeros(2, np.float32)] * 8)
    start = time.monotonic()
    with pytest.raises(CheckFailure, match=r"produced no batch within 2 s: they are stuck"):
        loaders.load_batches(dataset, stuck_in_workers, batch_size=4, num_workers=2, timeout=2, fn_name="collate")
    assert time.monotonic() - start < 8


def test_workers_and_main_process_give_the_same_batches():
    dataset = loaders.SampleDataset([(np.full(2, i, np.float32), i) for i in range(9)])
    collate = tud.default_collate
    main = loaders.load_batches(dataset, collate, batch_size=4, num_workers=0)
    workers = loaders.load_batches(dataset, collate, batch_size=4, num_workers=2)
    assert len(main) == len(workers) == 3
    for a, b in zip(main, workers):
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_a_collate_that_empties_its_samples_changes_no_later_loaders_samples():
    """Each item is a fresh copy: a check run after one whose collate function emptied the samples judges the same
    samples as the trusted side (the in-process verdict and grade's disagreed on such a collate)."""
    samples = [{"x": np.full(2, i, np.float32), "y": i} for i in range(4)]

    def emptying(batch):
        return {k: np.stack([np.asarray(s.pop(k)) for s in batch]) for k in list(batch[0])}

    for _ in range(2):
        [batch] = loaders.load_batches(loaders.SampleDataset(samples), emptying, batch_size=4)
        assert sorted(batch) == ["x", "y"] and batch["y"].tolist() == [0, 1, 2, 3]
    assert all(sorted(s) == ["x", "y"] for s in samples)


def test_an_error_in_the_collate_function_is_reported():
    def broken(batch):
        raise ValueError("boom")

    dataset = loaders.SampleDataset([np.zeros(2)] * 4)
    with pytest.raises(ValueError, match="boom"):  # in the main process: the error itself, with its line
        loaders.load_batches(dataset, broken, batch_size=2, num_workers=0)
    with pytest.raises(CheckFailure, match=r"iterating the DataLoader failed: ValueError: .*worker(.*\n)*.*boom"):
        loaders.load_batches(dataset, broken, batch_size=2, num_workers=2)


@pytest.mark.parametrize(
    "leaf, pattern",
    [
        (torch.zeros(2, 3), r"batch\[0\] is a torch\.Tensor.*"),
        (np.float32(1.0), r"batch\[0\] is a single numpy\.float32 scalar"),
        ([np.zeros(3)] * 2, r"batch\[0\] is a list of 2 items"),
        (np.ma.zeros((2, 3)), r"batch\[0\] is a numpy\.MaskedArray \(a subclass\)"),
    ],
)
def test_numpy_batch_rejects_non_ndarray_leaves(leaf, pattern):
    with pytest.raises(CheckFailure, match=pattern):
        loaders.assert_numpy_batch([leaf], [np.zeros((2, 3), np.float32)], name="batch")


def test_numpy_batch_rejects_jax_arrays_with_the_reason():
    import jax.numpy as jnp

    with pytest.raises(CheckFailure) as info:
        loaders.assert_numpy_batch({"x": jnp.zeros(3)}, {"x": np.zeros(3, np.float32)}, name="batch")
    assert "batch['x'] is a jax.Array" in str(info.value) and "deadlocks" in str(info.value)


def test_numpy_batch_compares_dtypes_and_values_exactly():
    loaders.assert_numpy_batch([np.arange(3)], [np.arange(3)])
    with pytest.raises(CheckFailure, match=r"result\[0\] has dtype int32, expected int64"):
        loaders.assert_numpy_batch([np.arange(3, dtype=np.int32)], [np.arange(3, dtype=np.int64)])
    with pytest.raises(CheckFailure, match=r"differs from the reference at 1 of 3"):
        loaders.assert_numpy_batch([np.array([0.0, 1.0, 2.0 + 1e-7])], [np.array([0.0, 1.0, 2.0])])


@pytest.mark.parametrize(
    "draw, name",
    [
        (lambda: np.random.seed(0), "NumPy's global RNG"),
        (lambda: np.random.normal(), "NumPy's global RNG"),
        (lambda: random.random(), "Python's random module"),
        (lambda: torch.manual_seed(3), "torch's global RNG"),
        (lambda: torch.randperm(4), "torch's global RNG"),
    ],
)
def test_global_rng_use_is_caught(draw, name):
    state = np.random.get_state()
    with pytest.raises(CheckFailure, match=f"changed the state of {name}"):
        purity.assert_global_rngs_untouched(draw)
    assert np.array_equal(np.random.get_state()[1], state[1]), "the check must restore the global RNGs"


def test_own_generators_are_fine():
    def own():
        np.random.RandomState(1).normal(size=3)
        torch.randperm(4, generator=torch.Generator().manual_seed(1))
        return random.Random(2).random()

    assert purity.assert_global_rngs_untouched(own) == random.Random(2).random()


def test_numpy_sample_accepts_numpy_and_names_the_first_other_leaf():
    import jax.numpy as jnp

    datasets.assert_numpy_sample((np.zeros(2, np.float32), np.int32(1)), name="ds[0]", dataset="Toy")
    with pytest.raises(CheckFailure, match=r"ds\[0\]\[1\] is a jax\.Array(.*\n)*.*forked worker processes"):
        datasets.assert_numpy_sample((np.zeros(2), jnp.int32(1)), name="ds[0]", dataset="Toy")
    with pytest.raises(CheckFailure, match=r"ds\[3\]\[0\] is a torch\.Tensor"):
        datasets.assert_numpy_sample((torch.zeros(2), np.int32(1)), name="ds[3]", dataset="Toy")


def test_interleaved_epochs_expose_a_generator_shared_between_loaders():
    dataset = loaders.SampleDataset(loaders.indexed_samples(32))
    shared = torch.Generator()

    def make(seed, generator=None):
        generator = generator or torch.Generator()
        return tud.DataLoader(dataset, batch_size=4, shuffle=True, generator=generator.manual_seed(seed))

    alone = loaders.epoch(make(0), "make")
    assert loaders.interleaved_epochs([make(0), make(0)], "make") == [alone, alone]
    first, second = loaders.interleaved_epochs([make(0, shared), make(0, shared)], "make")
    assert first != alone or second != alone
