"""Samplers: which indices a DataLoader loads, in what order."""

from __future__ import annotations

from collections.abc import Iterable, Sized

import numpy as np

from ember._random import Generator, default_generator, integer_sample
from ember._tensor import Tensor


def _randperm(n: int, generator: Generator | None) -> list[int]:
    return (generator or default_generator)._randperm(n).tolist()


class Sampler:
    """Base class: an iterable of indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation, or ``num_samples`` draws with replacement."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement="
                            f"{replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        # torch's draws, in torch's order, so a seeded run shuffles as torch does: without a
        # generator, a fresh one seeded from the default stream; then randperms (or randints
        # in chunks of 32), drawn lazily as the iteration reaches them.
        n = len(self.data_source)
        g = self.generator
        if g is None:
            g = Generator().manual_seed(int(integer_sample((), 0, 2**63)))
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from g._randint(0, n, 32).tolist()
            yield from g._randint(0, n, self.num_samples % 32).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, g)
            yield from _randperm(n, g)[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order."""

    def __init__(self, indices, generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _randperm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        w = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, np.float64)
        if w.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ember.ops.sampling import multinomial

        # torch: multinomial over the float64 weights, so a seeded run draws torch's indices
        idx = multinomial(Tensor._make(self.weights), self.num_samples, self.replacement,
                          generator=self.generator)
        return iter(idx.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler: Iterable, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
