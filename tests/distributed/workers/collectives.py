"""Every collective against NumPy, on every rank: run by test_dist_collectives.py."""

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp

dist.init_process_group("gloo")
R, N = dist.get_rank(), dist.get_world_size()
CHECKS = [0]
DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool"]
if hasattr(ember, "bfloat16") and ember.bfloat16 is not None:
    DTYPES.append("bfloat16")


def data(rank: int, dtype: str, shape=(2, 3), op=None) -> np.ndarray:
    """Rank ``rank``'s input: small values, so PRODUCT and SUM stay exact in every dtype."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    lo, hi = (1, 3) if op == ReduceOp.PRODUCT else (0, 8)
    if dtype == "int8":
        lo, hi = (-2, 3) if op != ReduceOp.PRODUCT else (1, 3)
    return rng.integers(lo, hi, shape).astype("float32").astype(_np(dtype))


def _np(dtype: str):
    return getattr(ember, dtype).np if dtype != "bool" else np.bool_


def tensor(a: np.ndarray):
    return ember.Tensor._make(a.copy())


def same(got, want, what: str) -> None:
    got = got._data if isinstance(got, ember.Tensor) else got
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    ok = np.array_equal(got.astype(np.float64), want.astype(np.float64))
    assert ok, f"{what}: rank {R} got\n{got}\nwant\n{want}"
    CHECKS[0] += 1


def expected(op, stack: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bool":
        any_, all_ = stack.any(0), stack.all(0)
        return {ReduceOp.SUM: any_, ReduceOp.MAX: any_, ReduceOp.BOR: any_,
                ReduceOp.PRODUCT: all_, ReduceOp.MIN: all_, ReduceOp.BAND: all_,
                ReduceOp.BXOR: np.logical_xor.reduce(stack, 0)}[op]
    wide = stack.astype(np.float64) if stack.dtype.kind == "f" or dtype == "bfloat16" else stack
    out = {ReduceOp.SUM: lambda: wide.sum(0), ReduceOp.AVG: lambda: wide.sum(0) / N,
           ReduceOp.PRODUCT: lambda: wide.prod(0), ReduceOp.MIN: lambda: wide.min(0),
           ReduceOp.MAX: lambda: wide.max(0),
           ReduceOp.BAND: lambda: np.bitwise_and.reduce(stack, 0),
           ReduceOp.BOR: lambda: np.bitwise_or.reduce(stack, 0),
           ReduceOp.BXOR: lambda: np.bitwise_xor.reduce(stack, 0)}[op]()
    return out.astype(stack.dtype)


def raises(kind, fn, phrase: str = "") -> None:
    try:
        fn()
    except kind as e:
        assert phrase in str(e), f"{kind.__name__} without {phrase!r}: {e}"
        CHECKS[0] += 1
        return
    raise AssertionError(f"expected {kind.__name__}")


# --- all_reduce: every op, every dtype (invalid pairs raise) -----------------------------
for dtype in DTYPES:
    for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN, ReduceOp.MAX,
               ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR):
        t = tensor(data(R, dtype, op=op))
        bitwise = op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
        if (bitwise and dtype.startswith(("float", "bfloat"))):
            raises(RuntimeError, lambda t=t, op=op: dist.all_reduce(t, op), "non-integral")
            continue
        if op == ReduceOp.AVG and not dtype.startswith(("float", "bfloat")):
            raises(RuntimeError, lambda t=t: dist.all_reduce(t, ReduceOp.AVG), "AVG")
            continue
        stack = np.stack([data(r, dtype, op=op) for r in range(N)])
        dist.all_reduce(t, op)
        same(t, expected(op, stack, dtype), f"all_reduce {op!r} {dtype}")

# async, with several works in flight at once
ts = [tensor(data(R, "float32")) for _ in range(3)]
works = [dist.all_reduce(t, async_op=True) for t in ts]
assert all(isinstance(w, dist.Work) for w in works)
for w in reversed(works):
    assert w.wait() is True and w.is_completed() and w.is_success()
want = np.stack([data(r, "float32") for r in range(N)]).sum(0)
for t in ts:
    same(t, want, "async all_reduce")
assert works[0].result()[0] is ts[0]

# --- data movement, every dtype ----------------------------------------------------------
for dtype in DTYPES:
    mine = data(R, dtype)
    every = [data(r, dtype) for r in range(N)]
    for src in range(N):
        t = tensor(mine)
        dist.broadcast(t, src=src)
        same(t, every[src], f"broadcast {dtype} from {src}")
        t = tensor(mine)
        dist.reduce(t, dst=src, op=ReduceOp.MAX)
        same(t, np.max(np.stack(every), 0) if R == src else mine, f"reduce {dtype} to {src}")
    outs = [tensor(np.zeros_like(mine)) for _ in range(N)]
    dist.all_gather(outs, tensor(mine))
    for r in range(N):
        same(outs[r], every[r], f"all_gather {dtype}")
    flat = tensor(np.zeros((N * 2, 3), mine.dtype))
    dist.all_gather_into_tensor(flat, tensor(mine))
    same(flat, np.concatenate(every), f"all_gather_into_tensor {dtype}")
    stacked = tensor(np.zeros((N, 2, 3), mine.dtype))
    dist.all_gather_into_tensor(stacked, tensor(mine), async_op=True).wait()
    same(stacked, np.stack(every), f"all_gather_into_tensor (stacked) {dtype}")
    dst = N - 1
    gl = [tensor(np.zeros_like(mine)) for _ in range(N)] if R == dst else None
    dist.gather(tensor(mine), gl, dst=dst)
    if R == dst:
        for r in range(N):
            same(gl[r], every[r], f"gather {dtype}")
    pieces = [data(100 + k, dtype) for k in range(N)]  # what rank 0 scatters
    out = tensor(np.zeros_like(mine))
    dist.scatter(out, [tensor(p) for p in pieces] if R == 0 else None, src=0)
    same(out, pieces[R], f"scatter {dtype}")
    # all_to_all: rank r sends (r, q)-specific data of size q+1 to rank q
    ins = [tensor(np.full(q + 1, r_val, mine.dtype)) for q, r_val in
           enumerate(data(R, dtype, (N,)))]
    outs = [tensor(np.zeros(R + 1, mine.dtype)) for _ in range(N)]
    dist.all_to_all(outs, ins)
    for q in range(N):
        same(outs[q], np.full(R + 1, data(q, dtype, (N,))[R], mine.dtype), f"all_to_all {dtype}")
    single_in = tensor(np.concatenate([np.full((2, 3), data(R, dtype, (N,))[q], mine.dtype)
                                       for q in range(N)]))
    single_out = tensor(np.zeros((2 * N, 3), mine.dtype))
    dist.all_to_all_single(single_out, single_in)
    same(single_out, np.concatenate([np.full((2, 3), data(q, dtype, (N,))[R], mine.dtype)
                                     for q in range(N)]), f"all_to_all_single {dtype}")

# reduce_scatter(_tensor)
for dtype in ("float32", "int64", "bool"):
    chunks = [data(10 * R + k, dtype) for k in range(N)]
    out = tensor(np.zeros((2, 3), chunks[0].dtype))
    dist.reduce_scatter(out, [tensor(x) for x in chunks], ReduceOp.SUM)
    want = expected(ReduceOp.SUM, np.stack([data(10 * r + R, dtype) for r in range(N)]), dtype)
    same(out, want, f"reduce_scatter {dtype}")
    out = tensor(np.zeros((2, 3), chunks[0].dtype))
    dist.reduce_scatter_tensor(out, tensor(np.concatenate(chunks)), ReduceOp.MAX)
    want = expected(ReduceOp.MAX, np.stack([data(10 * r + R, dtype) for r in range(N)]), dtype)
    same(out, want, f"reduce_scatter_tensor {dtype}")

# all_to_all_single with uneven splits: rank r sends q+1 rows to rank q
rows_in = [q + 1 for q in range(N)]
rows_out = [R + 1] * N
inp = tensor(np.concatenate([np.full((q + 1, 2), 10 * R + q, np.float32) for q in range(N)]))
out = tensor(np.zeros((sum(rows_out), 2), np.float32))
dist.all_to_all_single(out, inp, rows_out, rows_in)
same(out, np.concatenate([np.full((R + 1, 2), 10 * q + R, np.float32) for q in range(N)]),
     "all_to_all_single splits")

# --- point to point ------------------------------------------------------------------------
def point_to_point():
    nxt, prv = (R + 1) % N, (R - 1) % N
    box = tensor(np.zeros(4, np.float32))
    if R % 2 == 0:
        dist.send(tensor(np.full(4, R, np.float32)), dst=nxt)
        assert dist.recv(box, src=prv) == prv
    else:
        assert dist.recv(box) == prv  # from any rank
        dist.send(tensor(np.full(4, R, np.float32)), dst=nxt)
    same(box, np.full(4, prv, np.float32), "send/recv ring")
    works = [dist.isend(tensor(np.full(3, R, np.int64)), dst=nxt, tag=7),
             dist.irecv(box3 := tensor(np.zeros(3, np.int64)), src=prv, tag=7)]
    for w in works:
        w.wait()
    same(box3, np.full(3, prv, np.int64), "isend/irecv")
    raises(ValueError, lambda: dist.send(tensor(np.zeros(1)), dst=R), "destination")


if N > 1:
    point_to_point()

# --- objects -------------------------------------------------------------------------------
objs = [{"rank": R, "payload": list(range(R))}, f"s{R}"]
dist.broadcast_object_list(objs, src=N - 1)
assert objs == [{"rank": N - 1, "payload": list(range(N - 1))}, f"s{N - 1}"], objs
gathered = [None] * N
dist.all_gather_object(gathered, ("x" * (R + 1), R))
assert gathered == [("x" * (r + 1), r) for r in range(N)], gathered
got = [None] * N if R == 0 else None
dist.gather_object(R * 1.5, got, dst=0)
assert R != 0 or got == [r * 1.5 for r in range(N)]
one = [None]
dist.scatter_object_list(one, [f"item{r}" for r in range(N)] if R == 0 else None, src=0)
assert one == [f"item{R}"]
CHECKS[0] += 4

# --- groups --------------------------------------------------------------------------------
sub = dist.new_group([0, 1] if N > 1 else [0])
if N == 1:
    assert dist.get_world_size(sub) == 1
elif R in (0, 1):
    assert dist.get_rank(sub) == R and dist.get_world_size(sub) == 2
    t = tensor(np.array([R + 1.0]))
    dist.all_reduce(t, group=sub)
    same(t, np.array([3.0]), "all_reduce on new_group")
    assert dist.get_process_group_ranks(sub) == [0, 1]
else:
    assert sub is dist.GroupMember.NON_GROUP_MEMBER
    assert dist.get_rank(sub) == -1
    import warnings

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert dist.all_reduce(tensor(np.ones(1)), group=sub) is None
if N >= 4:
    odd = dist.new_group([1, 3])
    if R in (1, 3):
        t = tensor(np.array([float(R)]))
        dist.broadcast(t, src=3, group=odd)
        same(t, np.array([3.0]), "broadcast on group [1, 3] from global rank 3")
assert dist.get_backend() == "gloo"

# --- mismatches and bad arguments raise ----------------------------------------------------
if N == 1:
    print(f"rank {R}: {CHECKS[0]} checks passed", flush=True)
    sys.exit(0)
raises(RuntimeError, lambda: dist.all_reduce(tensor(np.ones(2 + R, np.float32))),
       "Detected mismatch between collectives")
raises(RuntimeError, lambda: dist.all_reduce(tensor(np.ones(2, "float32" if R else "float64"))),
       "Detected mismatch between collectives")
raises(RuntimeError, lambda: (dist.broadcast if R == 0 else dist.all_reduce)(
    tensor(np.ones(2, np.float32))), "BROADCAST")
raises(ValueError, lambda: dist.all_reduce(ember.ones(4, 4).t()), "contiguous")
raises(TypeError, lambda: dist.all_reduce([1.0]), "torch.Tensor")
raises(ValueError, lambda: dist.all_gather([ember.zeros(2)], ember.zeros(2)), "one tensor per")
raises(ValueError, lambda: dist.all_reduce(ember.ones(2), op=ReduceOp.PREMUL_SUM), "PREMUL_SUM")
dist.barrier()
w = dist.barrier(async_op=True)
w.wait()
dist.destroy_process_group()
assert not dist.is_initialized()
dist.init_process_group("mpi")  # again, after destroy
t = tensor(np.array([1.0]))
dist.all_reduce(t)
same(t, np.array([float(N)]), "all_reduce after re-init")
print(f"rank {R}: {CHECKS[0]} checks passed", flush=True)
