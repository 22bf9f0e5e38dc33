"""Reference solution: feeding JAX from a PyTorch ``DataLoader``."""

import numpy as np
import torch
import torch.utils.data as data


def numpy_collate(batch):
    first = batch[0]
    if isinstance(first, np.ndarray):
        return np.stack(batch)
    if isinstance(first, (tuple, list)):
        return [numpy_collate(list(samples)) for samples in zip(*batch)]
    if isinstance(first, dict):
        return {key: numpy_collate([sample[key] for sample in batch]) for key in first}
    return np.array(batch)


class XORDataset(data.Dataset):
    def __init__(self, size, seed, std=0.1):
        super().__init__()
        self.size = size
        self.np_rng = np.random.RandomState(seed=seed)
        self.std = std
        self.generate_continuous_xor()

    def generate_continuous_xor(self):
        data = self.np_rng.randint(low=0, high=2, size=(self.size, 2)).astype(np.float32)
        label = (data.sum(axis=1) == 1).astype(np.int32)
        data += self.np_rng.normal(loc=0.0, scale=self.std, size=data.shape)
        self.data = data
        self.label = label

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return self.data[idx], self.label[idx]


def make_loader(dataset, batch_size, shuffle, seed=0, drop_last=False):
    generator = torch.Generator()
    generator.manual_seed(seed)
    return data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        collate_fn=numpy_collate,
        generator=generator,
    )
