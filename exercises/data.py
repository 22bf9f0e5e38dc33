"""Module 3 — feeding JAX from a PyTorch ``DataLoader``.

JAX has no data-loading library of its own, and it does not need one: loading
data is CPU work (reading files, shuffling, grouping samples into batches),
and PyTorch's ``torch.utils.data`` already does it well. So JAX projects often
keep PyTorch's ``Dataset`` and ``DataLoader`` and only change what comes out.

A ``DataLoader`` fetches ``batch_size`` samples, ``[dataset[i] for i in ...]``,
and hands that list to its *collate function*, whose result is the batch.
PyTorch's default collate stacks the samples into ``torch.Tensor``s, which a
jitted JAX function does not want. We replace it with ``numpy_collate``, which
does the same stacking with NumPy and keeps the nesting of the samples:

    samples [(x0, y0), (x1, y1)]  →  batch [np.stack([x0, x1]), np.array([y0, y1])]

Why NumPy and not ``jnp``? With ``num_workers > 0`` the collate function runs
in worker *processes* made by ``fork``. JAX is multithreaded; a forked copy of
a process in which JAX is already running has the memory of those threads but
not the threads themselves, and a JAX call there can wait forever for them.
NumPy arrays are safe everywhere, and JAX copies them to the device when your
jitted training step receives them.

Randomness follows the same rule as in JAX: explicit. The dataset draws its
noise from its own ``np.random.RandomState(seed)``, and the loader shuffles
with its own ``torch.Generator`` seeded by ``seed``, so the global random
generators of NumPy and torch neither influence the data nor are changed by it.

Run the checks with

    pytest exercises/test_data.py
"""

import numpy as np
import torch
import torch.utils.data as data


def numpy_collate(batch):
    """Collate a list of samples into one batch made of NumPy arrays only.

    ``batch`` is a non-empty list of samples that all have the same structure.
    Look at the first sample to decide what to do:

    - an ``np.ndarray``: stack the samples along a new first axis (``np.stack``);
    - a tuple or a list: return a **list** with one entry per position, each
      entry being the collation of that position across the samples
      (``zip(*batch)`` regroups them), recursively;
    - a dict: return a dict with the same keys, each key collated on its own;
    - anything else (a Python or NumPy scalar): ``np.array(batch)``.

    Example: ``numpy_collate([(np.zeros(2), 0), (np.ones(2), 1)])`` is
    ``[array([[0., 0.], [1., 1.]]), array([0, 1])]``.

    Every leaf of the result is an ``np.ndarray`` (never a ``torch.Tensor`` or
    a ``jax.Array``), with the dtype NumPy gives it; ``batch`` and its arrays
    are left unchanged.
    """
    # TODO: branch on the type of batch[0]; recurse for tuples, lists and dicts
    raise NotImplementedError


class XORDataset(data.Dataset):
    """The continuous XOR dataset: noisy corners of the unit square, labelled by XOR.

    ``XORDataset(size, seed, std=0.1)`` makes ``size`` points. With one
    generator ``rng = np.random.RandomState(seed)``, in this order:

    1. ``data = rng.randint(0, 2, (size, 2)).astype(np.float32)`` — corners;
    2. ``label = (data.sum(axis=1) == 1).astype(np.int32)`` — 1 when exactly
       one coordinate is 1 (XOR), computed from the clean corners;
    3. ``data += rng.normal(0, std, data.shape)`` — Gaussian noise, added in
       place so that ``data`` stays float32.

    Keep them in the attributes ``data`` (float32, (size, 2)) and ``label``
    (int32, (size,)). ``len(ds)`` is ``size`` and ``ds[i]`` is the tuple
    ``(data[i], label[i])``. Never use ``np.random``'s global functions.
    """

    def __init__(self, size, seed, std=0.1):
        # TODO: call super().__init__(), keep size, make the RandomState and generate the data
        raise NotImplementedError

    def __len__(self):
        # TODO: the number of points
        raise NotImplementedError

    def __getitem__(self, idx):
        # TODO: the pair (data point, label) at idx
        raise NotImplementedError


def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
    """A ``torch.utils.data.DataLoader`` over ``dataset`` that yields NumPy batches.

    Use ``numpy_collate`` as its ``collate_fn``, and pass ``batch_size``,
    ``shuffle`` and ``drop_last`` through (``drop_last=True`` drops a last,
    incomplete batch).

    The order of the samples must be fixed by ``seed`` alone: two loaders made
    with the same seed shuffle alike, whatever ``torch.manual_seed`` was
    called with elsewhere, and different seeds shuffle differently. Give the
    loader a ``torch.Generator`` of its own, seeded with ``seed``; do not seed
    torch's global generator.
    """
    # TODO: make a seeded torch.Generator and return a DataLoader that uses it and numpy_collate
    raise NotImplementedError
