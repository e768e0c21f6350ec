"""The MPI backend: ember's collectives as mpi4py calls on one communicator.

Every collective runs MPI's nonblocking call (``Iallreduce``, ...) once the fingerprint
exchange (see ``work.py``) is complete, and progresses whenever any work of the group is
polled or waited on; a blocking collective is one that is waited on at once, so the group's
timeout covers the transfer too.
Data-moving collectives send raw bytes, so every dtype travels; reductions run in a dtype MPI
can reduce (bfloat16 in float32, bool as uint8 with the matching logical op).
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

from ember.distributed.reduce_op import RedOpType
from ember.distributed.work import Channel, Work, then

_MAXDIMS = 8
_OPS = ("all_reduce", "broadcast", "reduce", "all_gather", "gather", "scatter",
        "reduce_scatter", "all_to_all", "barrier")
_BOOL_OPS = {RedOpType.SUM: "MAX", RedOpType.MAX: "MAX", RedOpType.BOR: "MAX",
             RedOpType.PRODUCT: "MIN", RedOpType.MIN: "MIN", RedOpType.BAND: "MIN",
             RedOpType.BXOR: "BXOR"}
_MPI_OPS = {RedOpType.SUM: "SUM", RedOpType.AVG: "SUM", RedOpType.PRODUCT: "PROD",
            RedOpType.MIN: "MIN", RedOpType.MAX: "MAX", RedOpType.BAND: "BAND",
            RedOpType.BOR: "BOR", RedOpType.BXOR: "BXOR"}


@functools.cache
def mpi():
    """The mpi4py ``MPI`` module (importing it initialises MPI), or a clear error."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError("ember.distributed needs mpi4py and an MPI library: "
                           'pip install "ember[distributed]" (mpi4py and mpich)') from e
    return MPI


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)


def _dtype_code(dt: np.dtype) -> int:
    return zlib.crc32(dt.name.encode())


def _fingerprint(op: str, a: np.ndarray | None, any_shape: bool) -> np.ndarray:
    fp = np.zeros(4 + _MAXDIMS, np.int64)
    fp[0] = _OPS.index(op)
    if a is not None:
        fp[1] = _dtype_code(a.dtype)
        fp[2], fp[3] = (-1, -1) if any_shape else (a.ndim, a.size)
        if not any_shape:
            fp[4:4 + min(a.ndim, _MAXDIMS)] = a.shape[:_MAXDIMS]
    return fp


def _describe(fp: np.ndarray, seq: int) -> str:
    names = {_dtype_code(np.dtype(d)): np.dtype(d).name for d in np.sctypeDict.values()
             if isinstance(d, type)}
    names.setdefault(zlib.crc32(b"bfloat16"), "bfloat16")
    shape = "any" if fp[2] < 0 else fp[4:4 + min(fp[2], _MAXDIMS)].tolist()
    return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={_OPS[fp[0]].upper()}, "
            f"TensorShape={shape}, TensorDtypes={names.get(int(fp[1]), '?') if fp[1] else '-'})")


@functools.lru_cache(maxsize=256)
def reduce_plan(dtype: np.dtype, op: RedOpType, size: int, who: str):
    """(dtype MPI reduces in, MPI op name, finish(buffer) for AVG) for ``op`` on ``dtype``."""
    kind = dtype.kind
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and kind not in "biu":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op in (RedOpType.MIN, RedOpType.MAX) and kind == "c":
        raise ValueError(f"{who} does not support {op!r} on complex tensors")
    if op == RedOpType.AVG and kind not in "fcV":
        raise RuntimeError(f"ReduceOp.AVG needs a floating point tensor, got {dtype.name}")
    if kind == "b":
        return np.dtype(np.uint8), _BOOL_OPS[op], None
    work = np.dtype(np.float32) if dtype.name == "bfloat16" else dtype
    finish = None
    if op == RedOpType.AVG:
        def finish(buf):
            np.true_divide(buf, size, out=buf, casting="unsafe")
    return work, _MPI_OPS[op], finish


class MpiBackend:
    """One process group's transport: a communicator for data, one for fingerprints.

    Methods take ``async_op`` as every backend does; here it changes nothing, since every
    call is nonblocking underneath and the caller waits on a blocking one."""

    name = "mpi"

    def __init__(self, comm, timeout: float) -> None:
        self.comm, self.fp_comm = comm.Dup(), comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout = timeout
        testall = mpi().Request.Testall
        self.channel = Channel(self.rank, testall)

    def close(self) -> None:
        self.comm.Free()
        self.fp_comm.Free()

    # --- plumbing -------------------------------------------------------------------------
    def _work(self, op: str, a, issue, finish=None, outputs=None,
              any_shape: bool = False) -> Work:
        mine = _fingerprint(op, a, any_shape)
        every = np.empty((self.size, mine.size), np.int64)
        req = self.fp_comm.Iallgather(mine, every)
        seq = self.channel.seq + 1

        def verify():
            bad = np.flatnonzero((every != every[0]).any(axis=1))
            if bad.size:
                return RuntimeError(
                    "Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                    f"{_describe(every[0], seq)}, but Rank {bad[0]} is running collective: "
                    f"{_describe(every[bad[0]], seq)}.")
            return None

        numel = 0 if a is None else a.size
        return Work(self.channel, op, numel, self.timeout, ([req], verify), issue, finish,
                    outputs)

    def _reduced(self, a: np.ndarray, op: RedOpType, who: str):
        """A buffer of ``a`` in the dtype MPI reduces, the op, and a finish copying back."""
        work, opname, post = reduce_plan(a.dtype, op, self.size, who)
        if work == a.dtype:
            buf = a
        elif a.dtype.kind == "b":
            buf = a.view(np.uint8)
        else:
            buf = a.astype(work)

        def finish():
            if post is not None:
                post(buf)
            if buf is not a and buf.base is not a:
                a[...] = buf
        return buf, getattr(mpi(), opname), finish

    # --- collectives ----------------------------------------------------------------------
    def all_reduce(self, a, op, async_op, outputs=None) -> Work:
        buf, mop, finish = self._reduced(a, op, "all_reduce")
        IN_PLACE = mpi().IN_PLACE

        def issue():
            return [self.comm.Iallreduce(IN_PLACE, buf, mop)]
        return self._work("all_reduce", a, issue, finish, outputs)

    def reduce(self, a, dst, op, async_op, outputs=None) -> Work:
        buf, mop, finish = self._reduced(a, op, "reduce")
        root = self.rank == dst
        send, recv = (mpi().IN_PLACE, buf) if root else (buf, None)

        def issue():
            return [self.comm.Ireduce(send, recv, mop, root=dst)]
        return self._work("reduce", a, issue, finish if root else None, outputs)

    def broadcast(self, a, src, async_op, outputs=None) -> Work:
        b = _bytes(a)

        def issue():
            return [self.comm.Ibcast(b, root=src)]
        return self._work("broadcast", a, issue, None, outputs)

    def all_gather_into(self, out, a, async_op, outputs=None) -> Work:
        send, recv = _bytes(a), _bytes(out)

        def issue():
            return [self.comm.Iallgather(send, recv)]
        return self._work("all_gather", a, issue, None, outputs)

    def all_gather(self, outs, a, async_op, outputs=None) -> Work:
        recv = np.empty((self.size, a.nbytes), np.uint8)
        work = self.all_gather_into(recv, a, async_op)
        return then(work, lambda: _split_into(recv, outs), outputs)

    def gather(self, a, outs, dst, async_op, outputs=None) -> Work:
        root = self.rank == dst
        recv = np.empty((self.size, a.nbytes), np.uint8) if root else None
        send = _bytes(a)

        def issue():
            return [self.comm.Igather(send, recv, root=dst)]
        finish = (lambda: _split_into(recv, outs)) if root else None
        return self._work("gather", a, issue, finish, outputs)

    def scatter(self, out, ins, src, async_op, outputs=None) -> Work:
        send = np.concatenate([_bytes(x) for x in ins]) if self.rank == src else None
        recv = _bytes(out)

        def issue():
            return [self.comm.Iscatter(send, recv, root=src)]
        return self._work("scatter", out, issue, None, outputs)

    def reduce_scatter(self, out, inp, op, async_op, outputs=None) -> Work:
        """``inp`` holds the group's chunks back to back; rank r gets chunk r reduced."""
        send, mop, _ = self._reduced(np.ascontiguousarray(inp), op, "reduce_scatter")
        recv, _, finish = self._reduced(out, op, "reduce_scatter")

        def issue():
            return [self.comm.Ireduce_scatter_block(send, recv, mop)]
        return self._work("reduce_scatter", out, issue, finish, outputs)

    def all_to_all(self, out, inp, out_counts, in_counts, async_op, outputs=None) -> Work:
        """Flat byte exchange: rank r sends ``in_counts[q]`` bytes to each q."""
        send, recv = _bytes(inp), _bytes(out)
        sd = np.concatenate([[0], np.cumsum(in_counts)[:-1]]).astype(np.int64)
        rd = np.concatenate([[0], np.cumsum(out_counts)[:-1]]).astype(np.int64)
        byte = mpi().BYTE
        sspec = [send, (list(map(int, in_counts)), list(map(int, sd))), byte]
        rspec = [recv, (list(map(int, out_counts)), list(map(int, rd))), byte]

        def issue():
            return [self.comm.Ialltoallv(sspec, rspec)]
        return self._work("all_to_all", inp, issue, None, outputs, any_shape=True)

    def barrier(self, async_op: bool) -> Work:
        return self._work("barrier", None, lambda: [self.comm.Ibarrier()])

    # --- point to point -------------------------------------------------------------------
    def send(self, a, dst: int, tag: int) -> Work:
        req = self.comm.Isend(_bytes(a), dest=dst, tag=tag)
        return Work(Channel(self.rank, lambda reqs: req.Test()), "send", a.size, self.timeout,
                    None, lambda: [req])

    def recv(self, a, src: int | None, tag: int, outputs=None) -> Work:
        MPI = mpi()
        status = MPI.Status()
        req = self.comm.Irecv(_bytes(a), source=MPI.ANY_SOURCE if src is None else src, tag=tag)

        def test(reqs):
            try:
                return req.Test(status)
            except MPI.Exception as e:
                raise RuntimeError(f"recv: the message is larger than the tensor of "
                                   f"{a.nbytes} bytes ({e.Get_error_string()})") from None

        def finish():
            got = status.Get_count(MPI.BYTE)
            if got != a.nbytes:
                raise RuntimeError(f"recv: expected {a.nbytes} bytes, rank "
                                   f"{status.Get_source()} sent {got}")

        work = Work(Channel(self.rank, test), "recv", a.size, self.timeout, None,
                    lambda: [req], finish, outputs)
        work.status = status  # the sender's rank, once done: status.Get_source()
        return work


def _split_into(recv: np.ndarray, outs) -> None:
    for row, o in zip(recv, outs):
        _bytes(o)[:] = row
