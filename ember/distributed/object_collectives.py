"""Collectives on picklable Python objects, built on the tensor collectives as in torch:
pickle to bytes, exchange the sizes, then the (padded) bytes."""

from __future__ import annotations

import pickle

import numpy as np

from ember._backend import to_numpy
from ember._tensor import Tensor
from ember.distributed import collectives as c
from ember.distributed.process_group import resolve


def _put(a: np.ndarray, pg) -> Tensor:
    """A tensor of ``a`` on the device the group's backend moves data on: the GPU for nccl
    (as torch does with the current CUDA device), else the CPU."""
    if getattr(pg._backend, "name", None) == "nccl":
        from ember._backend import cupy_module

        return Tensor._make(cupy_module().asarray(a))
    return Tensor._make(a)


def _to_tensor(obj, pg) -> Tensor:
    return _put(np.frombuffer(pickle.dumps(obj), np.uint8).copy(), pg)


def _from_tensor(t: Tensor, size: int):
    return pickle.loads(to_numpy(t._data)[:size].tobytes())


def _sizes(t: Tensor, pg) -> list[int]:
    sizes = [_put(np.zeros(1, np.int64), pg) for _ in range(pg.size())]
    c.all_gather(sizes, _put(np.array([t.numel()], np.int64), pg), group=pg)
    return [int(to_numpy(s._data)[0]) for s in sizes]


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank with ``src``'s (in place)."""
    pg = resolve(group)
    if pg is None:
        return
    root = c._peer(pg, src, group_src, "src")
    mine = pg.rank() == root
    blobs = [np.frombuffer(pickle.dumps(o), np.uint8) for o in object_list] if mine else []
    sizes = _put(np.array([b.size for b in blobs] if mine else [0] * len(object_list),
                          np.int64), pg)
    c.broadcast(sizes, group=pg, group_src=root)
    flat = _put(np.concatenate(blobs) if mine and blobs else
                np.zeros(int(to_numpy(sizes._data).sum()), np.uint8), pg)
    c.broadcast(flat, group=pg, group_src=root)
    if not mine:
        start, data = 0, to_numpy(flat._data)
        for i, n in enumerate(to_numpy(sizes._data).tolist()):
            object_list[i] = pickle.loads(data[start:start + n].tobytes())
            start += n


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[r]`` = rank r's ``obj``, on every rank."""
    pg = resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} entries")
    blob = _to_tensor(obj, pg)
    sizes = _sizes(blob, pg)
    padded = np.zeros(max(sizes), np.uint8)
    padded[:blob.numel()] = to_numpy(blob._data)
    outs = [_put(np.empty(max(sizes), np.uint8), pg) for _ in sizes]
    c.all_gather(outs, _put(padded, pg), group=pg)
    for i, (t, n) in enumerate(zip(outs, sizes)):
        object_list[i] = _from_tensor(t, n)


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None,
                  group=None, group_dst: int | None = None) -> None:
    """``object_gather_list[r]`` on ``dst`` = rank r's ``obj``."""
    pg = resolve(group)
    if pg is None:
        return
    root = c._peer(pg, dst, group_dst, "dst")
    blob = _to_tensor(obj, pg)
    sizes = _sizes(blob, pg)
    padded = np.zeros(max(sizes), np.uint8)
    padded[:blob.numel()] = to_numpy(blob._data)
    mine = pg.rank() == root
    outs = [_put(np.empty(max(sizes), np.uint8), pg) for _ in sizes] if mine else None
    c.gather(_put(padded, pg), outs, group=pg, group_dst=root)
    if mine:
        for i, (t, n) in enumerate(zip(outs, sizes)):
            object_gather_list[i] = _from_tensor(t, n)


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None,
                        src: int | None = None, group=None, group_src: int | None = None) -> None:
    """``scatter_object_output_list[0]`` on rank r = ``src``'s ``scatter_object_input_list[r]``."""
    pg = resolve(group)
    if pg is None:
        return
    everything = [None] * pg.size()
    if pg.rank() == c._peer(pg, src, group_src, "src"):
        everything = list(scatter_object_input_list)
    broadcast_object_list(everything, src, pg, group_src=group_src)
    scatter_object_output_list[0] = everything[pg.rank()]
