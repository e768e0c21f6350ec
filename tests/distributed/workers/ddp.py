"""DDP on N ranks against single-process training on the concatenated batch (every rank runs
the reference too). Run by test_dist_ddp.py; argv[1] is a scratch folder for the checkpoint."""

import copy
import os
import sys

import numpy as np

import ember as torch
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
R, N = dist.get_rank(), dist.get_world_size()
B, STEPS, TOL = 4, 20, 1e-5


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def bn_mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))


def cnn():
    # no conv bias before BatchNorm: its gradient is rounding noise, which Adam would amplify
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 5 * 5, 3))


def batches(shape, steps=STEPS, seed=7):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(N * B, *shape, generator=g), torch.randn(N * B, 3, generator=g))
            for _ in range(steps)]


def mine(t):
    return t[R * B:(R + 1) * B]


def close(a, b, what: str, tol: float = TOL) -> None:
    for (name, x), y in zip(a.named_parameters(), b.parameters()):
        err = float(np.abs(x._data - y._data).max())
        assert err <= tol, f"{what}: {name} differs by {err}"
    for (name, x), y in zip(a.named_buffers(), b.buffers()):
        err = float(np.abs(x._data.astype(np.float64) - y._data.astype(np.float64)).max())
        assert err <= tol, f"{what}: buffer {name} differs by {err}"


def train_equal(make, opt_cls, opt_kw, shape=(6,), per_chunk_bn=False, sync=False, **ddp_kw):
    torch.manual_seed(0)
    ref = make()
    torch.manual_seed(1 + R)  # every rank starts elsewhere: DDP must broadcast rank 0's
    model = make()
    if R == 0:
        model.load_state_dict(ref.state_dict())
    if sync:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ddp = DDP(model, **ddp_kw)
    close(model, ref, "after construction")
    opt, ref_opt = opt_cls(ddp.parameters(), **opt_kw), opt_cls(ref.parameters(), **opt_kw)
    loss_fn = nn.MSELoss()
    for step, (x, y) in enumerate(batches(shape)):
        opt.zero_grad()
        loss_fn(ddp(mine(x)), mine(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        if per_chunk_bn:  # plain BatchNorm under DDP: statistics per rank, buffers from rank 0
            losses, kept = [], None
            for r in range(N):
                losses.append(loss_fn(ref(x[r * B:(r + 1) * B]), y[r * B:(r + 1) * B]))
                if r == 0:
                    kept = copy.deepcopy(list(ref.buffers()))
            for b, k in zip(ref.buffers(), kept):
                b._data[...] = k._data
            (sum(losses) / N).backward()
        else:
            loss_fn(ref(x), y).backward()
        ref_opt.step()
        if per_chunk_bn and R != 0:
            continue  # this rank's buffers are its own until the next forward's broadcast
        close(model, ref, f"{make.__name__} {opt_cls.__name__} step {step}")
    return ddp


sgd = (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9})
adam = (torch.optim.Adam, {"lr": 0.01})
ddp = train_equal(mlp, *sgd)
assert len(ddp.reducer.buckets) >= 1 and ddp.reducer.rebuilt
train_equal(mlp, *adam)
train_equal(mlp, *sgd, bucket_cap_mb=0.0001)  # many small buckets in flight at once
ddp = train_equal(mlp, *sgd, gradient_as_bucket_view=True)
views = {id(v.base) for v in (p.grad._data for p in ddp.parameters())}
assert views == {id(b.buffer) for b in ddp.reducer.buckets}, "grads are views of the buckets"
train_equal(bn_mlp, *sgd, per_chunk_bn=True)
train_equal(cnn, *adam, shape=(2, 5, 5), per_chunk_bn=True)
train_equal(bn_mlp, *sgd, sync=True)
train_equal(cnn, *adam, shape=(2, 5, 5), sync=True)
# broadcast_buffers=False: each rank keeps the running statistics of its own batches
for flag in (True, False):
    torch.manual_seed(0)
    ddp = DDP(bn_mlp(), broadcast_buffers=flag)
    for x, _ in batches((6,), steps=2):
        ddp(mine(x))
    ddp.eval()
    ddp(mine(x))  # broadcasting makes it start from rank 0's statistics; eval keeps them
    got = [None] * N
    dist.all_gather_object(got, ddp.module[1].running_mean._data.tobytes())
    assert (len(set(got)) == 1) == flag or N == 1, f"broadcast_buffers={flag}"
print(f"rank {R}: DDP equals single-process training", flush=True)

# --- no_sync: k local accumulations then one synchronised backward = one full step ----------
torch.manual_seed(0)
ref = mlp()
ddp = DDP(copy.deepcopy(ref))
micro = batches((6,), steps=3, seed=11)
with ddp.no_sync():
    for x, y in micro[:-1]:
        nn.MSELoss()(ddp(mine(x)), mine(y)).backward()
x, y = micro[-1]
nn.MSELoss()(ddp(mine(x)), mine(y)).backward()
for x, y in micro:
    nn.MSELoss()(ref(x), y).backward()
for a, b in zip(ddp.module.parameters(), ref.parameters()):
    assert float(np.abs(a.grad._data - b.grad._data).max()) <= TOL, "no_sync"
print(f"rank {R}: no_sync ok", flush=True)

# --- checkpoint saved on rank 0, loaded on every rank ---------------------------------------
path = os.path.join(sys.argv[1], "ddp.pt")
if R == 0:
    torch.save(ddp.state_dict(), path)
dist.barrier()
torch.manual_seed(50 + R)
fresh = DDP(mlp())
state = torch.load(path)
assert all(k.startswith("module.") for k in state), list(state)
fresh.load_state_dict(state)
for a, b in zip(fresh.parameters(), ddp.parameters()):
    assert np.array_equal(a._data, b._data)
names = [None] * N
dist.all_gather_object(names, [float(p.sum()) for p in fresh.parameters()])
assert all(n == names[0] for n in names)

# --- unused parameters -------------------------------------------------------------------
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(6, 3), nn.Linear(6, 3)

    def forward(self, x):
        return self.used(x)


torch.manual_seed(0)
ddp = DDP(Branchy(), find_unused_parameters=True)
x, y = batches((6,), steps=1)[0]
for _ in range(2):
    ddp.zero_grad()
    nn.MSELoss()(ddp(mine(x)), mine(y)).backward()
    assert ddp.module.unused.weight.grad is None and ddp.module.used.weight.grad is not None
strict = DDP(Branchy())
nn.MSELoss()(strict(mine(x)), mine(y)).backward()
try:
    strict(mine(x))
    raise AssertionError("an unused parameter without find_unused_parameters must raise")
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e)
try:
    DDP(nn.Linear(3, 3).requires_grad_(False))
    raise AssertionError("no parameters")
except RuntimeError as e:
    assert "doesn't have any parameter that requires a gradient" in str(e)
try:
    DDP(nn.Linear(3, 3 + R))
    raise AssertionError("different models")
except RuntimeError as e:
    assert "DDP expects same model across all ranks" in str(e)
print(f"rank {R}: checkpoint, unused parameters, errors ok", flush=True)

# --- join: rank r has 2 + r batches ---------------------------------------------------------
torch.manual_seed(0)
ddp = DDP(bn_mlp())
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
with ddp.join():
    for x, y in batches((6,), steps=2 + R, seed=3 + R):
        opt.zero_grad()
        nn.MSELoss()(ddp(mine(x)), mine(y)).backward()
        opt.step()
sums = [None] * N
dist.all_gather_object(sums, [p._data.tobytes() for p in ddp.parameters()])
assert all(s == sums[0] for s in sums), "replicas differ after join"
print(f"rank {R}: join ok", flush=True)
