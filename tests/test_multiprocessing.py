"""ember.multiprocessing: shared-memory tensors seen by forked, spawned and forkserver
processes, Parameters through queues, Module.share_memory, spawn's error reporting as
torch's, the sharing-strategy API, and Hogwild training of one shared model by 2 processes."""

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp


def _add_rank(q, t, rank):
    t.add_(rank)
    q.put(t)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_shared_tensor_across_processes(method):
    ctx = mp.get_context(method)
    t = ember.zeros(4).share_memory_()
    assert t.is_shared()
    q = ctx.Queue()
    procs = [ctx.Process(target=_add_rank, args=(q, t, r)) for r in (1, 2)]
    for p in procs:
        p.start()
    got = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    np.testing.assert_array_equal(t.numpy(), [3.0] * 4)  # both children wrote the parent's
    for r in got:
        assert r.is_shared()
        np.testing.assert_array_equal(r.numpy(), [3.0] * 4)


def _echo(q_in, q_out):
    x = q_in.get(timeout=60)
    q_out.put((type(x).__name__, x.requires_grad, x.is_shared()))
    if type(x).__name__ == "Parameter":
        with ember.no_grad():
            x.mul_(10)


def test_parameters_and_unshared_tensors_through_queues():
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo, args=(q_in, q_out))
    p.start()
    param = ember.nn.Parameter(ember.ones(3)).share_memory_()
    q_in.put(param)
    assert q_out.get(timeout=60) == ("Parameter", True, True)
    p.join(60)
    np.testing.assert_array_equal(param.detach().numpy(), [10.0] * 3)
    # a tensor that is not shared travels by value
    p = ctx.Process(target=_echo, args=(q_in, q_out))
    p.start()
    plain = ember.ones(2)
    q_in.put(plain)
    assert q_out.get(timeout=60) == ("Tensor", False, False)
    p.join(60)
    assert not plain.is_shared()


def test_module_share_memory():
    m = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.BatchNorm1d(2))
    m[0].weight.grad = ember.ones(2, 3)
    w = m[0].weight
    before = {k: v.clone() for k, v in m.state_dict().items()}
    assert m.share_memory() is m
    assert m[0].weight is w  # the same Parameter objects, now in shared memory
    for k, v in m.state_dict().items():
        assert v.is_shared() or m.get_buffer(k).is_shared(), k
        np.testing.assert_array_equal(v.numpy(), before[k].numpy())
    assert m[0].weight.grad.is_shared()
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
        ember.nn.LazyLinear(2).share_memory()


def _fail(i, code):
    if code == "raise":
        raise ValueError(f"bad rank {i}")
    import sys
    sys.exit(3)


def _ok(i, t):
    t[i] = i + 1


def test_spawn_like_torch():
    t = ember.zeros(3).share_memory_()
    assert mp.spawn(_ok, args=(t,), nprocs=3) is None
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])
    with pytest.raises(mp.ProcessRaisedException, match="ValueError: bad rank") as info:
        mp.spawn(_fail, args=("raise",), nprocs=2)
    assert "-- Process" in str(info.value) and info.value.error_index in (0, 1)
    with pytest.raises(mp.ProcessExitedException, match="terminated with exit code 3") as info:
        mp.spawn(_fail, args=("exit",), nprocs=1)
    assert info.value.exit_code == 3
    ctx = mp.start_processes(_ok, args=(t,), nprocs=1, join=False, start_method="fork")
    while not ctx.join():
        pass
    assert len(ctx.pids()) == 1


def test_sharing_strategy_api():
    import torch.multiprocessing as tmp  # here: spawned children import this file

    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("nope")
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy(tmp.get_sharing_strategy())
    for name in ("Process", "Queue", "Pipe", "get_context", "cpu_count", "Pool", "Event"):
        assert hasattr(mp, name) and name in mp.__all__


# --- Hogwild: two processes train one shared model without locks ---------------------------

def _data(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((256, 8)).astype(np.float32)
    w = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
    return x, x @ w


def _loss(model):
    x, y = _data(0)
    with ember.no_grad():
        return float(((model(ember.tensor(x)) - ember.tensor(y)) ** 2).mean())


def _hogwild_train(rank, model, steps_done):
    ember.manual_seed(rank)
    x, y = _data(rank + 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    for i in range(0, 256, 16):
        opt.zero_grad()
        loss = ((model(ember.tensor(x[i:i + 16])) - ember.tensor(y[i:i + 16])) ** 2).mean()
        loss.backward()
        opt.step()
        steps_done[rank] += 1


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_training(method):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.Tanh(), ember.nn.Linear(16, 1))
    model.share_memory()
    steps_done = ember.zeros(2, dtype=ember.int64).share_memory_()
    start = _loss(model)
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=_hogwild_train, args=(rank, model, steps_done))
             for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert steps_done.tolist() == [16, 16]  # both processes ran all their steps ...
    assert _loss(model) < 0.5 * start  # ... on the parent's (shared) parameters
