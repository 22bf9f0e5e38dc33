"""Checks for module 3, ``data``: run ``pytest exercises/test_data.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. The loaders are real ``torch.utils.data.DataLoader``s.
"""

import functools

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from autograder.checks import datasets, loaders, purity, structure, values
from autograder.checks.loaders import SampleDataset, indexed_samples
from autograder.checks.strategies import collate_batches, integers

correctness = pytest.mark.correctness
# Decided on the trusted side from recorded values (issue 42): the check reads what a form of the student's function
# returned (structure.transformed_once), and the trusted side runs the same reading on the recorded values.
values_decided = pytest.mark.decided("values")

# A fixed batch source for the DataLoader checks: nested tuples, dicts and
# lists of arrays of several dtypes, NumPy scalars and Python numbers.
LOADER_SAMPLES = [
    (
        np.array([i, i + 0.5, -i], np.float32),
        {"label": np.int32(i % 2), "weight": 0.25 * i, "mask": np.array([i % 2 == 0, True])},
        [np.int64(10 * i), np.full((2, 2), i, np.uint8), i],
    )
    for i in range(10)
]
LOADER_BATCH_SIZE = 4


# numpy_collate --------------------------------------------------------------


@correctness
@given(batch=collate_batches())
@example(batch=[(np.zeros(2, np.float32), np.int32(0)), (np.ones(2, np.float32), np.int32(1))])
@example(batch=[{"x": np.arange(3), "y": [1.5, True]}, {"x": np.arange(3) + 1, "y": [2.5, False]}])
@example(
    batch=[  # integers at their extremes: a trip through float32 (or float64, for int64) rounds them
        (np.array([2**31 - 1, -(2**31)], np.int32), np.int64(2**53 + 1), np.uint8(255)),
        (np.array([2**24 + 1, 0], np.int32), np.int64(-(2**63)), np.uint8(0)),
    ]
)
def test_numpy_collate_matches_reference(student, reference, batch):
    """Structure (tuples and lists → a list), np.ndarray leaves only, dtypes and values."""
    expected = reference.numpy_collate(batch)
    got = student.numpy_collate(batch)
    loaders.assert_numpy_batch(got, expected, check="numpy_collate(batch) equals the reference on generated batches")


@values_decided
@given(batch=collate_batches())
def test_numpy_collate_leaves_the_batch_unchanged(student, batch):
    """The batch list, its samples and their arrays are left as they were: decided from the batch as the call left
    it (recorded as values) and compared, on the trusted side too, with the check's own batch."""
    purity.assert_arguments_unchanged_by_values(student.numpy_collate, batch)


@pytest.mark.decided("source", "module_state")
@given(batch=collate_batches())
def test_numpy_collate_keeps_no_module_state(student, batch):
    purity.assert_module_state_unchanged(student, student.numpy_collate, batch)


def collated_by_a_dataloader(numpy_collate):
    """``numpy_collate`` as the ``collate_fn`` of a real DataLoader over :data:`LOADER_SAMPLES` in batches of
    :data:`LOADER_BATCH_SIZE`, as data: the batches it yields with ``num_workers`` worker processes."""

    def batches(num_workers):
        return loaders.load_batches(
            SampleDataset(LOADER_SAMPLES),
            numpy_collate,
            batch_size=LOADER_BATCH_SIZE,
            num_workers=num_workers,
            fn_name="numpy_collate",
        )

    return batches


@values_decided
@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_numpy_collate_works_in_a_dataloader(student, reference, num_workers):
    """A real DataLoader, in the main process and with two forked workers (deadlocks fail, not hang): its batches
    are NumPy and the reference's numpy_collate of the same samples (decided from the batches, recorded as values;
    that the workers collated them is the next check's)."""
    batches = structure.transformed_once(student.numpy_collate, "collated by a DataLoader", collated_by_a_dataloader)(
        num_workers
    )
    chunks = [LOADER_SAMPLES[i : i + LOADER_BATCH_SIZE] for i in range(0, len(LOADER_SAMPLES), LOADER_BATCH_SIZE)]
    check = f"numpy_collate works as the collate_fn of a DataLoader with num_workers={num_workers}"
    loaders.assert_batch_count(batches, len(chunks), check=check)
    for i, (got, chunk) in enumerate(zip(batches, chunks)):
        loaders.assert_numpy_batch(
            got,
            reference.numpy_collate(chunk),
            name=f"batches[{i}]",
            check=check,
            source=f"the reference's numpy_collate of samples {i * LOADER_BATCH_SIZE}..",
        )


@pytest.mark.timeout(120)
def test_numpy_collate_runs_in_the_dataloaders_worker_processes(student):
    """Observed in the process that runs it: two forked DataLoader workers run numpy_collate and hand over every
    batch (a deadlock or an error in a worker fails it; what the batches hold is the check above's)."""
    batches = loaders.load_batches(
        SampleDataset(LOADER_SAMPLES),
        student.numpy_collate,
        batch_size=LOADER_BATCH_SIZE,
        num_workers=2,
        fn_name="numpy_collate",
    )
    loaders.assert_batch_count(
        batches,
        len(range(0, len(LOADER_SAMPLES), LOADER_BATCH_SIZE)),
        check="numpy_collate runs in the worker processes of a DataLoader with num_workers=2",
    )


# XORDataset -----------------------------------------------------------------

sizes = st.sampled_from([1, 7, 64, 500])
seeds = integers(0, 2**32 - 1)
stds = st.sampled_from([0.1, 0.0, 0.5, 1.5])


@correctness
@given(size=sizes, seed=seeds, std=stds)
@example(size=200, seed=42, std=0.1)
def test_XORDataset_matches_reference(student, reference, size, seed, std):
    """Attributes ``data`` (float32 (size, 2)) and ``label`` (int32 (size,)) and ``len``."""
    expected = reference.XORDataset(size, seed, std)
    ds = student.XORDataset(size, seed, std)
    numpy_only = "XORDataset keeps data and label in NumPy arrays (DataLoader workers must not run JAX or torch)"
    values.assert_leaf_types(ds.data, (np.ndarray,), name="ds.data", check=numpy_only)
    values.assert_leaf_types(ds.label, (np.ndarray,), name="ds.label", check=numpy_only)
    check = "XORDataset(size, seed, std) has the reference's data and label"
    values.assert_trees_close(ds.data, expected.data, rtol=1e-6, atol=1e-6, name="ds.data", check=check)
    values.assert_trees_close(ds.label, expected.label, rtol=0, atol=0, name="ds.label", check=check)
    values.assert_trees_close(len(ds), len(expected), name="len(ds)", check=check)


@values_decided
@given(size=sizes, seed=seeds)
def test_XORDataset_default_std_is_0_1(student, size, seed):
    expected = student.XORDataset(size, seed, 0.1)
    ds = student.XORDataset(size, seed)
    values.assert_trees_close(
        ds.data,
        expected.data,
        rtol=1e-6,
        atol=1e-6,
        name="ds.data",
        check="XORDataset(size, seed) uses std=0.1",
        source="XORDataset(size, seed, 0.1).data",
    )


def items_of(XORDataset):
    """``XORDataset`` as data: what it is unless a torch Dataset, and at three indices its items ``ds[i]`` and the pairs
    ``(ds.data[i], ds.label[i])`` (the trusted side reads them as the student's process does)."""

    def items(size, seed, std):
        ds = XORDataset(size, seed, std)
        indices = sorted({0, size // 2, size - 1})
        not_dataset = datasets.not_a_dataset(ds)
        if not_dataset is not None:
            return not_dataset, indices, [], []
        return None, indices, [ds[i] for i in indices], [(ds.data[i], ds.label[i]) for i in indices]

    return items


@values_decided
@given(size=st.sampled_from([1, 7, 64]), seed=seeds, std=stds)
def test_XORDataset_items_are_data_label_pairs(student, size, seed, std):
    """A torch Dataset whose ``ds[i]`` is ``(ds.data[i], ds.label[i])`` of its own arrays, so that a batch of items
    keeps their dtypes (whether data and label are right is the correctness check's)."""
    not_dataset, indices, items, pairs = structure.transformed_once(student.XORDataset, "items", items_of)(
        size, seed, std
    )
    datasets.assert_kind_is_dataset(not_dataset, "XORDataset")
    check = "XORDataset's ds[i] is the pair (data[i], label[i])"
    for i, item, pair in zip(indices, items, pairs):
        values.assert_trees_close(
            item,
            pair,
            rtol=0,
            atol=0,
            name=f"ds[{i}]",
            check=check,
            source=f"(ds.data[{i}], ds.label[{i}])",
        )
    stacked = (np.asarray([item[0] for item in items]), np.asarray([item[1] for item in items]))
    values.assert_trees_close(
        stacked,
        (np.asarray([pair[0] for pair in pairs]), np.asarray([pair[1] for pair in pairs])),
        rtol=0,
        atol=0,
        name=f"a batch of ds[i] for i in {indices}",
        check="a batch of XORDataset items keeps the dtypes of ds.data and ds.label (float32 data, int32 labels)",
        source="ds.data and ds.label",
    )


@values_decided
@given(size=st.sampled_from([1, 7, 64]), seed=seeds, std=stds)
def test_XORDataset_items_are_numpy(student, size, seed, std):
    """``ds[i]`` is built in DataLoader worker processes: NumPy only, never jax.Array or torch.Tensor (recorded as
    data, an array keeps its kind: NumPy, NumPy scalar or jax.Array; a torch.Tensor is not data, so not recorded)."""
    _, indices, items, _ = structure.transformed_once(student.XORDataset, "items", items_of)(size, seed, std)
    for i, item in zip(indices, items):
        datasets.assert_numpy_sample(item, name=f"ds[{i}]", dataset="XORDataset")


def loaded_by_workers(XORDataset):
    """``XORDataset(size, seed)`` as data: the uncollated batches a DataLoader with two workers reads from it."""

    def batches(size, seed, batch_size):
        return loaders.load_batches(
            XORDataset(size, seed), list, batch_size=batch_size, num_workers=2, fn_name="XORDataset", role="dataset"
        )

    return batches


@values_decided
@pytest.mark.timeout(120)
def test_XORDataset_works_in_a_dataloader_with_workers(student):
    """A real DataLoader with two forked worker processes iterates the student's dataset (deadlocks fail, not hang).

    The batches are left uncollated (``collate_fn=list``): this judges the dataset in the workers, not a collate
    function. The batches must be the dataset's own items read in this process (whether those are right is the
    correctness check's).
    """
    size, seed, batch_size = 40, 5, 16
    batches = structure.transformed_once(student.XORDataset, "loaded by workers", loaded_by_workers)(
        size, seed, batch_size
    )
    expected = student.XORDataset(size, seed)
    check = "XORDataset works as the dataset of a DataLoader with num_workers=2"
    starts = range(0, size, batch_size)
    loaders.assert_batch_count(batches, len(starts), check=check)
    for j, start in enumerate(starts):
        chunk = [expected[i] for i in range(start, min(start + batch_size, size))]
        values.assert_trees_close(
            batches[j], chunk, rtol=0, atol=0, name=f"batches[{j}]", check=check, source="the dataset's items read here"
        )


@values_decided
@given(size=st.sampled_from([7, 64]), seed=seeds)
def test_XORDataset_uses_its_own_generator(student, size, seed):
    """``np.random.seed(seed)`` + ``np.random.randint`` reproduces the numbers but changes everyone's RNG."""
    purity.assert_global_rngs_untouched_by_values(student.XORDataset, size, seed, 0.1)


# make_loader ----------------------------------------------------------------


def collate_indexed_samples(samples):
    """What a right ``numpy_collate`` makes of :func:`~autograder.checks.loaders.indexed_samples`: ``[features
    (B, 2) float32, indices (B,) int32]``. It knows those samples only; while make_loader is judged it stands in
    for the student's numpy_collate, so a bug there fails numpy_collate's checks only."""
    return [np.stack([np.asarray(s[0]) for s in samples]), np.array([s[1] for s in samples], np.int32)]


@pytest.fixture
def loader_module(student, monkeypatch):
    """The student's module with ``numpy_collate`` swapped for :func:`collate_indexed_samples`: make_loader is
    judged on its own, and no reference is lent to the student's module."""
    monkeypatch.setattr(student, "numpy_collate", collate_indexed_samples, raising=False)
    return student


def epoch_form(make_loader):
    """``make_loader`` on ``n`` indexed samples, as data: the per-batch sample indices of one pass over it."""

    def epoch(n, batch_size, shuffle, **kwargs):
        loader = make_loader(SampleDataset(indexed_samples(n)), batch_size, shuffle, **kwargs)
        loaders.assert_is_dataloader(loader, "make_loader")
        return loaders.epoch(loader, "make_loader")

    return epoch


def epoch_of(module, n, batch_size, shuffle, **kwargs):
    """The per-batch sample indices of one pass over ``make_loader`` on ``n`` indexed samples: recorded as data, so
    a check reading them is decided on the trusted side (its verdict follows from the recorded orders)."""
    return structure.transformed_once(module.make_loader, "epoch", epoch_form)(n, batch_size, shuffle, **kwargs)


def on_indexed_samples(make_loader):
    """``make_loader`` given the number ``n`` of indexed samples instead of a dataset of them (arguments as data)."""
    return lambda n, *args, **kwargs: make_loader(SampleDataset(indexed_samples(n)), *args, **kwargs)


def epochs_under_global_seeds_form(make_loader):
    """Two loaders made with ``seed``, one iterated after ``torch.manual_seed(1)``, the other after ``torch.manual_seed(2)``."""

    def epochs(seed):
        orders = []
        for global_seed in (1, 2):
            loader = make_loader(SampleDataset(indexed_samples(64)), 8, True, seed=seed)
            loaders.assert_is_dataloader(loader, "make_loader")
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(global_seed)
                orders.append(loaders.epoch(loader, "make_loader"))
        return orders

    return epochs


def made_together_form(make_loader):
    """For two seeds: an epoch of a loader made alone with each, and epochs of two loaders made together, interleaved."""

    def made_together(first_seed, second_seed):
        def make(seed):
            loader = make_loader(SampleDataset(indexed_samples(64)), 8, True, seed=seed)
            loaders.assert_is_dataloader(loader, "make_loader")
            return loader

        seeds = (first_seed, second_seed)
        alone = [loaders.epoch(make(seed), "make_loader") for seed in seeds]
        together = loaders.interleaved_epochs([make(seed) for seed in seeds], "make_loader")
        return alone, together

    return made_together


def batches_of(make_loader):
    """``make_loader`` on ``n`` indexed samples, as data: its batches (the trusted side compares them with the
    check's own, so its verdict is decided there, not in the student's process)."""

    def batches(n, batch_size, shuffle, seed, drop_last):
        loader = make_loader(SampleDataset(indexed_samples(n)), batch_size, shuffle, seed=seed, drop_last=drop_last)
        loaders.assert_is_dataloader(loader, "make_loader")
        return list(loader)

    return batches


@correctness
@pytest.mark.parametrize("drop_last", [False, True])
def test_make_loader_gives_numpy_batches(loader_module, drop_last):
    """Batches as the module's numpy_collate builds them from consecutive samples (shuffle=False)."""
    samples = indexed_samples(10)
    batches = structure.transformed_once(loader_module.make_loader, "batches", batches_of)(10, 4, False, 0, drop_last)
    check = "make_loader's batches are numpy_collate of the samples"
    starts = range(0, 8 if drop_last else 10, 4)
    loaders.assert_batch_count(batches, len(starts), check=check)
    for j, start in enumerate(starts):
        expected = collate_indexed_samples(samples[start : start + 4])
        loaders.assert_numpy_batch(
            batches[j],
            expected,
            name=f"batches[{j}]",
            check=check,
            source=f"numpy_collate of samples {start}..{start + 3}",
        )


@values_decided
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_make_loader_honours_batch_size_shuffle_and_drop_last(loader_module, shuffle, drop_last):
    for n, batch_size in ((10, 4), (64, 8), (3, 5)):
        order = epoch_of(loader_module, n, batch_size, shuffle, seed=1, drop_last=drop_last)
        loaders.assert_epoch_batches(
            order, n, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, fn_name="make_loader"
        )


@values_decided
@pytest.mark.parametrize("seed", [0, 7])
def test_make_loader_same_seed_same_order_whatever_the_global_rng(loader_module, seed):
    """The order comes from a generator seeded with ``seed``, not from torch's global RNG."""
    orders = structure.transformed_once(
        loader_module.make_loader, "under global seeds", epochs_under_global_seeds_form
    )(seed)
    loaders.assert_same_order(
        *orders,
        check="make_loader(..., seed) visits the samples in an order fixed by seed alone",
        problem=f"two loaders made with seed={seed} shuffled differently after torch.manual_seed changed",
        advice="the order comes from torch's global RNG: give the DataLoader its own "
        "generator=torch.Generator().manual_seed(seed)",
    )


@values_decided
def test_make_loader_order_depends_on_seed(loader_module):
    orders = [epoch_of(loader_module, 64, 8, True, seed=seed) for seed in (0, 1, 2)]
    loaders.assert_seed_changes_order(orders, seeds=(0, 1, 2), fn_name="make_loader")


@values_decided
def test_make_loader_default_seed_is_0(loader_module):
    """``seed=0`` is the contract's default: a loader made without a seed visits the samples in seed 0's order."""
    without = epoch_of(loader_module, 64, 8, True)
    with_zero = epoch_of(loader_module, 64, 8, True, seed=0)
    loaders.assert_same_order(
        with_zero,
        without,
        check="make_loader(dataset, batch_size, shuffle) without a seed shuffles as with seed=0",
        problem="make_loader(dataset, 8, True) shuffled differently than make_loader(dataset, 8, True, seed=0)",
        advice="keep the signature make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False): "
        "the default seed is 0",
    )


@values_decided
@pytest.mark.parametrize("shuffle", [False, True])
def test_make_loader_keeps_the_last_short_batch_by_default(loader_module, shuffle):
    """``drop_last=False`` is the contract's default: without it, 10 samples in batches of 4 are 4, 4 and 2."""
    for n, batch_size in ((10, 4), (3, 5)):
        order = epoch_of(loader_module, n, batch_size, shuffle)
        loaders.assert_epoch_batches(
            order,
            n,
            batch_size=batch_size,
            shuffle=shuffle,
            drop_last=False,
            fn_name="make_loader (without drop_last, whose default is False)",
        )


@values_decided
@pytest.mark.parametrize("seeds", [(0, 0), (0, 5)], ids=["same-seed", "other-seeds"])
def test_make_loader_loaders_made_together_keep_their_own_order(loader_module, seeds):
    """Loaders made before either is iterated, iterated in turn (a training and a validation loader), each give
    the order their seed gives alone: no generator is shared between calls."""
    alone, together = structure.transformed_once(loader_module.make_loader, "made together", made_together_form)(*seeds)
    for which, (seed, order, expected) in enumerate(zip(seeds, together, alone)):
        loaders.assert_same_order(
            expected,
            order,
            check="loaders made by make_loader each keep the order of their own seed, however they are interleaved",
            problem=f"of two loaders made with seeds {seeds[0]} and {seeds[1]} before either was iterated, loader "
            f"#{which + 1} (seed={seed}) shuffled differently than a loader made alone with seed={seed}",
            advice="the loaders share one random generator (a module-level torch.Generator re-seeded on every call): "
            "create a new generator in every call, torch.Generator().manual_seed(seed)",
        )


@pytest.mark.decided("source", "module_state")
def test_make_loader_keeps_no_module_state(loader_module):
    """Making a loader and iterating it changes nothing at module level (a shared generator, a list of loaders)."""

    @functools.wraps(loader_module.make_loader)
    def make_loader_and_iterate(*args, **kwargs):
        return loaders.epoch(loader_module.make_loader(*args, **kwargs), "make_loader")

    purity.assert_module_state_unchanged(
        loader_module, make_loader_and_iterate, SampleDataset(indexed_samples(16)), 4, True, seed=2024
    )


@values_decided
def test_make_loader_leaves_global_rngs_untouched(loader_module):
    """Seeding torch globally (torch.manual_seed) inside make_loader changes everyone's random numbers."""
    purity.assert_global_rngs_untouched_by_values(
        loader_module.make_loader, 16, 4, True, seed=3, first=("on indexed samples", on_indexed_samples)
    )
