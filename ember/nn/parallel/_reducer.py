"""DDP's reducer: gradients into buckets, each bucket all-reduced as soon as it is full.

torch's ``Reducer``, in Python. Every parameter's post-accumulate-grad hook copies its gradient
(divided by the world size) into its slot of a flat bucket buffer; when a bucket's last slot
is filled, the bucket is all-reduced asynchronously, so communication overlaps the rest of
backward. Buckets launch strictly in order, so all ranks issue the same collectives in the same
sequence. A callback queued on the backward pass waits for every bucket at its end and writes
the averaged gradients back to ``.grad`` (or leaves ``.grad`` as a view of the bucket, with
``gradient_as_bucket_view``).

The first iteration runs with one bucket, as torch does; after it, buckets are rebuilt in the
order gradients arrived (rank 0's order, broadcast), with a 1 MiB first bucket and
``bucket_cap_mb`` after that. With ``find_unused_parameters`` the buckets are cut at once, in
reverse registration order, and parameters the forward did not use are marked ready with zeros.
"""

from __future__ import annotations

import sys

import numpy as np

from ember._tensor import Tensor
from ember.autograd.engine import queue_callback
from ember.distributed import collectives as c
from ember.distributed.process_group import resolve
from ember.distributed.reduce_op import ReduceOp

FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES


def compute_bucket_assignment_by_size(params: list, limits: list[int],
                                      indices: list[int] | None = None) -> list[list[int]]:
    """torch's ``_compute_bucket_assignment_by_size``: walk ``params`` in order (labelled by
    ``indices``), one open bucket per dtype, closing it once it holds ``limit`` bytes; the
    limits are used in turn, the last one from then on. Without ``indices`` the buckets are
    sorted by their smallest index, as torch does."""
    labels = list(range(len(params))) if indices is None else list(indices)
    open_: dict = {}
    out: list[list[int]] = []
    for p, label in zip(params, labels):
        key = p.dtype
        bucket = open_.setdefault(key, [[], 0, 0])  # labels, bytes, which limit
        bucket[0].append(label)
        bucket[1] += p.numel() * p.element_size()
        if bucket[1] >= limits[min(bucket[2], len(limits) - 1)]:
            out.append(bucket[0])
            open_[key] = [[], 0, bucket[2] + 1]
    out.extend(b[0] for b in open_.values() if b[0])
    return sorted(out, key=min) if indices is None else out


class _Bucket:
    __slots__ = ("indices", "buffer", "views", "pending", "work")

    def __init__(self, indices: list[int], params: list) -> None:
        self.indices = indices
        total = sum(params[i].numel() for i in indices)
        first = params[indices[0]]._data
        self.buffer = np.zeros(total, first.dtype, like=first)  # on the parameters' device
        self.views, start = [], 0
        for i in indices:
            n = params[i].numel()
            self.views.append(self.buffer[start:start + n].reshape(params[i]._data.shape))
            start += n
        self.pending, self.work = len(indices), None


class Reducer:
    """Bucketed, overlapped gradient averaging for ``DistributedDataParallel``."""

    def __init__(self, params: list, group, bucket_cap_bytes: int, find_unused: bool,
                 gradient_as_bucket_view: bool, static_graph: bool,
                 first_bucket_bytes: int = FIRST_BUCKET_BYTES) -> None:
        self.params, self.group = params, group
        self.size = resolve(group).size()
        self.limits = [first_bucket_bytes, bucket_cap_bytes]
        self.find_unused, self.as_view = find_unused, gradient_as_bucket_view
        self.div = float(self.size)
        initial = self.limits if find_unused and not static_graph else [sys.maxsize]
        self._build(list(reversed(compute_bucket_assignment_by_size(params, initial))))
        self.rebuilt = find_unused and not static_graph  # torch rebuilds only otherwise
        self.ready_order: list[int] = []
        self.expect_backward = False
        self.incomplete = False
        self.iterations = 0
        self._unused: list[int] = []
        self._handles = [p.register_post_accumulate_grad_hook(self._hook(i))
                         for i, p in enumerate(params)]

    def _build(self, buckets: list[list[int]]) -> None:
        self.buckets = [_Bucket(b, self.params) for b in buckets]
        self.slot = {}
        for k, b in enumerate(self.buckets):
            for j, i in enumerate(b.indices):
                self.slot[i] = (k, j)

    # --- one iteration --------------------------------------------------------------------
    def prepare(self, outputs) -> None:
        """Called by DDP's forward when a synchronised backward will follow."""
        self.ready = [False] * len(self.params)
        for b in self.buckets:
            b.pending, b.work = len(b.indices), None
        self.next_bucket, self.queued, self.expect_backward = 0, False, True
        self.used = np.ones(len(self.params), np.uint8)
        if self.find_unused:
            reached = _reachable_params(outputs)
            self._unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
            self.used[self._unused] = 0

    def _hook(self, i: int):
        def hook(param: Tensor) -> None:
            if not self.expect_backward:
                return  # no_sync(), or a backward without a DDP forward before it
            if not self.queued:
                self.queued = True
                queue_callback(self.finalize)
                for j in self._unused:
                    self._mark_ready(j, None)
            self._mark_ready(i, param)
        return hook

    def _mark_ready(self, i: int, param) -> None:
        if self.ready[i]:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This error is caused by one of the "
                "following reasons: 1) Use of a module parameter outside the `forward` function. "
                "2) Reused parameters in multiple reentrant backward passes. (parameter index "
                f"{i})")
        self.ready[i] = True
        if not self.rebuilt:
            self.ready_order.append(i)
        k, j = self.slot[i]
        bucket = self.buckets[k]
        view = bucket.views[j]
        grad = None if param is None else param._grad
        if grad is None:
            view[...] = 0
        elif grad._data is view:
            view *= 1.0 / self.div
        else:  # divide while copying, as torch does: one pass over the gradient
            np.multiply(grad._data, 1.0 / self.div, out=view, casting="unsafe")
            if self.as_view:
                param._grad = Tensor._make(view)
        bucket.pending -= 1
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].pending == 0:
            b = self.buckets[self.next_bucket]
            b.work = c.all_reduce(Tensor._make(b.buffer), ReduceOp.SUM, self.group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket:  # let MPI move the launched buckets while backward goes on
            self.buckets[self.next_bucket - 1].work.is_completed()

    def finalize(self) -> None:
        """At the end of backward: wait for every bucket, write the averages to ``.grad``."""
        self.expect_backward = False
        if self.next_bucket < len(self.buckets):
            self.incomplete = True  # reported at the next forward, as torch does
            return
        used = self.used
        if self.find_unused:
            flags = self.meta(used)
            c.all_reduce(flags, ReduceOp.MAX, self.group)
            used = np.asarray(flags._data.tolist())
        for b in self.buckets:
            b.work.wait()
        for b in self.buckets:
            for i, view in zip(b.indices, b.views):
                p = self.params[i]
                if not used[i]:
                    continue  # unused on every rank: .grad stays as it was
                g = p._grad
                if g is None or (self.as_view and g._data is not view):
                    p._grad = Tensor._make(view if self.as_view else view.copy())
                elif g._data is not view:
                    g._data[...] = view
                p._grad._vc[0] += 1
        self.iterations += 1
        if not self.rebuilt:
            self._rebuild()

    def meta(self, values: np.ndarray) -> Tensor:
        """Bookkeeping values as a tensor on the parameters' device (nccl takes CUDA tensors
        only, as torch's DDP keeps its own on the module's device)."""
        return Tensor._make(np.array(values, like=self.params[0]._data))

    def _rebuild(self) -> None:
        """Re-cut the buckets in the order gradients arrived on rank 0 (broadcast to all)."""
        order = self.meta(np.array(self.ready_order, np.int64))
        if order.numel() != len(self.params):
            order = self.meta(np.arange(len(self.params) - 1, -1, -1, dtype=np.int64))
        c.broadcast(order, group=self.group, group_src=0)
        ranked = order._data.tolist()
        self._build(compute_bucket_assignment_by_size([self.params[i] for i in ranked],
                                                      self.limits, ranked))
        self.rebuilt = True

    def shadow(self) -> None:
        """Join the collectives of one backward with zero gradients (a rank whose inputs ran out,
        inside ``DistributedDataParallel.join()``)."""
        self.prepare(None)
        self._unused = []
        self.queued = True
        self.used[:] = 0  # so that finalize leaves every .grad alone
        for i in range(len(self.params)):
            self._mark_ready(i, None)
        self.finalize()

    def remove_hooks(self) -> None:
        for h in self._handles:
            h.remove()


def _reachable_params(outputs) -> set[int]:
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    nodes, found, stack = [], set(), [outputs]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            if x._grad_fn is not None:
                nodes.append(x._grad_fn)
            elif x._rg:
                found.add(id(x))
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list | tuple):
            stack.extend(x)
    seen: set = set()
    while nodes:
        node = nodes.pop()
        if node in seen:
            continue
        seen.add(node)
        var = getattr(node, "variable", None)
        if var is not None:
            found.add(id(var))
        nodes.extend(n for n, _ in node.next_functions if n is not None)
    return found
