"""The data checks judge right: wrong answers fail with the right message, other correct answers pass."""

import pytest
from support import assert_accepted, assert_rejected, gallery, grade, with_function

MODULE = "data"


CORRECT_VARIANTS = [
    # other branch order, np.asarray + np.stack for every leaf, map over zip
    (
        "recursion-with-map",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, dict):
                return {key: numpy_collate([sample[key] for sample in batch]) for key in first}
            if isinstance(first, (list, tuple)):
                return list(map(numpy_collate, zip(*batch)))
            return np.stack([np.asarray(sample) for sample in batch])
     """,
    ),
    # structural pattern matching, np.array for arrays too, explicit loops
    (
        "match-statement",
        "numpy_collate",
        """
        def numpy_collate(batch):
            match batch[0]:
                case dict():
                    out = {}
                    for key in batch[0].keys():
                        out[key] = numpy_collate([s[key] for s in batch])
                    return out
                case tuple() | list():
                    columns = []
                    for position in range(len(batch[0])):
                        columns.append(numpy_collate([s[position] for s in batch]))
                    return columns
                case _:
                    return np.array(batch)
     """,
    ),
    # noise drawn with randn * std, labels by comparing the coordinates, no super().__init__()
    (
        "xor-by-inequality",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                corners = rng.randint(0, 2, size=(size, 2))
                self.label = (corners[:, 0] != corners[:, 1]).astype(np.int32)
                self.data = (corners + rng.randn(size, 2) * std).astype(np.float32)

            def __len__(self):
                return len(self.label)

            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
    ),
    # noise added row by row (the same stream of normals), a generator attribute
    (
        "stores-its-rng",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                super().__init__()
                self.rng = np.random.RandomState(seed)
                self.data = self.rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = np.logical_xor(self.data[:, 0], self.data[:, 1]).astype(np.int32)
                for row in range(size):
                    self.data[row] += self.rng.normal(0.0, std, 2)

            def __len__(self):
                return self.data.shape[0]

            def __getitem__(self, i):
                return (self.data[i], self.label[i])
     """,
    ),
    # the generator on the sampler, an explicit BatchSampler
    (
        "batch-sampler",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            sampler = data.RandomSampler(dataset, generator=g) if shuffle else data.SequentialSampler(dataset)
            batches = data.BatchSampler(sampler, batch_size=batch_size, drop_last=drop_last)
            return data.DataLoader(dataset, batch_sampler=batches, collate_fn=numpy_collate)
     """,
    ),
    # demo objects kept at module level, left alone by make_loader: a dataset, its loader, a constant (issue 10)
    (
        "demo-objects-at-module-level",
        "make_loader",
        """
        DEFAULT_BATCH = 32

        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator()
            g.manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)

        demo_dataset = XORDataset(200, 42)
        demo_loader = make_loader(demo_dataset, DEFAULT_BATCH, True, seed=1)
        demo_batch = next(iter(demo_loader))
     """,
    ),
    # items converted with np.asarray on the way out (still NumPy), the dataset kept as a demo at module level
    (
        "np-asarray-items",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                super().__init__()
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += rng.normal(0, std, self.data.shape)

            def __len__(self):
                return len(self.data)

            def __getitem__(self, i):
                return np.asarray(self.data[i]), self.label[i]

        demo = XORDataset(size=200, seed=42)
     """,
    ),
    # positional arguments, a lambda collate, another seed-to-generator mapping
    (
        "offset-seed-generator",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            return data.DataLoader(dataset, batch_size, shuffle, collate_fn=lambda b: numpy_collate(b),
                                   drop_last=drop_last, generator=torch.Generator().manual_seed(10_000 + seed))
     """,
    ),
]


@pytest.mark.parametrize("function, replacement", gallery(CORRECT_VARIANTS))
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    result = grade(pytester, MODULE, with_function(MODULE, replacement), only=function)[function]
    assert_accepted(result)


def xor_dataset_returning(item):
    """The reference's XORDataset (NumPy data and label) whose ``ds[i]`` is ``item``."""
    return f"""
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += rng.normal(0, std, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return {item}
"""


JAX_ITEM = r"ds\[0\]\[0\] is a jax\.Array, expected a NumPy array or scalar(.*\n)*.*forked worker processes"
SHARED_GENERATOR = r"loader #\d \(seed=\d\) shuffled differently than a loader made alone with seed=\d(.*\n)*.*share one random generator"

WRONG = [
    # (function, replacement, regex the message must match)
    # --- numpy_collate
    (
        "torch-default-collate",
        "numpy_collate",
        """
        def numpy_collate(batch):
            return data.default_collate(batch)
     """,
        r"is a torch\.Tensor, expected a np\.ndarray.*\n(.*\n)*.*default collate",
    ),
    (
        "returns-jax-arrays",
        "numpy_collate",
        """
        import jax.numpy as jnp
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, (tuple, list)):
                return [numpy_collate(list(s)) for s in zip(*batch)]
            if isinstance(first, dict):
                return {k: numpy_collate([s[k] for s in batch]) for k in first}
            return jnp.stack([jnp.asarray(s) for s in batch])
     """,
        r"(?s)is a jax\.Array, expected a np\.ndarray.*worker processes.*deadlocks",
    ),
    (
        "tree-map-returns-tuples",
        "numpy_collate",
        """
        import jax
        def numpy_collate(batch):
            return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *batch)
     """,
        r"is a tuple, expected a list of \d+\n(.*\n)*.*tuple and list samples both collate to a list",
    ),
    (
        "mutates-the-batch",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, np.ndarray):
                return np.stack(batch)
            if isinstance(first, (tuple, list)):
                return [numpy_collate(list(s)) for s in zip(*batch)]
            if isinstance(first, dict):
                return {k: numpy_collate([s.pop(k) for s in batch]) for k in list(first)}
            return np.array(batch)
     """,
        r"numpy_collate modified its argument: batch\[0\] changed keys",
    ),
    (
        "keeps-scalars-as-a-list",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, np.ndarray):
                return np.stack(batch)
            if isinstance(first, (tuple, list)):
                return [numpy_collate(list(s)) for s in zip(*batch)]
            if isinstance(first, dict):
                return {k: numpy_collate([s[k] for s in batch]) for k in first}
            return list(batch)
     """,
        r"is a list of \d+ items, expected a np\.ndarray",
    ),
    (
        "casts-to-float32",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, np.ndarray):
                return np.stack(batch).astype(np.float32)
            if isinstance(first, (tuple, list)):
                return [numpy_collate(list(s)) for s in zip(*batch)]
            if isinstance(first, dict):
                return {k: numpy_collate([s[k] for s in batch]) for k in first}
            return np.array(batch, dtype=np.float32)
     """,
        r"has dtype float32, expected (int|uint|bool|float64)",
    ),
    (
        "stacks-through-float64",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, dict):
                return {key: numpy_collate([sample[key] for sample in batch]) for key in first}
            if isinstance(first, (list, tuple)):
                return [numpy_collate(list(column)) for column in zip(*batch)]
            stacked = np.array(batch)
            return np.asarray(np.array(batch, dtype=np.float64), dtype=stacked.dtype)  # "to be safe"
     """,
        r"differs|expected",
    ),
    (
        "concatenates-instead-of-stacking",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, np.ndarray):
                return np.concatenate(batch)
            if isinstance(first, (tuple, list)):
                return [numpy_collate(list(s)) for s in zip(*batch)]
            if isinstance(first, dict):
                return {k: numpy_collate([s[k] for s in batch]) for k in first}
            return np.array(batch)
     """,
        r"has shape \(.*\), expected \(.*\)",
    ),
    (
        "dicts-become-lists",
        "numpy_collate",
        """
        def numpy_collate(batch):
            first = batch[0]
            if isinstance(first, np.ndarray):
                return np.stack(batch)
            if isinstance(first, (tuple, list, dict)):
                if isinstance(first, dict):
                    batch = [list(s.values()) for s in batch]
                return [numpy_collate(list(s)) for s in zip(*batch)]
            return np.array(batch)
     """,
        r"is a list, expected a dict with keys",
    ),
    # --- XORDataset
    (
        "noise-drawn-before-the-corners",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                noise = rng.normal(0, std, (size, 2))
                corners = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (corners.sum(axis=1) == 1).astype(np.int32)
                self.data = (corners + noise).astype(np.float32)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.(data|label) differs from the reference",
    ),
    (
        "labels-from-noisy-data",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.data += rng.normal(0, std, self.data.shape)
                self.label = (np.round(self.data).sum(axis=1) == 1).astype(np.int32)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.label differs from the reference",
    ),
    (
        "float64-data",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                corners = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (corners.sum(axis=1) == 1).astype(np.int32)
                self.data = corners + rng.normal(0, std, corners.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.data has dtype float64, expected float32",
    ),
    (
        "int64-labels",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(int)
                self.data += rng.normal(0, std, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.label has dtype int64, expected int32",
    ),
    (
        "seeds-numpy-globally",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                np.random.seed(seed)
                self.data = np.random.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += np.random.normal(0, std, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"changed the state of NumPy's global RNG",
    ),
    (
        "ignores-std",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += rng.normal(0, 0.1, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.data differs from the reference",
    ),
    (
        "items-not-a-pair",
        "XORDataset",
        """
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += rng.normal(0, std, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return [self.data[i], int(self.label[i])]
     """,
        r"ds\[0\] does not have the structure of \(ds.data\[0\], ds.label\[0\]\)",
    ),
    (
        "not-a-torch-dataset",
        "XORDataset",
        """
        class XORDataset:
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                self.data = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = (self.data.sum(axis=1) == 1).astype(np.int32)
                self.data += rng.normal(0, std, self.data.shape)
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"not a torch\.utils\.data\.Dataset",
    ),
    (
        "jax-arrays",
        "XORDataset",
        """
        import jax.numpy as jnp
        class XORDataset(data.Dataset):
            def __init__(self, size, seed, std=0.1):
                rng = np.random.RandomState(seed)
                corners = rng.randint(0, 2, (size, 2)).astype(np.float32)
                self.label = jnp.asarray((corners.sum(axis=1) == 1).astype(np.int32))
                self.data = jnp.asarray(corners + rng.normal(0, std, corners.shape).astype(np.float32))
            def __len__(self):
                return len(self.data)
            def __getitem__(self, i):
                return self.data[i], self.label[i]
     """,
        r"ds\.data is a jax\S*ArrayImpl; it must be a numpy\.ndarray",
    ),
    # items that are JAX arrays although data and label are NumPy (issue 10): they deadlock or fail in workers
    (
        "jnp-asarray-items",
        "XORDataset",
        """
        import jax.numpy as jnp"""
        + xor_dataset_returning("jnp.asarray(self.data[i]), jnp.asarray(self.label[i])")
        + """
     """,
        JAX_ITEM,
    ),
    (
        "device-put-items",
        "XORDataset",
        """
        import jax"""
        + xor_dataset_returning("jax.device_put((self.data[i], self.label[i]))")
        + """
     """,
        JAX_ITEM,
    ),
    (
        "jnp-int32-label",
        "XORDataset",
        """
        import jax.numpy as jnp"""
        + xor_dataset_returning("self.data[i], jnp.int32(self.label[i])")
        + """
     """,
        r"ds\[0\]\[1\] is a jax\.Array, expected a NumPy array or scalar",
    ),
    # --- make_loader
    # one module-level generator, re-seeded on every call: loaders made together share it (issue 10)
    (
        "module-generator-reseeded",
        "make_loader",
        """
        GENERATOR = torch.Generator()

        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            GENERATOR.manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=GENERATOR)
     """,
        SHARED_GENERATOR + r"(.*\n)*.*change[sd] the contents of the module-level variable 'GENERATOR'",
    ),
    # one generator per seed, cached at module level: two loaders with one seed share it
    (
        "generator-cache-per-seed",
        "make_loader",
        """
        _generators = {}

        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            if seed not in _generators:
                _generators[seed] = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=_generators[seed])
     """,
        r"module-level variable '_generators'",
    ),
    # a module-level generator used through a sampler made per call
    (
        "module-generator-in-sampler",
        "make_loader",
        """
        _rng = torch.Generator()

        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            sampler = data.RandomSampler(dataset, generator=_rng.manual_seed(seed)) if shuffle else None
            return data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=drop_last,
                                   collate_fn=numpy_collate)
     """,
        SHARED_GENERATOR,
    ),
    (
        "no-collate-fn",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, generator=g)
     """,
        r"is a torch\.Tensor, expected a np\.ndarray",
    ),
    (
        "ignores-the-seed",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(0)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"seeds 0, 1, 2 all give the same order: the seed argument is ignored",
    ),
    (
        "unseeded-shuffle",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate)
     """,
        r"shuffled differently after torch\.manual_seed changed\n(.*\n)*.*its own\s+generator",
    ),
    (
        "seeds-torch-globally",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            torch.manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate)
     """,
        r"(?s)shuffled differently.*changed the state of torch's global RNG",
    ),
    (
        "ignores-drop-last",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"drop_last=True the batch sizes are \[.*\], expected \[.*\]\n(.*\n)*.*incomplete batch must be dropped",
    ),
    (
        "always-shuffles",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"shuffle=False, drop_last=\w+ the samples come in the order \[.*\]\.\.\., expected 0, 1, 2",
    ),
    (
        "never-shuffles",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"shuffle=True, drop_last=\w+ the samples come in the dataset's order: nothing was shuffled",
    ),
    # defaults other than the contract's (seed=0, drop_last=False): the checks that pass them all never see it
    (
        "default-seed-1",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=1, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"without a seed shuffles as with seed=0\n(.*\n)*.*the default seed is 0",
    ),
    (
        "default-drop-last-true",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=True):
            g = torch.Generator().manual_seed(seed)
            return data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                   collate_fn=numpy_collate, generator=g)
     """,
        r"without drop_last, whose default is False(.*\n)*.*the last, smaller batch must be kept",
    ),
    (
        "returns-a-list",
        "make_loader",
        """
        def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
            g = torch.Generator().manual_seed(seed)
            loader = data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                     collate_fn=numpy_collate, generator=g)
            return list(loader)
     """,
        r"returned a list, not a torch\.utils\.data\.DataLoader",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern", gallery(WRONG))
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern):
    results = grade(pytester, MODULE, with_function(MODULE, replacement), only=function)
    assert_rejected(results[function], pattern)


def test_make_loader_is_judged_apart_from_numpy_collate(pytester):
    """A broken numpy_collate fails numpy_collate's checks only; make_loader is judged with the reference's."""
    broken = with_function(
        MODULE,
        """
        def numpy_collate(batch):
            return data.default_collate(batch)
    """,
    )
    results = grade(pytester, MODULE, broken, only="make_loader or numpy_collate_matches")
    assert results["numpy_collate"].status == "failed"
    assert results["make_loader"].status == "passed", results["make_loader"].message
