"""utils.data against torch.utils.data: ordering, batching, collation, samplers, workers."""

import collections
import gc
import multiprocessing as mp
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud


def _same(e, t):
    """Structural equality of a collated ember batch and a torch batch."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            _same(e[k], t[k])
    elif isinstance(t, list | tuple):
        assert type(e).__name__ == type(t).__name__, (type(e), type(t))
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b)
    else:
        assert e == t


Point = collections.namedtuple("Point", "x y")
SAMPLES = [
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    ["a", "b"],
    [np.arange(3, dtype=np.float32), np.ones(3, np.float32)],
    [np.int64(3), np.int64(4)],
    [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}],
    [(1, 2.0), (3, 4.0)],
    [[1, 2], [3, 4]],
    [Point(1, 2.0), Point(3, 4.0)],
]


@pytest.mark.parametrize("batch", SAMPLES, ids=range(len(SAMPLES)))
def test_default_collate_matches_torch(batch):
    _same(eud.default_collate(batch), tud.default_collate(batch))


def test_default_collate_tensors_and_errors():
    e = eud.default_collate([ember.ones(2, 3), ember.zeros(2, 3)])
    t = tud.default_collate([torch.ones(2, 3), torch.zeros(2, 3)])
    _same(e, t)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        eud.default_collate([[1, 2], [3]])


@pytest.mark.parametrize("kw", [
    dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None),
    dict(batch_size=3, shuffle=False), dict(batch_size=1),
])
def test_sequential_loading_matches_torch(kw):
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10)
    e = list(eud.DataLoader(eud.TensorDataset(ember.tensor(x), ember.tensor(y)), **kw))
    t = list(tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.tensor(y)), **kw))
    assert len(e) == len(t)
    for a, b in zip(e, t):
        _same(a, b)
    assert len(eud.DataLoader(eud.TensorDataset(ember.tensor(x)), **kw)) == len(t)


def test_shuffle_is_a_permutation_and_seeded():
    ds = eud.TensorDataset(ember.arange(20))
    g = ember.Generator().manual_seed(1)
    a = [b[0].tolist() for b in eud.DataLoader(ds, batch_size=5, shuffle=True, generator=g)]
    flat = sorted(v for b in a for v in b)
    assert flat == list(range(20)) and a != [list(range(i, i + 5)) for i in range(0, 20, 5)]
    g2 = ember.Generator().manual_seed(1)
    assert a == [b[0].tolist() for b in eud.DataLoader(ds, batch_size=5, shuffle=True,
                                                        generator=g2)]


def _shuffle_run(mod, data):
    """One seeded program's random draws: two shuffled epochs, samplers, then a rand."""
    mod.manual_seed(0)
    ds = data.TensorDataset(mod.arange(10))
    loader = data.DataLoader(ds, batch_size=4, shuffle=True)
    out = [[b[0].tolist() for b in loader] for _ in range(2)]
    out.append(list(data.RandomSampler(range(7), replacement=True, num_samples=40)))
    out.append(list(data.RandomSampler(range(5), num_samples=12)))
    out.append(list(data.SubsetRandomSampler([10, 20, 30, 40, 50, 60])))
    g = mod.Generator().manual_seed(3)
    out.append([b[0].tolist() for b in data.DataLoader(ds, batch_size=3, shuffle=True,
                                                        generator=g)])
    out.append([b[0].tolist() for b in data.random_split(ds, [0.3, 0.7])[0]])
    out.append(mod.rand(3).tolist())
    return out


def test_shuffle_streams_match_torch():
    # same seed, same draws in the same order: a seeded training run sees torch's batches
    assert _shuffle_run(ember, eud) == _shuffle_run(torch, tud)


def test_samplers():
    assert list(eud.SequentialSampler(range(4))) == [0, 1, 2, 3]
    rs = list(eud.RandomSampler(range(5), replacement=True, num_samples=12))
    assert len(rs) == 12 and all(0 <= i < 5 for i in rs)
    assert sorted(eud.SubsetRandomSampler([3, 7, 9])) == [3, 7, 9]
    w = list(eud.WeightedRandomSampler([0.0, 0.0, 1.0], 10))
    assert w == [2] * 10
    assert list(eud.BatchSampler(range(7), 3, False)) == list(tud.BatchSampler(range(7), 3,
                                                                                False))
    assert len(eud.BatchSampler(range(7), 3, True)) == 2


def test_argument_errors_match_torch():
    ds = list(range(4))
    for kw in [dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
               dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
               dict(persistent_workers=True)]:
        with pytest.raises(ValueError) as te:
            tud.DataLoader(ds, **kw)
        with pytest.raises(ValueError) as ee:
            eud.DataLoader(ds, **kw)
        assert str(ee.value) == str(te.value)


def test_datasets_and_random_split():
    a, b = eud.TensorDataset(ember.arange(3)), eud.TensorDataset(ember.arange(3, 5))
    c = eud.ConcatDataset([a, b])
    assert len(c) == 5 and c[3][0].item() == 3 and c[-1][0].item() == 4
    assert (a + b)[4][0].item() == 4
    s = eud.Subset(c, [4, 0])
    assert [x[0].item() for x in s] == [4, 0]
    parts = eud.random_split(range(10), [0.5, 0.3, 0.2], generator=ember.Generator())
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p) == list(range(10))
    with pytest.raises(ValueError, match="Sum of input lengths"):
        eud.random_split(range(10), [3, 3])


class Slow(eud.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        start = time.monotonic()  # one clock for all processes
        time.sleep(0.03)
        info = eud.get_worker_info()
        return i, -1 if info is None else info.id, start, time.monotonic()


class Failing(eud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample 5")
        return i


class Stream(eud.IterableDataset):
    def __iter__(self):
        info = eud.get_worker_info()
        lo, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(lo, 10, step))

    def __len__(self):
        return 10


def test_workers_keep_order_and_run_in_parallel():
    serial = list(eud.DataLoader(Slow(), batch_size=2))
    parallel = list(eud.DataLoader(Slow(), batch_size=2, num_workers=2))
    assert [b[0].tolist() for b in serial] == [b[0].tolist() for b in parallel]
    spans = {0: [], 1: []}
    for _, wid, start, end in parallel:
        spans[wid[0].item()] += zip(start.tolist(), end.tolist())
    # the two workers fetched at the same time (a wall-clock speed-up would be at the mercy
    # of a loaded machine; overlapping fetches are not)
    assert any(s0 < e1 and s1 < e0 for s0, e0 in spans[0] for s1, e1 in spans[1])


def test_worker_error_is_reraised_with_traceback():
    with pytest.raises(ValueError, match="Caught ValueError in DataLoader worker process") as e:
        list(eud.DataLoader(Failing(), batch_size=2, num_workers=2))
    assert "bad sample 5" in str(e.value) and "Traceback" in str(e.value)
    del e  # its traceback holds the iterator
    gc.collect()
    assert not mp.active_children()


def _skipping_errors(data, **kw):
    """Every batch of two epochs, or the type of error raised in its place."""
    loader = data.DataLoader(Failing(), batch_size=1, num_workers=2, **kw)
    out = []
    for _ in range(2):
        it = iter(loader)
        for _ in range(len(loader) + 1):  # bounded: a broken iterator may raise forever
            try:
                out.append(next(it).tolist())
            except StopIteration:
                break
            except ValueError as e:
                out.append(str(e).split("\n")[0])
    return out


@pytest.mark.parametrize("persistent", [False, True])
def test_loading_goes_on_after_a_worker_error(persistent):
    # as torch: the error is raised in the batch's place, the workers live on
    kw = dict(persistent_workers=persistent)
    e = _skipping_errors(eud, **kw)
    assert not mp.active_children()  # stopped with their loader: no cycle holds it
    t = _skipping_errors(tud, **kw)
    gc.collect()  # torch's loader is left in a reference cycle by the error
    assert e == t


def test_abandoned_iterator_leaves_no_workers():
    it = iter(eud.DataLoader(Slow(), batch_size=2, num_workers=2))
    next(it)
    assert len(mp.active_children()) == 2
    del it
    gc.collect()
    assert not mp.active_children()


def test_worker_seeding_init_fn_and_persistent_workers():
    class Rand(eud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return ember.rand(1).item(), eud.get_worker_info().seed

    seen = []
    dl = eud.DataLoader(Rand(), batch_size=1, num_workers=2, worker_init_fn=seen.append,
                        persistent_workers=True)
    vals = [(v.item(), s.item()) for v, s in dl]
    seeds = {s for _, s in vals}
    assert len(seeds) == 2 and len({v for v, _ in vals}) == 4
    assert len(list(dl)) == 4  # second epoch on the same workers
    first_workers = dl._persistent_iter.workers
    list(dl)
    assert dl._persistent_iter.workers is first_workers


def test_iterable_dataset_with_workers():
    out = sorted(v for b in eud.DataLoader(Stream(), batch_size=3, num_workers=2)
                 for v in b.tolist())
    assert out == list(range(10))
    assert [b.tolist() for b in eud.DataLoader(Stream(), batch_size=4)] == [
        b.tolist() for b in tud.DataLoader(_TorchStream(), batch_size=4)]


class _TorchStream(tud.IterableDataset):
    def __iter__(self):
        return iter(range(10))
