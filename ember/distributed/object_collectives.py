"""Collectives on picklable Python objects, built on the tensor collectives as in torch:
pickle to bytes, exchange the sizes, then the (padded) bytes."""

from __future__ import annotations

import pickle

import numpy as np

from ember._tensor import Tensor
from ember.distributed import collectives as c
from ember.distributed.process_group import resolve


def _to_tensor(obj) -> Tensor:
    return Tensor._make(np.frombuffer(pickle.dumps(obj), np.uint8).copy())


def _from_tensor(t: Tensor, size: int):
    return pickle.loads(t._data[:size].tobytes())


def _sizes(t: Tensor, pg) -> list[int]:
    sizes = [Tensor._make(np.zeros(1, np.int64)) for _ in range(pg.size())]
    c.all_gather(sizes, Tensor._make(np.array([t.numel()], np.int64)), group=pg)
    return [int(s._data[0]) for s in sizes]


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank with ``src``'s (in place)."""
    pg = resolve(group)
    if pg is None:
        return
    root = c._peer(pg, src, group_src, "src")
    mine = pg.rank() == root
    blobs = [_to_tensor(o) for o in object_list] if mine else []
    sizes = Tensor._make(np.array([b.numel() for b in blobs] if mine else
                                  [0] * len(object_list), np.int64))
    c.broadcast(sizes, group=pg, group_src=root)
    flat = Tensor._make(np.concatenate([b._data for b in blobs]) if mine and blobs else
                        np.zeros(int(sizes._data.sum()), np.uint8))
    c.broadcast(flat, group=pg, group_src=root)
    if not mine:
        start = 0
        for i, n in enumerate(sizes._data.tolist()):
            object_list[i] = pickle.loads(flat._data[start:start + n].tobytes())
            start += n


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[r]`` = rank r's ``obj``, on every rank."""
    pg = resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} entries")
    blob = _to_tensor(obj)
    sizes = _sizes(blob, pg)
    padded = Tensor._make(np.zeros(max(sizes), np.uint8))
    padded._data[:blob.numel()] = blob._data
    outs = [Tensor._make(np.empty(max(sizes), np.uint8)) for _ in sizes]
    c.all_gather(outs, padded, group=pg)
    for i, (t, n) in enumerate(zip(outs, sizes)):
        object_list[i] = _from_tensor(t, n)


def gather_object(obj, object_gather_list: list | None = None, dst: int | None = None,
                  group=None, group_dst: int | None = None) -> None:
    """``object_gather_list[r]`` on ``dst`` = rank r's ``obj``."""
    pg = resolve(group)
    if pg is None:
        return
    root = c._peer(pg, dst, group_dst, "dst")
    blob = _to_tensor(obj)
    sizes = _sizes(blob, pg)
    padded = Tensor._make(np.zeros(max(sizes), np.uint8))
    padded._data[:blob.numel()] = blob._data
    mine = pg.rank() == root
    outs = [Tensor._make(np.empty(max(sizes), np.uint8)) for _ in sizes] if mine else None
    c.gather(padded, outs, group=pg, group_dst=root)
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
