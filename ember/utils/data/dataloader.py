"""DataLoader: batching, shuffling, collation, and real worker processes."""

from __future__ import annotations

import itertools

from ember._random import integer_sample
from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data._worker_pool import MultiProcessIter
from ember.utils.data.dataset import IterableDataset
from ember.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler


class _InfiniteConstantSampler:
    def __iter__(self):
        while True:
            yield None


class _Fetcher:
    """Turns a batch of indices into a collated batch (map-style or iterable datasets)."""

    def __init__(self, collate_fn, auto_collation: bool, drop_last: bool) -> None:
        self.collate_fn = collate_fn
        self.auto_collation = auto_collation
        self.drop_last = drop_last

    def __call__(self, source, indices):
        if isinstance(indices, _IterRequest):
            if not self.auto_collation:
                return self.collate_fn(next(source))
            batch = list(itertools.islice(source, indices.size))
            if not batch or (self.drop_last and len(batch) < indices.size):
                raise StopIteration
            return self.collate_fn(batch)
        if self.auto_collation:
            getitems = getattr(source, "__getitems__", None)
            data = getitems(indices) if getitems else [source[i] for i in indices]
            return self.collate_fn(data)
        return self.collate_fn(source[indices])


class _IterRequest:
    """A fetch request for an IterableDataset: the next ``size`` samples of the stream."""

    def __init__(self, size: int) -> None:
        self.size = size


class DataLoader:
    """Iterate over a dataset in (shuffled) mini-batches, optionally with worker processes."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _validate(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 "or batch_sampler option")
            sampler = _InfiniteConstantSampler()
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        auto = batch_sampler is not None or (self._iterable and batch_size is not None)
        self.collate_fn = collate_fn or (default_collate if auto else default_convert)
        self._auto_collation = auto
        self._persistent_iter = None

    @property
    def _index_sampler(self):
        """What yields the fetch requests: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def _index_stream(self):
        if self._iterable:
            size = self.batch_size if self.batch_size is not None else 1
            return (_IterRequest(size) for _ in itertools.count())
        return iter(self._index_sampler)

    def _fetcher(self) -> _Fetcher:
        return _Fetcher(self.collate_fn, self._auto_collation, self.drop_last)

    def _base_seed(self) -> int:
        # torch draws this from the loader's generator each time it makes an iterator, even
        # without workers; drawing it too keeps ember's random stream in step with torch's.
        return int(integer_sample((), 0, 2**63, self.generator))

    def __iter__(self):
        if self.num_workers == 0:
            self._base_seed()
            return _single_process_iter(self)
        if self.persistent_workers:
            if self._persistent_iter is None or not self._persistent_iter.reset(self):
                self._persistent_iter = MultiProcessIter(self)
            return self._persistent_iter
        return MultiProcessIter(self)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self._auto_collation else self.sampler)


def _validate(num_workers, timeout, prefetch_factor, persistent_workers) -> None:
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _single_process_iter(loader: DataLoader):
    fetch = loader._fetcher()
    source = iter(loader.dataset) if loader._iterable else loader.dataset
    for indices in loader._index_stream():
        try:
            yield fetch(source, indices)
        except StopIteration:
            return
