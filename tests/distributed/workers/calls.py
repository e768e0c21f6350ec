"""Which MPI calls a collective makes, and how a blocking one hands over to a Work when it
times out: run by test_dist_collectives.py on 2 ranks."""

import time
from datetime import timedelta

import numpy as np
from mpi4py import MPI

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp
from ember.distributed.backends import mpi as mpi_backend

dist.init_process_group("gloo")
R, N = dist.get_rank(), dist.get_world_size()
be = dist.GroupMember.WORLD._backend
CALLS: list = []
WORKS: list = []


class Recorder:
    """A communicator that logs each call (name, arguments) before making it."""

    def __init__(self, comm, name: str, delay: dict | None = None) -> None:
        self._comm, self._name, self._delay = comm, name, delay or {}

    def __getattr__(self, method: str):
        real = getattr(self._comm, method)

        def call(*args, **kwargs):
            CALLS.append((self._name, method, args))
            if method in self._delay:
                time.sleep(self._delay.pop(method))
            return real(*args, **kwargs)
        return call


class CountedWork(mpi_backend.Work):
    def __init__(self, *args, **kwargs) -> None:
        WORKS.append(self)
        super().__init__(*args, **kwargs)


mpi_backend.Work = CountedWork
be.comm, be.fp_comm = Recorder(be.comm, "data"), Recorder(be.fp_comm, "fingerprint")


def ranks_sum(shape=(1000,)) -> np.ndarray:
    return sum(np.full(shape, r + 1.0, np.float32) for r in range(N))


# A blocking all_reduce of a contiguous float32 tensor: one fingerprint exchange, then one
# Iallreduce, in place, on the tensor's own array; no Work, no copy.
for op, want in ((ReduceOp.SUM, ranks_sum()), (ReduceOp.AVG, ranks_sum() / N)):
    t = ember.full((1000,), R + 1.0)
    CALLS.clear()
    WORKS.clear()
    version = t._version
    assert dist.all_reduce(t, op) is None
    assert [(c[0], c[1]) for c in CALLS] == [("fingerprint", "Iallgather"),
                                            ("data", "Iallreduce")], CALLS
    send, recv, mop = CALLS[1][2]
    assert send is MPI.IN_PLACE and recv is t._data and mop == MPI.SUM
    assert not WORKS and not be.channel.works
    assert np.array_equal(t.numpy(), want) and t._version == version + 1

# async_op=True: the same two calls, through a Work
t = ember.full((1000,), R + 1.0)
CALLS.clear()
work = dist.all_reduce(t, async_op=True)
assert isinstance(work, dist.Work) and len(WORKS) == 1
assert work.wait() and np.array_equal(t.numpy(), ranks_sum())
assert [(c[0], c[1]) for c in CALLS] == [("fingerprint", "Iallgather"), ("data", "Iallreduce")]
assert not be.channel.works

# A blocking collective while async ones are in flight queues behind them
ts = [ember.full((7,), R + 1.0) for _ in range(3)]
first = dist.all_reduce(ts[0], async_op=True)
dist.all_reduce(ts[1], ReduceOp.MAX)
last = dist.all_reduce(ts[2], async_op=True)
last.wait()
first.wait()
assert np.array_equal(ts[0].numpy(), ranks_sum((7,)))
assert np.array_equal(ts[1].numpy(), np.full(7, float(N), np.float32))
assert np.array_equal(ts[2].numpy(), ranks_sum((7,))) and not be.channel.works
CALLS.clear()
dist.all_reduce(ember.ones(3))
assert len(CALLS) == 2

# Mismatches raise on every rank, whichever path each rank takes: both blocking, both
# async, one of each (the message names both fingerprints)
for modes in ((False, False), (True, True), (False, True)):
    t = ember.ones(2 + R)
    try:
        work = dist.all_reduce(t, async_op=modes[R % 2])
        if work is not None:
            work.wait()
    except RuntimeError as e:
        msg = str(e)
        assert "Detected mismatch between collectives" in msg, msg
        assert "TensorShape=[2]" in msg and "TensorShape=[3]" in msg, msg
    else:
        raise AssertionError(f"rank {R}: no mismatch raised for {modes}")
    assert not be.channel.works

# A receive whose message does not fit, or does not fill, the tensor raises at wait(), and
# stays failed (its error is the work's)
for sent, phrase in ((8, "larger than the tensor"), (2, "expected 16 bytes, rank 0 sent 8")):
    if R == 0:
        dist.send(ember.ones(sent), dst=1, tag=3)
    else:
        work = dist.irecv(ember.zeros(4), src=0, tag=3)
        for _ in range(2):
            try:
                work.wait()
            except RuntimeError as e:
                assert phrase in str(e), e
            else:
                raise AssertionError(f"recv of {sent} floats into 4 did not raise")
        assert work.is_completed() and not work.is_success()
dist.barrier()

# A blocking collective that times out, or is interrupted, leaves a Work in its place: the next
# collective queues behind it, and once the late rank arrives both complete in order. Timeouts
# in the fingerprint stage (rank 1 arrives late) and in the data stage (rank 1 is late to start
# the transfer); an interrupt (Ctrl-C) while rank 0 waits for the fingerprints. Only rank 0 has
# a short timeout (it is each rank's own setting).
group = dist.new_group(timeout=timedelta(seconds=0.5 if R == 0 else 60))
gb = group._backend
real_poll = mpi_backend.poll


def interrupted(*args):
    mpi_backend.poll = real_poll
    raise KeyboardInterrupt


for stage in ("fingerprint", "data", "interrupt"):
    late = 2.0
    if stage == "data" and R == 1:
        gb.comm = Recorder(gb.comm, "data", delay={"Iallreduce": late})
    if stage == "interrupt" and R == 0:
        mpi_backend.poll = interrupted
    a, b = ember.full((5,), R + 1.0), ember.full((5,), 10.0 * (R + 1))
    if R == 1 and stage != "data":
        time.sleep(late)
    try:
        dist.all_reduce(a, group=group)
        assert R == 1, "rank 0 should have timed out or been interrupted"
    except (dist.DistBackendError, KeyboardInterrupt) as e:
        assert R == 0, e
        if stage == "interrupt":
            assert isinstance(e, KeyboardInterrupt)
        else:
            why = "not every rank reached it" if stage == "fingerprint" else "did not finish"
            assert "OpType=ALL_REDUCE" in str(e) and why in str(e), e
        assert len(gb.channel.works) == 1  # the collective left behind, still in flight
        work = dist.all_reduce(b, group=group, async_op=True)
        work.wait(timedelta(seconds=30))
    else:
        dist.all_reduce(b, group=group)
    assert np.array_equal(a.numpy(), ranks_sum((5,))), (stage, a)
    assert np.array_equal(b.numpy(), 10 * ranks_sum((5,))), (stage, b)
    assert not gb.channel.works
    gb.comm = getattr(gb.comm, "_comm", gb.comm)
dist.barrier()
print(f"rank {R}: call checks passed", flush=True)
