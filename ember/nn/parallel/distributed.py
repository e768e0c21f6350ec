"""``DistributedDataParallel``: one model replica per rank, gradients averaged in backward.

At construction the replicas are made identical (rank 0's parameters and buffers broadcast)
and a ``Reducer`` (``reducer.py``) hooks every parameter. Each forward first broadcasts rank
0's buffers (``broadcast_buffers``), then runs the module and, when a synchronised backward will
follow, primes the reducer. ``no_sync()`` lets gradients accumulate locally; ``join()`` lets
ranks with fewer batches shadow the others' collectives until every rank is done.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ember._tensor import Tensor
from ember.autograd.grad_mode import is_grad_enabled
from ember.distributed import collectives as c
from ember.distributed.object_collectives import all_gather_object
from ember.distributed.process_group import resolve
from ember.distributed.reduce_op import ReduceOp
from ember.nn.modules.module import Module
from ember.nn.parallel._reducer import Reducer

_INCOMPLETE = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing loss. "
    "You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss.")


class DistributedDataParallel(Module):
    """torch's DDP over ember.distributed (see the module docstring).

    >>> ddp = DistributedDataParallel(model)   # after init_process_group
    >>> ddp(x).sum().backward()                # .grad now holds the average over ranks
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params: bool = False) -> None:
        super().__init__()
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.dim, self.device_ids, self.output_device = dim, device_ids, output_device
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        self._group_size = resolve(process_group).size()
        self._verify_same_model(params)
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        first = None if bucket_cap_mb is None else self.bucket_bytes_cap
        self.reducer = Reducer(params, process_group, self.bucket_bytes_cap,
                               find_unused_parameters, gradient_as_bucket_view, static_graph,
                               **({} if first is None else {"first_bucket_bytes": first}))
        self._join_state: dict | None = None

    # --- construction ---------------------------------------------------------------------
    def _verify_same_model(self, params: list) -> None:
        shapes: list = [None] * self._group_size
        all_gather_object(shapes, [tuple(p.shape) for p in params], group=self.process_group)
        for r, theirs in enumerate(shapes):
            if len(theirs) != len(params):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank "
                                   f"{resolve(self.process_group).rank()} has {len(params)} "
                                   f"params, while rank {r} has inconsistent {len(theirs)} params.")
            for k, (a, b) in enumerate(zip(shapes[0], theirs)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but rank {r} "
                                       f"has parameter {k} of shape {list(b)} where rank 0 has "
                                       f"{list(a)}.")

    def _broadcast(self, tensors: list, src: int = 0) -> None:
        """Broadcast ``tensors`` from group rank ``src``: one flat message per dtype."""
        by_dtype: dict = {}
        for t in tensors:
            by_dtype.setdefault(t._data.dtype, []).append(t)
        for dtype, ts in by_dtype.items():
            flat = Tensor._make(np.concatenate([t._data.reshape(-1) for t in ts]).astype(dtype))
            c.broadcast(flat, group=self.process_group, group_src=src)
            start = 0
            for t in ts:
                n = t._data.size
                t._data[...] = flat._data[start:start + n].reshape(t._data.shape)
                t._vc[0] += 1
                start += n

    # --- forward --------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        if reducer.incomplete:
            raise RuntimeError(_INCOMPLETE)
        if self._join_state is not None:
            self._join_state["iterations"] += 1
            self._count_active(1)
        buffers = list(self.module.buffers())
        if self.broadcast_buffers and self.require_forward_param_sync and buffers:
            self._broadcast(buffers)
        out = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            reducer.prepare(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients accumulate locally inside; the first backward after it averages them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # --- uneven inputs --------------------------------------------------------------------
    def _count_active(self, me: int) -> int:
        """How many ranks are still training (each forward inside ``join()`` asks)."""
        flag = self.reducer.meta(np.array([me], np.int64))
        c.all_reduce(flag, group=self.process_group)
        active = int(flag._data[0])
        state = self._join_state
        if state["throw"] and 0 < active < self._group_size:
            raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across "
                               "all ranks.")
        if not state["divide_by_initial"] and active:
            self.reducer.div = float(active)
        return active

    @contextlib.contextmanager
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):
        """Train on uneven inputs: a rank that leaves the block early shadows the others'
        collectives (zero gradients) until every rank has left; then the replicas are
        re-synchronised from the rank that trained longest."""
        if not enable:
            yield
            return
        self._join_state = {"iterations": 0, "throw": throw_on_early_termination,
                            "divide_by_initial": divide_by_initial_world_size}
        try:
            yield
            while self._count_active(0):
                buffers = list(self.module.buffers())
                if self.broadcast_buffers and buffers:
                    self._broadcast(buffers)
                self.reducer.shadow()
            key = self.reducer.meta(np.array([self._join_state["iterations"] * self._group_size
                                              + resolve(self.process_group).rank()], np.int64))
            c.all_reduce(key, ReduceOp.MAX, group=self.process_group)
            self._broadcast(list(self.module.parameters()) + list(self.module.buffers()),
                            src=int(key._data[0]) % self._group_size)
        finally:
            self._join_state = None
            self.reducer.div = float(self._group_size)
