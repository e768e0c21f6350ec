"""DataLoader workers hand their batches over in shared memory, as torch's: every tensor of a
worker's batch arrives ``is_shared()`` with the values of the same batch loaded in-process;
the main process unlinks each segment once mapped, so that none is left behind after a whole
epoch, an abandoned one, persistent workers, a worker's error or a deleted loader."""

import gc
import os
import time
from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud
from ember.multiprocessing import _shared

Pair = namedtuple("Pair", "x y")


class Samples:
    """A tensor, a NumPy array, an int, a float, a string, a dict and a namedtuple."""

    def __init__(self, lib, n=12):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 99:
            raise ValueError("bad index 99")
        x = np.arange(6, dtype=np.float32).reshape(2, 3) * i
        return (self.lib.tensor(x), x.astype(np.int64), i, 0.5 * i, f"s{i}",
                {"t": self.lib.tensor([i, -i])}, Pair(self.lib.tensor(float(i)), i % 3))


def _tensors(batch):
    if isinstance(batch, dict):
        return [t for v in batch.values() for t in _tensors(v)]
    if isinstance(batch, list | tuple):
        return [t for v in batch for t in _tensors(v)]
    return [batch] if hasattr(batch, "is_shared") else []


def _ours() -> set:
    """This process's workers' segments in /dev/shm."""
    prefix = _shared.handoff_prefix(os.getpid())
    return {n for n in os.listdir("/dev/shm") if n.startswith(prefix)}


def _none_left(limit=5.0) -> bool:
    gc.collect()
    deadline = time.monotonic() + limit
    while _ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _ours()


pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="POSIX shared memory")


@pytest.mark.parametrize("lib", [ember, torch])
def test_worker_batches_arrive_shared_with_the_same_values(lib):
    data = eud if lib is ember else tud
    ds = Samples(lib)
    in_process = list(data.DataLoader(ds, batch_size=4, num_workers=0))
    from_workers = list(data.DataLoader(ds, batch_size=4, num_workers=2))
    assert len(in_process) == len(from_workers) == 3
    for a, b in zip(in_process, from_workers):
        ta, tb = _tensors(a), _tensors(b)
        assert len(ta) == len(tb) == 7
        for u, v in zip(ta, tb):
            assert not u.is_shared()
            assert v.is_shared()
            assert u.dtype == v.dtype and lib.equal(u, v)
        assert a[4] == b[4] and type(b[6]) is Pair
    assert _none_left()


def test_shared_batches_are_writable_and_survive_the_loader():
    loader = eud.DataLoader(Samples(ember), batch_size=4, num_workers=2)
    batches = list(loader)
    del loader
    gc.collect()
    assert _none_left()  # the names are gone: the mappings keep the memory
    x = batches[1][0]
    x += 1
    assert ember.equal(x[0], ember.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) * 4 + 1))


@pytest.mark.parametrize("persistent", [False, True])
def test_no_segment_is_left_behind(persistent):
    loader = eud.DataLoader(Samples(ember, 64), batch_size=2, num_workers=2,
                            persistent_workers=persistent, prefetch_factor=4)
    for _ in range(2):  # a whole epoch, then one abandoned after two batches
        for _ in loader:
            pass
        it = iter(loader)
        next(it), next(it)
        del it
    del loader
    assert _none_left()


def test_worker_errors_and_collate_fallbacks_leave_nothing():
    ds = Samples(ember)
    bad = eud.DataLoader(ds, batch_sampler=[[0, 1], [99], [2, 3]], num_workers=2)
    it = iter(bad)
    assert next(it)[0].is_shared()
    with pytest.raises(ValueError, match="bad index 99"):
        next(it)
    assert next(it)[0].is_shared()
    del it, bad

    def mixed(batch):  # shapes that differ: stacked by ember.stack, moved at the send
        return [ember.tensor(np.ones(i + 1)) for i, _ in enumerate(batch)]

    out = list(eud.DataLoader(ds, batch_size=3, num_workers=1, collate_fn=mixed))
    assert all(t.is_shared() for b in out for t in b)
    assert _none_left()


def _total(q, out):
    out.put(float(q.get().sum()))


def test_a_received_batch_can_be_sent_on():
    import ember.multiprocessing as emp

    x = next(iter(eud.DataLoader(Samples(ember), batch_size=4, num_workers=1)))[0]
    ctx = emp.get_context("fork")
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_total, args=(q, out))
    p.start()
    q.put(x)  # its segment has no name any more: it travels by value
    assert out.get(timeout=30) == float(x.sum())
    p.join(30)
    assert p.exitcode == 0
    assert _none_left()
