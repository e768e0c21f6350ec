"""torch.distributed's collectives and point-to-point calls, on ember tensors.

Each call checks its arguments as torch does, finds the group's backend, hands it the
tensors' arrays (written in place) and returns its ``Work`` with ``async_op=True``, or
returns None once done. ``src``/``dst`` are global ranks; ``group_src``/``group_dst`` are ranks
within ``group``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._tensor import Tensor
from ember.distributed.process_group import (
    GroupMember,
    ProcessGroup,
    _world,
    get_group_rank,
    resolve,
)
from ember.distributed.reduce_op import ReduceOp, as_red_op
from ember.distributed.work import Work, then


def _array(t, name: str = "tensor", backend=None):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")
    a = t._data
    if not a.flags.c_contiguous:
        raise ValueError("Tensors must be contiguous")
    if backend is not None and isinstance(a, np.ndarray) == (backend.name == "nccl"):
        if backend.name != "nccl":
            raise RuntimeError("ember's mpi/gloo backend takes CPU tensors; use "
                               "init_process_group('nccl') for CUDA tensors")
        raise RuntimeError("No backend type associated with device type cpu")
    return a


def _arrays(ts, name: str, backend) -> list:
    if not isinstance(ts, list | tuple):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    return [_array(t, name, backend) for t in ts]


def _group(group, what: str) -> ProcessGroup | None:
    """The group a collective runs on, or None (with torch's warning) on a non-member."""
    if group is None:  # the world: the common case, two calls shorter
        return GroupMember.WORLD or _world()
    pg = resolve(group)
    if pg is None:
        warnings.warn(f"Running {what} on global rank {GroupMember.WORLD.rank()} which does not "
                      "belong to the given group.", stacklevel=3)
    return pg


def _peer(pg: ProcessGroup, rank, group_rank, what: str) -> int:
    """A global ``rank`` or a ``group_rank`` as a rank within ``pg``."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        r = group_rank
    elif rank is None:
        r = 0
    else:
        r = get_group_rank(pg, rank)
    if not 0 <= r < pg.size():
        raise ValueError(f"Invalid {what} rank {r}: the group has ranks 0..{pg.size() - 1}")
    return r


def _done(work: Work | None, async_op: bool) -> Work | None:
    """The caller's result: the Work with ``async_op``, else None once done (a backend returns
    None for a blocking collective it has completed already)."""
    if async_op:
        return work
    if work is not None:
        work.wait()
    return None


def _same(outs: list, like, name: str) -> None:
    for o in outs:
        if o.dtype != like.dtype or o.size != like.size:
            raise ValueError(f"{name}: every tensor must have the input's dtype and number of "
                             f"elements ({like.dtype}, {like.size}); got ({o.dtype}, {o.size})")


def all_reduce(tensor: Tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group, in place, on every rank."""
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    a = _array(tensor, "tensor", pg._backend)
    work = pg._backend.all_reduce(a, as_red_op(op), async_op, [tensor])
    return None if work is None else _done(work, async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy ``tensor`` from ``src`` to every rank of the group."""
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    a = _array(tensor, backend=pg._backend)
    root = _peer(pg, src, group_src, "src")
    return _done(pg._backend.broadcast(a, root, async_op, [tensor]), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op=ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Reduce ``tensor`` across the group into ``dst``'s tensor."""
    pg = _group(group, "reduce")
    if pg is None:
        return None
    a = _array(tensor, backend=pg._backend)
    root = _peer(pg, dst, group_dst, "dst")
    return _done(pg._backend.reduce(a, root, as_red_op(op), async_op, [tensor]), async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """``tensor_list[r]`` = rank r's ``tensor``, on every rank."""
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    be = pg._backend
    a, outs = _array(tensor, backend=be), _arrays(tensor_list, "tensor_list", be)
    if len(outs) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold one tensor per rank ({pg.size()}), "
                         f"got {len(outs)}")
    _same(outs, a, "all_gather")
    return _done(be.all_gather(outs, a, async_op, list(tensor_list)), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):
    """Every rank's ``input_tensor``, back to back (or stacked) in ``output_tensor``."""
    pg = _group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    be = pg._backend
    out, a = _array(output_tensor, "output_tensor", be), _array(input_tensor, "input_tensor", be)
    if out.dtype != a.dtype or out.size != a.size * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size "
                         "with the same dtype")
    return _done(be.all_gather_into(out, a, async_op, [output_tensor]), async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int | None = None, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """``gather_list[r]`` on ``dst`` = rank r's ``tensor``."""
    pg = _group(group, "gather")
    if pg is None:
        return None
    be = pg._backend
    a = _array(tensor, backend=be)
    root = _peer(pg, dst, group_dst, "dst")
    outs = None
    if pg.rank() == root:
        outs = _arrays(gather_list or [], "gather_list", be)
        if len(outs) != pg.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _same(outs, a, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    return _done(be.gather(a, outs, root, async_op, list(gather_list or [])), async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int | None = None,
            group=None, async_op: bool = False, group_src: int | None = None):
    """Rank r's ``tensor`` = ``scatter_list[r]`` of ``src``."""
    pg = _group(group, "scatter")
    if pg is None:
        return None
    be = pg._backend
    a = _array(tensor, backend=be)
    root = _peer(pg, src, group_src, "src")
    ins = None
    if pg.rank() == root:
        ins = _arrays(scatter_list or [], "scatter_list", be)
        if len(ins) != pg.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _same(ins, a, "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return _done(be.scatter(a, ins, root, async_op, [tensor]), async_op)


def reduce_scatter(output: Tensor, input_list: list, op=ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """Rank r's ``output`` = the reduction over ranks of their ``input_list[r]``."""
    pg = _group(group, "reduce_scatter")
    if pg is None:
        return None
    be = pg._backend
    out, ins = _array(output, "output", be), _arrays(input_list, "input_list", be)
    if len(ins) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must hold one tensor per rank "
                         f"({pg.size()}), got {len(ins)}")
    _same(ins, out, "reduce_scatter")
    flat = np.concatenate([x.reshape(-1) for x in ins]) if ins else out
    return _done(be.reduce_scatter(out, flat, as_red_op(op), async_op, [output]), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op=ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """``input`` split into one chunk per rank; rank r's ``output`` = chunk r reduced."""
    pg = _group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    be = pg._backend
    out, a = _array(output, "output", be), _array(input, "input", be)
    if out.dtype != a.dtype or a.size != out.size * pg.size():
        raise ValueError("input tensor must be the same type as the output tensor and its size "
                         "must be world_size times the output size")
    return _done(be.reduce_scatter(out, a, as_red_op(op), async_op, [output]), async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None,
               async_op: bool = False):
    """Rank r's ``output_tensor_list[q]`` = rank q's ``input_tensor_list[r]``."""
    pg = _group(group, "all_to_all")
    if pg is None:
        return None
    be = pg._backend
    outs = _arrays(output_tensor_list, "output_tensor_list", be)
    ins = _arrays(input_tensor_list, "input_tensor_list", be)
    if len(outs) != pg.size() or len(ins) != pg.size():
        raise ValueError(f"all_to_all: both lists must hold one tensor per rank ({pg.size()})")
    dtypes = {x.dtype for x in outs + ins}
    if len(dtypes) > 1:
        raise ValueError("all_to_all: every tensor must have the same dtype")
    send = np.concatenate([x.reshape(-1) for x in ins])
    recv = np.empty(sum(x.size for x in outs), send.dtype)
    work = be.all_to_all(recv, send, [x.nbytes for x in outs], [x.nbytes for x in ins], async_op)

    def unpack():
        offsets = np.cumsum([0] + [x.size for x in outs])
        for o, lo, hi in zip(outs, offsets[:-1], offsets[1:]):
            o.reshape(-1)[...] = recv[lo:hi]
    return _done(then(work, unpack, list(output_tensor_list)), async_op)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes=None,
                      input_split_sizes=None, group=None, async_op: bool = False):
    """``all_to_all`` on dim-0 slices of one tensor (equal slices unless split sizes are given)."""
    pg = _group(group, "all_to_all_single")
    if pg is None:
        return None
    be = pg._backend
    out, a = _array(output, "output", be), _array(input, "input", be)
    if out.dtype != a.dtype:
        raise ValueError("all_to_all_single: input and output must have the same dtype")
    n = pg.size()
    row_out = out.nbytes // max(out.shape[0], 1) if out.ndim else out.nbytes
    row_in = a.nbytes // max(a.shape[0], 1) if a.ndim else a.nbytes
    out_split = _splits(output_split_sizes, out, n, "output")
    in_split = _splits(input_split_sizes, a, n, "input")
    work = be.all_to_all(out, a, [s * row_out for s in out_split],
                         [s * row_in for s in in_split], async_op, [output])
    return _done(work, async_op)


def _splits(sizes, a, n: int, name: str) -> list[int]:
    rows = a.shape[0] if a.ndim else 1
    if not sizes:
        if rows % n:
            raise ValueError(f"all_to_all_single: {name} dim 0 ({rows}) is not divisible by the "
                             f"group size ({n}); pass {name}_split_sizes")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {name}_split_sizes must have {n} entries summing "
                         f"to {name}.size(0) = {rows}")
    return sizes


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached this call."""
    pg = _group(group, "barrier")
    if pg is None:
        return None
    return _done(pg._backend.barrier(async_op), async_op)


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Send ``tensor`` to ``dst``; returns a Work."""
    pg = _group(group, "isend")
    if pg is None:
        return None
    a = _array(tensor, backend=pg._backend)
    peer = _peer(pg, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as rank of the "
                         "current process.")
    return pg._backend.send(a, peer, tag)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receive into ``tensor`` from ``src`` (any rank if None); returns a Work."""
    pg = _group(group, "irecv")
    if pg is None:
        return None
    a = _array(tensor, backend=pg._backend)
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src")
    if peer == pg.rank():
        raise ValueError("Invalid source rank: should not be the same as rank of the current "
                         "process.")
    return pg._backend.recv(a, peer, tag, [tensor])


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor``; returns the sender's global rank (-1 off the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = resolve(group)
    return pg._ranks[work.status.Get_source()]
