"""The MPI backend: ember's collectives as mpi4py calls on one communicator.

Every collective runs MPI's nonblocking call (``Iallreduce``, ...) once the fingerprint
exchange (see ``work.py``) is complete, and progresses whenever any work of the group is
polled or waited on. A blocking collective on a group with nothing in flight polls both
stages itself, without a ``Work``; either way the group's timeout covers the transfer too.
Data-moving collectives send raw bytes, so every dtype travels; reductions run in a dtype MPI
can reduce (bfloat16 in float32, bool as uint8 with the matching logical op).
"""

from __future__ import annotations

import functools
import math
import time
import zlib

import numpy as np

from ember.distributed.reduce_op import RedOpType
from ember.distributed.work import Channel, Work, poll, then

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


@functools.lru_cache(maxsize=1024)
def _fingerprint(op: str, dtype: np.dtype | None, shape: tuple | None,
                 size: int) -> tuple[bytes, bytes]:
    """This rank's fingerprint of a collective (op, dtype, shape; None: any shape), as bytes,
    and the group's gathered fingerprints when every rank runs the same collective. Cached:
    a training loop repeats the same few, and building one with NumPy costs more than the
    exchange (up to 30 us right after a large transfer has evicted the caches)."""
    fp = np.zeros(4 + _MAXDIMS, np.int64)
    fp[0] = _OPS.index(op)
    if dtype is not None:
        fp[1] = _dtype_code(dtype)
        fp[2], fp[3] = (-1, -1) if shape is None else (len(shape), math.prod(shape))
        if shape is not None:
            fp[4:4 + min(len(shape), _MAXDIMS)] = shape[:_MAXDIMS]
    mine = fp.tobytes()
    return mine, mine * size


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


@functools.lru_cache(maxsize=256)
def _reduction(who: str, dtype: np.dtype, shape: tuple, op: RedOpType, size: int):
    """Everything collective ``who`` needs to reduce an array of ``dtype`` and ``shape``, found
    once: its fingerprint, then reduce_plan with the MPI op itself, and whether the array is
    the buffer MPI reduces."""
    work, name, post = reduce_plan(dtype, op, size, who)
    return _fingerprint(who, dtype, shape, size), work, getattr(mpi(), name), post, work == dtype


class MpiBackend:
    """One process group's transport: a communicator for data, one for fingerprints.

    Every call is nonblocking underneath. With ``async_op=True`` a collective returns its
    ``Work``; a blocking one returns None once done (or a Work to wait on, when earlier
    works of the group are still in flight)."""

    name = "mpi"

    def __init__(self, comm, timeout: float) -> None:
        self.comm, self.fp_comm = comm.Dup(), comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout = timeout
        self.in_place = mpi().IN_PLACE
        testall = mpi().Request.Testall
        self.channel = Channel(self.rank, testall)

    def close(self) -> None:
        self.comm.Free()
        self.fp_comm.Free()

    # --- plumbing -------------------------------------------------------------------------
    def _work(self, op: str, a, call, args: tuple, async_op: bool, finish=None, outputs=None,
              any_shape: bool = False, fp: tuple | None = None) -> Work | None:
        """Run collective ``op`` on ``a`` (its fingerprint, unless ``fp`` has it already),
        moving data with ``call(*args)`` (an mpi4py nonblocking call): a Work, or None when a
        blocking one ran to completion."""
        mine, same = fp or _fingerprint(op, None if a is None else a.dtype,
                                        None if a is None or any_shape else a.shape, self.size)
        every = bytearray(len(same))
        channel = self.channel
        if async_op or channel.works:
            req = self.fp_comm.Iallgather(mine, every)
            return Work(channel, op, 0 if a is None else a.size, self.timeout,
                        ([req], self._verifier(every, same, channel.seq + 1)),
                        lambda: [call(*args)], finish, outputs, eager=async_op)
        # Blocking, nothing queued before it: both stages polled right here, without a Work's
        # bookkeeping, which costs more than the exchange itself once a large transfer has
        # evicted the caches. Should the timeout pass (or an interrupt come) while a stage is
        # in flight, a Work takes it over, keeping its buffers and the group's order.
        channel.seq = seq = channel.seq + 1
        start = time.monotonic()
        done, work = False, None
        req = self.fp_comm.Iallgather(mine, every)
        try:
            done = poll(req.Test, start, self.timeout, True)
        finally:
            if not done:
                work = Work(channel, op, 0 if a is None else a.size, self.timeout,
                            ([req], self._verifier(every, same, seq)), lambda: [call(*args)],
                            finish, outputs, eager=False, seq=seq, start=start)
        if work is not None:
            work.wait()  # raises the timeout, unless the last ranks arrive just now
            return None
        if every != same:
            raise self._verifier(every, same, seq)()
        done, data = False, call(*args)
        try:
            done = poll(data.Test, start, self.timeout, False)
        finally:
            if not done:
                work = Work(channel, op, 0 if a is None else a.size, self.timeout, None,
                            lambda: [data], finish, outputs, eager=False, seq=seq, start=start)
        if work is not None:
            work.wait()
            return None
        if finish is not None:
            finish()
        if outputs:
            for t in outputs:
                t._vc[0] += 1  # written in place, as torch's collectives do
        return None

    def _verifier(self, every: bytearray, same: bytes, seq: int):
        """verify() for the gathered fingerprints ``every``: None when they are all the same,
        else the error that names the first rank that differs from rank 0."""
        def verify():
            if every == same:
                return None
            fps = np.frombuffer(bytes(every), np.int64).reshape(self.size, -1)
            bad = np.flatnonzero((fps != fps[0]).any(axis=1))[0]
            return RuntimeError(
                "Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                f"{_describe(fps[0], seq)}, but Rank {bad} is running collective: "
                f"{_describe(fps[bad], seq)}.")
        return verify

    def _reduced(self, a: np.ndarray, op: RedOpType, who: str):
        """A buffer of ``a`` in the dtype MPI reduces, the MPI op, a finish (AVG's division,
        the copy back from a converted buffer; None when there is nothing to do), and the
        fingerprint of ``who`` on ``a``."""
        fp, work, mop, post, as_is = _reduction(who, a.dtype, a.shape, op, self.size)
        if as_is:
            return a, mop, None if post is None else (lambda: post(a)), fp
        buf = a.view(np.uint8) if a.dtype.kind == "b" else a.astype(work)
        copy = buf.base is not a

        def finish():
            if post is not None:
                post(buf)
            if copy:
                a[...] = buf
        return buf, mop, finish, fp

    # --- collectives ----------------------------------------------------------------------
    def all_reduce(self, a, op, async_op, outputs=None) -> Work | None:
        buf, mop, finish, fp = self._reduced(a, op, "all_reduce")
        return self._work("all_reduce", a, self.comm.Iallreduce, (self.in_place, buf, mop),
                          async_op, finish, outputs, fp=fp)

    def reduce(self, a, dst, op, async_op, outputs=None) -> Work | None:
        buf, mop, finish, fp = self._reduced(a, op, "reduce")
        root = self.rank == dst
        send, recv = (self.in_place, buf) if root else (buf, None)
        return self._work("reduce", a, self.comm.Ireduce, (send, recv, mop, dst), async_op,
                          finish if root else None, outputs, fp=fp)

    def broadcast(self, a, src, async_op, outputs=None) -> Work | None:
        return self._work("broadcast", a, self.comm.Ibcast, (_bytes(a), src), async_op, None,
                          outputs)

    def all_gather_into(self, out, a, async_op, outputs=None) -> Work | None:
        return self._work("all_gather", a, self.comm.Iallgather, (_bytes(a), _bytes(out)),
                          async_op, None, outputs)

    def all_gather(self, outs, a, async_op, outputs=None) -> Work | None:
        recv = np.empty((self.size, a.nbytes), np.uint8)
        work = self.all_gather_into(recv, a, async_op)
        return then(work, lambda: _split_into(recv, outs), outputs)

    def gather(self, a, outs, dst, async_op, outputs=None) -> Work | None:
        root = self.rank == dst
        recv = np.empty((self.size, a.nbytes), np.uint8) if root else None
        finish = (lambda: _split_into(recv, outs)) if root else None
        return self._work("gather", a, self.comm.Igather, (_bytes(a), recv, dst), async_op,
                          finish, outputs)

    def scatter(self, out, ins, src, async_op, outputs=None) -> Work | None:
        send = np.concatenate([_bytes(x) for x in ins]) if self.rank == src else None
        return self._work("scatter", out, self.comm.Iscatter, (send, _bytes(out), src),
                          async_op, None, outputs)

    def reduce_scatter(self, out, inp, op, async_op, outputs=None) -> Work | None:
        """``inp`` holds the group's chunks back to back; rank r gets chunk r reduced."""
        send, mop, _, _ = self._reduced(np.ascontiguousarray(inp), op, "reduce_scatter")
        recv, _, finish, fp = self._reduced(out, op, "reduce_scatter")
        return self._work("reduce_scatter", out, self.comm.Ireduce_scatter_block,
                          (send, recv, mop), async_op, finish, outputs, fp=fp)

    def all_to_all(self, out, inp, out_counts, in_counts, async_op,
                   outputs=None) -> Work | None:
        """Flat byte exchange: rank r sends ``in_counts[q]`` bytes to each q."""
        sd = np.concatenate([[0], np.cumsum(in_counts)[:-1]]).astype(np.int64)
        rd = np.concatenate([[0], np.cumsum(out_counts)[:-1]]).astype(np.int64)
        byte = mpi().BYTE
        sspec = [_bytes(inp), (list(map(int, in_counts)), list(map(int, sd))), byte]
        rspec = [_bytes(out), (list(map(int, out_counts)), list(map(int, rd))), byte]
        return self._work("all_to_all", inp, self.comm.Ialltoallv, (sspec, rspec), async_op,
                          None, outputs, any_shape=True)

    def barrier(self, async_op: bool) -> Work | None:
        return self._work("barrier", None, self.comm.Ibarrier, (), async_op)

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
