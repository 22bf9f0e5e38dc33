"""Data loading: batches a ``torch.utils.data.DataLoader`` hands to JAX.

Checks for the ``data`` module, run against real ``DataLoader``s:

- :func:`assert_numpy_batch`          a collated batch has the reference's structure, only ``np.ndarray``
                                      leaves (with the reason when a leaf is a torch tensor or a jax.Array),
                                      and the reference's dtypes and values
- :func:`load_batches`                iterate a real ``DataLoader`` (optionally with worker processes) with
                                      a deadline, so a deadlocked worker fails the check instead of hanging it
- :func:`assert_is_dataloader`        a function returned a ``torch.utils.data.DataLoader``
- :func:`assert_epoch_batches`        one epoch has the right batch sizes, count, and sample order
- :func:`assert_same_order`           two epochs visit the samples in the same order
- :func:`interleaved_epochs`          one epoch of several loaders, all made first, iterated batch by batch in turn
  (a dataset and its items: :mod:`autograder.checks.datasets`)

:class:`SampleDataset` is a plain map-style dataset over a list of samples.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.utils.data as tud

from autograder.checks.values import assert_trees_close
from autograder.core.failures import CheckFailure
from autograder.runtime.copies import fresh_copy

WORKER_TIMEOUT = 15.0  # seconds a DataLoader waits for one batch from its workers


class SampleDataset(tud.Dataset):
    """A map-style dataset whose ``ds[i]`` is a fresh copy of ``samples[i]``, as a dataset that builds its items
    gives: a collate function that writes into the samples it is handed changes no later check's samples (in-process,
    a check that ran after one that emptied them judged the empty samples, while the trusted side judged full ones)."""

    def __init__(self, samples: Sequence[Any]):
        self.samples = list(samples)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Any:
        return fresh_copy(self.samples[index])


def indexed_samples(n: int) -> list[tuple[np.ndarray, np.int32]]:
    """``n`` samples ``(features float32 (2,), index int32)``: a batch's second entry tells its order."""
    return [(np.array([i, -0.5 * i], np.float32), np.int32(i)) for i in range(n)]


def kind_of(x: Any) -> str:
    """What ``x`` is, as a message names it (``list``, ``numpy.ndarray``, ``torch.Tensor``)."""
    kind = type(x)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"


def _leaf_problem(leaf: Any, expected: np.ndarray, where: str) -> tuple[str, str] | None:
    """Why ``leaf`` cannot stand where the reference has the array ``expected``; None if it can."""
    if type(leaf) is np.ndarray:
        return None
    wanted = f"a np.ndarray ({expected.dtype.name}{list(expected.shape)})"
    if isinstance(leaf, torch.Tensor):
        return (
            f"{where} is a torch.Tensor, expected {wanted}",
            "torch tensors are what PyTorch's default collate makes; JAX wants NumPy arrays. "
            "Build the batch with np.stack / np.array instead of torch.stack / default_collate",
        )
    if isinstance(leaf, jax.Array):
        return (
            f"{where} is a jax.Array, expected {wanted}",
            "a collate function runs inside the DataLoader's worker processes; creating jax.Arrays there "
            "(jnp.stack, jnp.asarray) starts JAX in a forked copy of a multithreaded process, which deadlocks. "
            "Return NumPy arrays: JAX moves them to the device when your jitted step receives them",
        )
    if isinstance(leaf, np.generic) or type(leaf) in (bool, int, float, complex):
        return (
            f"{where} is a single {kind_of(leaf)} scalar, expected {wanted}",
            "scalars of the samples are collated into one array: np.array(batch)",
        )
    if isinstance(leaf, (list, tuple)):
        return (
            f"{where} is a {type(leaf).__name__} of {len(leaf)} items, expected {wanted}",
            "stack the samples' arrays into one array (np.stack for arrays, np.array for scalars)",
        )
    if isinstance(leaf, np.ndarray):
        return (f"{where} is a {kind_of(leaf)} (a subclass), expected a plain {wanted}", "use np.stack / np.array")
    return (f"{where} is a {kind_of(leaf)}, expected {wanted}", "")


def _assert_batch_structure(got: Any, expected: Any, where: str, check: str) -> None:
    if type(expected) is list:
        if type(got) is not list:
            if isinstance(got, tuple):
                raise CheckFailure(
                    check,
                    f"{where} is a tuple, expected a list of {len(expected)}",
                    "the contract: tuple and list samples both collate to a list, one entry per position",
                )
            raise CheckFailure(
                check,
                f"{where} is a {kind_of(got)}, expected a list of {len(expected)} (one entry per position of a sample)",
                "tuple and list samples collate to a list: [numpy_collate(s) for s in zip(*batch)]",
            )
        if len(got) != len(expected):
            raise CheckFailure(
                check, f"{where} has {len(got)} entries, expected {len(expected)} (one per position of a sample)"
            )
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_batch_structure(g, e, f"{where}[{i}]", check)
        return
    if type(expected) is dict:
        if not isinstance(got, dict):
            raise CheckFailure(
                check,
                f"{where} is a {kind_of(got)}, expected a dict with keys {sorted(expected)}",
                "dict samples collate to a dict with the same keys, each collated on its own",
            )
        if set(got) != set(expected):
            raise CheckFailure(check, f"{where} has keys {sorted(map(str, got))}, expected {sorted(expected)}")
        for key in expected:
            _assert_batch_structure(got[key], expected[key], f"{where}[{key!r}]", check)
        return
    problem = _leaf_problem(got, expected, where)
    if problem:
        raise CheckFailure(check, *problem)


def assert_numpy_batch(
    got: Any,
    expected: Any,
    *,
    name: str = "result",
    check: str = "the collated batch equals the reference's",
    source: str = "the reference",
) -> None:
    """``got`` has ``expected``'s nesting (lists and dicts), ``np.ndarray`` leaves only, equal dtypes and values.

    ``expected`` is a batch as the reference ``numpy_collate`` builds it (or, named by ``source``, what
    the student's own ``numpy_collate`` gives called directly). Values
    are compared exactly. A torch tensor or a jax.Array leaf is rejected with
    the reason it does not belong in a batch for JAX.
    """
    _assert_batch_structure(got, expected, name, check)
    assert_trees_close(got, expected, rtol=0, atol=0, name=name, check=check, source=source)


def load_batches(
    dataset: tud.Dataset,
    collate_fn: Callable,
    *,
    batch_size: int,
    num_workers: int = 0,
    timeout: float = WORKER_TIMEOUT,
    fn_name: str = "the collate function",
    role: str = "collate_fn",
) -> list[Any]:
    """All batches of a real ``DataLoader(dataset, batch_size, collate_fn=..., num_workers=...)`` in order.

    With workers, JAX is running in this process first (as in a training
    script) and the loader waits at most ``timeout`` seconds for each batch:
    workers that deadlock fail the check instead of hanging it. ``role``
    (``"collate_fn"`` or ``"dataset"``) says which of the two is judged.
    """
    check = f"{fn_name} works as the {role} of a DataLoader with num_workers={num_workers}"
    culprit = (
        "a dataset whose items are jax.Arrays (jnp.asarray in __init__ or __getitem__, indexing a jax.Array)"
        if role == "dataset"
        else "a collate function that creates jax.Arrays (jnp.stack, jnp.asarray, jax.device_put)"
    )
    if num_workers:
        jax.block_until_ready(jnp.zeros(()) + 1)  # JAX's threads are running, as during training
    loader = tud.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        collate_fn=collate_fn,
        num_workers=num_workers,
        timeout=timeout if num_workers else 0,
    )
    iterator = None
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            iterator = iter(loader)
            return list(iterator)
    except RuntimeError as err:
        if "timed out" in str(err):
            _kill_workers(iterator)
            raise CheckFailure(
                check,
                f"the DataLoader's worker processes produced no batch within {timeout:g} s: they are stuck",
                f"{culprit} deadlocks forked DataLoader workers once JAX is running in the main process, "
                "because JAX is multithreaded; use NumPy only",
            ) from None
        if not num_workers:
            raise  # the student's own error, reported with the line it came from
        _kill_workers(iterator)
        raise _worker_error(err, check, fn_name) from None
    except Exception as err:  # noqa: BLE001 - the student's collate failed inside a worker
        if not num_workers:
            raise
        _kill_workers(iterator)
        raise _worker_error(err, check, fn_name) from None


def _kill_workers(iterator: Any) -> None:
    """Kill a failed loader's workers now.

    Otherwise torch shuts them down when the iterator is garbage-collected,
    possibly during a later check, waiting up to 5 s for each.
    """
    try:
        from torch.utils.data import _utils

        if getattr(iterator, "_worker_pids_set", False):  # else torch's SIGCHLD handler reports the kill
            _utils.signal_handling._remove_worker_pids(id(iterator))
            iterator._worker_pids_set = False
        workers = list(getattr(iterator, "_workers", []))
        for worker in workers:
            if worker.is_alive():
                worker.kill()
        for worker in workers:
            worker.join(timeout=1)
    except Exception:  # noqa: BLE001 - private torch API; torch's own shutdown still runs
        pass


def _worker_error(err: BaseException, check: str, fn_name: str) -> CheckFailure:
    text = str(err).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    return CheckFailure(
        check,
        f"iterating the DataLoader failed: {type(err).__name__}: {lines[0] if lines else ''}",
        f"{last}" if last and last != (lines[0] if lines else "") else "",
    )


def assert_is_dataloader(loader: Any, fn_name: str) -> None:
    """``loader`` is a ``torch.utils.data.DataLoader``."""
    if not isinstance(loader, tud.DataLoader):
        raise CheckFailure(
            f"{fn_name} returns a torch.utils.data.DataLoader",
            f"{fn_name} returned a {kind_of(loader)}, not a torch.utils.data.DataLoader",
            "return a torch.utils.data.DataLoader of the dataset, with numpy_collate as its collate_fn",
        )


def epoch(loader: Any, fn_name: str, index: Callable[[Any], Any] = lambda batch: batch[1]) -> list[list[int]]:
    """One pass over ``loader``: the sample indices of every batch (``index(batch)`` reads them)."""
    check = f"{fn_name}'s DataLoader can be iterated"
    try:
        batches = list(loader)
    except Exception as err:  # noqa: BLE001 - the student's loader failed
        raise CheckFailure(check, f"iterating the DataLoader failed: {type(err).__name__}: {err}") from None
    try:
        return [[int(i) for i in np.asarray(index(batch)).reshape(-1)] for batch in batches]
    except Exception as err:  # noqa: BLE001 - unreadable batch
        raise CheckFailure(
            check, f"a batch could not be read as [features, indices]: {type(err).__name__}: {err}"
        ) from None


def assert_epoch_batches(
    order: list[list[int]], n: int, *, batch_size: int, shuffle: bool, drop_last: bool, fn_name: str
) -> None:
    """One epoch over ``n`` samples: right count and sizes of batches, no sample twice, order as asked."""
    setting = f"{n} samples, batch_size={batch_size}, shuffle={shuffle}, drop_last={drop_last}"
    check = f"{fn_name}'s batches follow batch_size, shuffle and drop_last"
    count = n // batch_size if drop_last else math.ceil(n / batch_size)
    sizes = [len(b) for b in order]
    want = [batch_size] * (n // batch_size) + ([] if drop_last or n % batch_size == 0 else [n % batch_size])
    if sizes != want:
        extra = ""
        if not drop_last and len(sizes) == count - 1:
            extra = "with drop_last=False the last, smaller batch must be kept"
        elif drop_last and len(sizes) == count + 1:
            extra = "with drop_last=True the last, incomplete batch must be dropped: pass drop_last to the DataLoader"
        raise CheckFailure(
            check,
            f"with {setting} the batch sizes are {sizes}, expected {want}",
            extra,
        )
    flat = [i for b in order for i in b]
    if len(set(flat)) != len(flat):
        raise CheckFailure(
            check, f"with {setting} some samples come twice in one epoch", "one epoch visits every sample once"
        )
    if not shuffle and flat != list(range(len(flat))):
        raise CheckFailure(
            check,
            f"with {setting} the samples come in the order {flat[:10]}..., expected 0, 1, 2, ...",
            "shuffle=False keeps the dataset's order",
        )
    if shuffle and len(flat) >= 20 and flat == sorted(flat):  # 1 / 20! by chance
        raise CheckFailure(
            check,
            f"with {setting} the samples come in the dataset's order: nothing was shuffled",
            "pass shuffle to the DataLoader",
        )


def assert_same_order(
    first: list[list[int]], second: list[list[int]], *, check: str, problem: str, advice: str
) -> None:
    """Two epochs (lists of per-batch sample indices) are identical."""
    if first != second:
        diff = next(i for i, (a, b) in enumerate(zip(first + [[]], second + [[]])) if a != b)
        raise CheckFailure(
            check,
            problem,
            f"first different batch: #{diff}: {first[diff] if diff < len(first) else None} vs "
            f"{second[diff] if diff < len(second) else None}\n{advice}",
        )


def assert_seed_changes_order(orders: Sequence[list[list[int]]], *, seeds: Sequence[int], fn_name: str) -> None:
    """Epochs of loaders made with different ``seeds`` are not all in the same order."""
    if all(order == orders[0] for order in orders[1:]):
        raise CheckFailure(
            f"{fn_name}(..., seed) gives different orders for different seeds",
            f"seeds {', '.join(map(str, seeds))} all give the same order: the seed argument is ignored",
            "seed the DataLoader's generator with the seed argument: torch.Generator().manual_seed(seed)",
        )


def assert_batch_count(batches: Sequence[Any], expected: int, *, check: str) -> None:
    """A loader gave ``expected`` batches."""
    if len(batches) != expected:
        raise CheckFailure(check, f"the DataLoader gave {len(batches)} batches, expected {expected}")


def interleaved_epochs(
    loaders: Sequence[Any], fn_name: str, index: Callable[[Any], Any] = lambda batch: batch[1]
) -> list[list[list[int]]]:
    """One epoch of each loader, iterated in turn (a batch of the first, of the second, ...), all made beforehand.

    What a training loop with a validation loader does: loaders that share a
    random generator behind the scenes give other orders than each alone.
    """
    check = f"{fn_name}'s DataLoaders can be iterated"
    try:
        iterators = [iter(loader) for loader in loaders]
        orders: list[list[list[int]]] = [[] for _ in loaders]
        active = set(range(len(loaders)))
        while active:
            for i in sorted(active):
                try:
                    batch = next(iterators[i])
                except StopIteration:
                    active.discard(i)
                    continue
                orders[i].append([int(j) for j in np.asarray(index(batch)).reshape(-1)])
    except Exception as err:  # noqa: BLE001 - the student's loader failed
        raise CheckFailure(check, f"iterating the DataLoaders failed: {type(err).__name__}: {err}") from None
    return orders
