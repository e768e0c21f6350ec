"""The NCCL backend, through CuPy's ``cupy.cuda.nccl``: collectives on CUDA tensors.

The ranks are started by MPI (as for every ember process group); rank 0's NCCL unique id
travels to the others over MPI, and the fingerprint check and ``barrier`` also run on MPI.
Each NCCL call is enqueued on the current CuPy stream; its ``Work`` is done when an event
recorded after it has fired. Tested on one H200 with a world of one
(tests/test_cuda_nccl.py); CI has no GPU.
"""

from __future__ import annotations

import numpy as np

from ember.distributed.backends.mpi import MpiBackend, reduce_plan
from ember.distributed.reduce_op import RedOpType
from ember.distributed.work import Channel, Work, then

_NCCL_OPS = {RedOpType.SUM: "NCCL_SUM", RedOpType.AVG: "NCCL_SUM",
             RedOpType.PRODUCT: "NCCL_PROD", RedOpType.MIN: "NCCL_MIN",
             RedOpType.MAX: "NCCL_MAX"}
_NCCL_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "bool": "NCCL_UINT8",
               "int32": "NCCL_INT32", "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16",
               "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64"}


def nccl():
    """CuPy's NCCL bindings, or a clear error where CuPy or NCCL is missing."""
    try:
        from cupy.cuda import nccl as _nccl
        _nccl.get_version()
    except Exception as e:
        raise RuntimeError("the nccl backend needs CuPy built with NCCL and a CUDA GPU "
                           '(pip install cupy-cuda12x; python -m cupyx.tools.install_library '
                           '--library nccl --cuda 12.x)') from e
    return _nccl


class NcclBackend:
    """NCCL for data, an ``MpiBackend`` on the same ranks for checks and barriers."""

    name = "nccl"

    def __init__(self, comm, timeout: float) -> None:
        lib = nccl()
        self.mpi = MpiBackend(comm, timeout)
        self.rank, self.size, self.timeout = self.mpi.rank, self.mpi.size, timeout
        uid = lib.get_unique_id() if self.rank == 0 else None
        uid = self.mpi.comm.bcast(uid, root=0)
        self.comm = lib.NcclCommunicator(self.size, uid, self.rank)
        self.channel = Channel(self.rank, lambda events: all(e.done for e in events))

    def close(self) -> None:
        self.comm.destroy()
        self.mpi.close()

    def _launch(self, op: str, a, call, async_op: bool, finish=None, outputs=None) -> Work:
        import cupy

        if not async_op:  # a timed rendezvous, so that a missing rank raises instead of hanging
            rendezvous = self.mpi.barrier(False)
            if rendezvous is not None:  # None: it ran to completion already
                rendezvous.wait()
        stream = cupy.cuda.get_current_stream()

        def issue():
            call(stream.ptr)
            return [stream.record()]
        return Work(self.channel, op, a.size, self.timeout, None, issue, finish, outputs)

    @staticmethod
    def _type(a) -> int:
        name = _NCCL_TYPES.get(a.dtype.name)
        if name is None:
            raise RuntimeError(f"the nccl backend does not support dtype {a.dtype.name}")
        return getattr(nccl(), name)

    def _op(self, a, op: RedOpType, who: str):
        if op not in _NCCL_OPS:
            raise RuntimeError(f"the nccl backend does not support ReduceOp.{op.name}")
        _, _, post = reduce_plan(np.dtype(a.dtype.name), op, self.size, who)
        return getattr(nccl(), _NCCL_OPS[op]), (lambda: post(a)) if post else None

    def all_reduce(self, a, op, async_op, outputs=None) -> Work:
        nop, finish = self._op(a, op, "all_reduce")
        return self._launch("all_reduce", a, lambda s: self.comm.allReduce(
            a.data.ptr, a.data.ptr, a.size, self._type(a), nop, s), async_op, finish, outputs)

    def reduce(self, a, dst, op, async_op, outputs=None) -> Work:
        nop, finish = self._op(a, op, "reduce")
        return self._launch("reduce", a, lambda s: self.comm.reduce(
            a.data.ptr, a.data.ptr, a.size, self._type(a), nop, dst, s), async_op,
            finish if self.rank == dst else None, outputs)

    def broadcast(self, a, src, async_op, outputs=None) -> Work:
        return self._launch("broadcast", a, lambda s: self.comm.broadcast(
            a.data.ptr, a.data.ptr, a.size, self._type(a), src, s), async_op, None, outputs)

    def all_gather_into(self, out, a, async_op, outputs=None) -> Work:
        return self._launch("all_gather", a, lambda s: self.comm.allGather(
            a.data.ptr, out.data.ptr, a.size, self._type(a), s), async_op, None, outputs)

    def reduce_scatter(self, out, inp, op, async_op, outputs=None) -> Work:
        nop, finish = self._op(out, op, "reduce_scatter")
        return self._launch("reduce_scatter", out, lambda s: self.comm.reduceScatter(
            inp.data.ptr, out.data.ptr, out.size, self._type(out), nop, s), async_op, finish,
            outputs)

    def barrier(self, async_op: bool) -> Work:
        return self.mpi.barrier(async_op)

    def all_gather(self, outs, a, async_op, outputs=None) -> Work:
        import cupy

        flat = cupy.empty((self.size, a.size), a.dtype)
        work = self.all_gather_into(flat, a, async_op)
        return then(
            work, lambda: [o.__setitem__(Ellipsis, r.reshape(o.shape)) for o, r in zip(outs, flat)],
            outputs)

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError("gather, scatter, all_to_all, send and recv are not "
                                  "implemented for ember's nccl backend; use backend='mpi'")

    gather = scatter = all_to_all = send = recv = _unsupported
