"""Hypothesis strategies that keep the number of distinct shapes small.

A jitted function compiles once per shape, so drawing every shape at random
would compile once per example. Shapes come from small *buckets* instead;
values are finite float32 without subnormals (XLA flushes them to zero).

Under an instructor seed (``grade --seed N``: :func:`autograder.checks.scenario.instructor_seed`)
every value these strategies draw is moved by a constant drawn from the seed (:func:`drawn_from_seed`):
Hypothesis always tries the simplest input first (zeros, the first shape, key 0) and then the simplest
completions of a few random prefixes, which are the same under any seed; moved, they are the
instructor's, not the ones a release recorded answers for. Without a seed each strategy is exactly the
published one (the same object, drawing the same inputs).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks.keys import KINDS, make_key

VECTOR_SIZES = (1, 4, 7)
SQUARE_SIZES = (1, 3, 5)
SHAPES = ((), (5,), (2, 3), (2, 2, 3))


# The instructor's seed --------------------------------------------------------


def _instructor_seed() -> int | None:
    from autograder.checks import scenario

    return scenario.instructor_seed()


def seed_shift(lo: float, hi: float, kind: str) -> float | None:
    """The constant that values in ``[lo, hi]`` of ``kind`` are moved by under the instructor's seed, or None
    without one: between 10% and 90% of the range (an integer, at least 1, for ``"int"``), so that no value maps
    to itself. Read when a strategy is built: a check file is imported after ``--grading-seed`` is read."""
    seed = _instructor_seed()
    if seed is None:
        return None
    rng = np.random.default_rng([seed, zlib.crc32(f"{kind} {lo!r} {hi!r}".encode())])
    if kind == "int":
        count = int(hi) - int(lo) + 1
        return float(rng.integers(1, count)) if count > 1 else None
    return float(rng.uniform(0.1, 0.9) * (hi - lo))


def _moved(value, lo, hi, shift: float, width: int | None):
    """``value`` moved by ``shift`` within ``[lo, hi]`` (wrapping round), of the same type; NumPy arrays elementwise."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return value
        if value.dtype.kind in "iu":
            return ((value.astype(np.int64) - int(lo) + int(shift)) % (int(hi) - int(lo) + 1) + int(lo)).astype(
                value.dtype
            )
        moved = (value.astype(np.float64) - lo + shift) % (hi - lo) + lo
        moved = np.clip(moved.astype(value.dtype), value.dtype.type(lo), value.dtype.type(hi))
        # No subnormals (XLA flushes them to zero); a 0-d array stays one.
        return np.asarray(np.where(np.abs(moved) < np.finfo(value.dtype).tiny, 0, moved), dtype=value.dtype)
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, np.integer)):
        return type(value)(int(lo) + (int(value) - int(lo) + int(shift)) % (int(hi) - int(lo) + 1))
    moved = (float(value) - lo + shift) % (hi - lo) + lo
    if width == 32:
        moved = float(np.float32(moved))
        moved = 0.0 if abs(moved) < np.finfo(np.float32).tiny else moved
    return type(value)(min(max(moved, lo), hi))


def drawn_from_seed(
    strategy: st.SearchStrategy, lo: float, hi: float, *, integer: bool = False, width: int | None = None
) -> st.SearchStrategy:
    """``strategy`` (numbers or arrays of numbers in ``[lo, hi]``), its values moved by :func:`seed_shift` under an
    instructor's seed; ``strategy`` itself without one. With ``integer``, integers (a Python or NumPy int, an
    integer array) move by a whole number and wrap round within ``[lo, hi]``; floats move within ``[lo, hi)``
    (rounded to float32 with ``width=32``, subnormals flushed to zero); booleans are left alone."""
    shift = seed_shift(lo, hi, "int" if integer else "float")
    if shift is None:
        return strategy
    return strategy.map(lambda value: _moved(value, lo, hi, shift, width))


def integers(min_value: int, max_value: int, *, leave_range: bool = False) -> st.SearchStrategy[int]:
    """``st.integers(min_value, max_value)``; under an instructor's seed, moved by a whole number drawn from it
    (wrapping round within the range). With ``leave_range`` (for a few values whose size does not matter, such as
    a pytree leaf to count), moved instead by 1000 to 1999 times the range's size, so that none is a published one."""
    if not leave_range:
        return drawn_from_seed(st.integers(min_value, max_value), min_value, max_value, integer=True)
    away = seed_shift(1000, 1999, "int")
    if away is None:
        return st.integers(min_value, max_value)
    return st.integers(min_value, max_value).map(lambda v: v + int(away) * (max_value - min_value + 1))


def drawn_constant(published: int, min_value: int, max_value: int) -> int:
    """``published`` without an instructor seed; with one, a number of ``min_value..max_value`` other than
    ``published``, drawn from it (a size a strategy samples from, such as the empty axis of a zero-size array)."""
    shift = seed_shift(min_value, max_value, "int")
    if shift is None:
        return published
    count = max_value - min_value + 1
    value = min_value + (published - min_value + int(shift)) % count
    return value if value != published else min_value + (value - min_value + 1) % count


def floats(min_value: float, max_value: float, **kwargs) -> st.SearchStrategy[float]:
    """``st.floats(min_value, max_value, **kwargs)``; under an instructor's seed, moved by a constant drawn from it."""
    return drawn_from_seed(st.floats(min_value, max_value, **kwargs), min_value, max_value, width=kwargs.get("width"))


# Values and arrays --------------------------------------------------------------


def float32s(min_value: float = -10.0, max_value: float = 10.0) -> st.SearchStrategy[float]:
    """Finite float32 values, no subnormals, with zeros and the bounds likely (without an instructor seed)."""
    return floats(min_value, max_value, width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def float32_arrays(
    shapes: Sequence[tuple[int, ...]] = SHAPES,
    *,
    min_value: float = -10.0,
    max_value: float = 10.0,
) -> st.SearchStrategy[np.ndarray]:
    """float32 NumPy arrays whose shape is one of ``shapes`` (under an instructor seed, moved as a whole)."""
    elements = st.floats(min_value, max_value, width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    arrays = st.sampled_from(list(shapes)).flatmap(lambda shape: hnp.arrays(np.float32, shape, elements=elements))
    return drawn_from_seed(arrays, min_value, max_value, width=32)


def vectors(sizes: Sequence[int] = VECTOR_SIZES, **bounds: float) -> st.SearchStrategy[np.ndarray]:
    return float32_arrays([(n,) for n in sizes], **bounds)


def square_matrices(sizes: Sequence[int] = SQUARE_SIZES, **bounds: float) -> st.SearchStrategy[np.ndarray]:
    return float32_arrays([(n, n) for n in sizes], **bounds)


def index_arrays(n: int, sizes: Sequence[int] = (1, 3, 6)) -> st.SearchStrategy[np.ndarray]:
    """int32 indices into an axis of length ``n``; repeats are allowed and likely (more indices than n)."""
    indices = st.sampled_from(list(sizes)).flatmap(lambda k: hnp.arrays(np.int32, (k,), elements=st.integers(0, n - 1)))
    return drawn_from_seed(indices, 0, n - 1, integer=True)


def vectors_with_indices(
    sizes: Sequence[int] = VECTOR_SIZES, counts: Sequence[int] = (1, 3, 6)
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """``(x, indices)``: a float32 vector and int32 indices into it, repeats likely."""
    return vectors(sizes).flatmap(lambda x: st.tuples(st.just(x), index_arrays(len(x), counts)))


def ordered_pairs(min_value: float = -10.0, max_value: float = 10.0) -> st.SearchStrategy[tuple[float, float]]:
    """``(lo, hi)`` with ``lo <= hi``, both float32-representable."""
    return st.tuples(float32s(min_value, max_value), float32s(min_value, max_value)).map(
        lambda pair: (min(pair), max(pair))
    )


def keys(kinds: Sequence[str] = KINDS, seeds: st.SearchStrategy[int] | None = None):
    """PRNG keys of both kinds: typed (``jax.random.key``) and legacy (``PRNGKey``), from ``seeds``
    (by default any of 0..2**31-1, moved under an instructor seed)."""
    seeds = integers(0, 2**31 - 1) if seeds is None else seeds
    return st.tuples(st.sampled_from(list(kinds)), seeds).map(lambda ks: make_key(ks[1], ks[0]))


# Batches for a collate function ---------------------------------------------

COLLATE_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_)
COLLATE_SHAPES = ((), (3,), (2, 2))
COLLATE_BATCH_SIZES = (1, 2, 5)
_COLLATE_KEYS = ("x", "y", "label", "mask")


def _collate_elements(dtype) -> st.SearchStrategy:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return floats(-100, 100, width=8 * dtype.itemsize, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    if dtype.kind == "b":
        return st.booleans()
    info = np.iinfo(dtype)
    return integers(max(int(info.min), -1000), min(int(info.max), 1000))


def _collate_leaf_templates() -> st.SearchStrategy[tuple]:
    dtypes = st.sampled_from(COLLATE_DTYPES)
    return st.one_of(
        st.tuples(st.just("array"), dtypes, st.sampled_from(COLLATE_SHAPES)),
        st.tuples(st.just("numpy scalar"), dtypes, st.just(())),
        st.tuples(st.just("python scalar"), st.sampled_from((int, float, bool)), st.just(())),
    )


def sample_structures(max_leaves: int = 6) -> st.SearchStrategy[tuple]:
    """The shape of one dataset sample: a nested tuple/list/dict template with leaf specs.

    A leaf is ``(kind, dtype, shape)`` with kind ``"array"``, ``"numpy scalar"``
    or ``"python scalar"``; a node is ``("tuple" | "list" | "dict", children)``.
    Containers are never empty. Use :func:`samples_of` to draw values.
    """
    keys = st.sampled_from(_COLLATE_KEYS)
    return st.recursive(
        _collate_leaf_templates(),
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ("tuple", xs)),
            st.lists(children, min_size=1, max_size=3).map(lambda xs: ("list", xs)),
            st.dictionaries(keys, children, min_size=1, max_size=3).map(lambda d: ("dict", d)),
        ),
        max_leaves=max_leaves,
    )


def samples_of(template: tuple) -> st.SearchStrategy:
    """One sample with the structure ``template`` (see :func:`sample_structures`)."""
    kind = template[0]
    if kind == "array":
        _, dtype, shape = template
        return hnp.arrays(dtype, shape, elements=_collate_elements(dtype))
    if kind == "numpy scalar":
        dtype = np.dtype(template[1])
        return _collate_elements(dtype).map(dtype.type)
    if kind == "python scalar":
        py = template[1]
        if py is bool:
            return st.booleans()
        if py is int:
            return integers(-1000, 1000)
        return floats(-100, 100, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    children = template[1]
    if kind == "tuple":
        return st.tuples(*map(samples_of, children))
    if kind == "list":
        return st.tuples(*map(samples_of, children)).map(list)
    return st.fixed_dictionaries({key: samples_of(child) for key, child in children.items()})


def collate_batches(sizes: Sequence[int] = COLLATE_BATCH_SIZES) -> st.SearchStrategy[list]:
    """What a ``DataLoader`` hands its ``collate_fn``: a non-empty list of samples of one structure.

    Samples nest tuples, lists and dicts of NumPy arrays (several dtypes and
    shapes), NumPy scalars and Python ``int``/``float``/``bool``.
    """
    return sample_structures().flatmap(
        lambda template: st.sampled_from(list(sizes)).flatmap(
            lambda k: st.lists(samples_of(template), min_size=k, max_size=k)
        )
    )


# prng -----------------------------------------------------------------------

# Every value below is a separate compilation per key kind when it is static: keep them few.
MLP_SIZES = ((2, 3), (3, 4, 2, 1))
DROPOUT_RATES = (0.0, 0.3)
DROPOUT_SHAPES = ((7,), (2, 3))
WALK_LENGTHS = (1, 6)


def mlp_sizes(sizes: Sequence[tuple[int, ...]] = MLP_SIZES) -> st.SearchStrategy[tuple[int, ...]]:
    """Layer sizes of an MLP (a hashable tuple, so it can be a static argument of jit)."""
    return st.sampled_from(list(sizes))


def dropout_rates(rates: Sequence[float] = DROPOUT_RATES) -> st.SearchStrategy[float]:
    """Dropout rates in ``[0, 1)`` from a few values (each is a separate compilation when static)."""
    return st.sampled_from(list(rates))


def walk_lengths(lengths: Sequence[int] = WALK_LENGTHS) -> st.SearchStrategy[int]:
    """Numbers of steps (>= 1) for a random walk, from a few values."""
    return st.sampled_from(list(lengths))


# vmap_linear ----------------------------------------------------------------

# (batch, d_in, d_out): a batch of one, a single input and a single output feature all occur.
LINEAR_SHAPES = ((1, 3, 2), (4, 1, 3), (8, 4, 1))


def linear_problems(
    shapes: Sequence[tuple[int, int, int]] = LINEAR_SHAPES, *, bound: float = 3.0
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """``(xs, W, b, ys)`` float32 NumPy arrays of shapes (B, d_in), (d_in, d_out), (d_out,), (B, d_out)."""

    def arrays(shape):
        batch, d_in, d_out = shape
        return st.tuples(
            *(
                hnp.arrays(np.float32, s, elements=float32s(-bound, bound))
                for s in ((batch, d_in), (d_in, d_out), (d_out,), (batch, d_out))
            )
        )

    return st.sampled_from(list(shapes)).flatmap(arrays)
