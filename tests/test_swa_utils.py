"""optim.swa_utils vs torch: SWA and EMA averages over a training run (parameters, buffers,
n_averaged), the avg_fn/multi_avg_fn forms, SWALR's learning rates (cos, linear, warm
restarts of state), update_bn's statistics, and the errors."""

import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(3)
X = R.standard_normal((8, 4)).astype(np.float32)
Y = R.standard_normal((8, 2)).astype(np.float32)


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(),
                             lib.nn.Linear(6, 2))


def _train(lib, make_avg, steps=5, use_sched=False):
    net = _net(lib)
    opt = lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    avg = make_avg(lib, net)
    sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3) if use_sched else None
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((net(lib.tensor(X)) - lib.tensor(Y)) ** 2).mean()
        loss.backward()
        opt.step()
        avg.update_parameters(net)
        if sched is not None:
            sched.step()
            lrs.append(sched.get_last_lr())
    return avg, lrs


AVERAGERS = {
    "swa": lambda lib, net: lib.optim.swa_utils.AveragedModel(net),
    "ema-multi": lambda lib, net: lib.optim.swa_utils.AveragedModel(
        net, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)),
    "ema-avg_fn": lambda lib, net: lib.optim.swa_utils.AveragedModel(
        net, avg_fn=lib.optim.swa_utils.get_ema_avg_fn(0.8)),
    "swa-avg_fn": lambda lib, net: lib.optim.swa_utils.AveragedModel(
        net, avg_fn=lib.optim.swa_utils.get_swa_avg_fn()),
    "ema-buffers": lambda lib, net: lib.optim.swa_utils.AveragedModel(
        net, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.5), use_buffers=True),
}


@pytest.mark.parametrize("kind", list(AVERAGERS))
def test_averaged_model_matches_torch(kind):
    (e, _), (t, _) = _train(ember, AVERAGERS[kind]), _train(torch, AVERAGERS[kind])
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)  # module.0.weight ..., n_averaged
    for k in ts:
        assert_same(es[k], ts[k], atol=1e-5, what=k)
    assert e.n_averaged.item() == 5
    e.eval()
    t.eval()
    assert_same(e(ember.tensor(X)), t(torch.tensor(X)), atol=1e-5)
    assert repr(e).replace("ember", "torch") == repr(t)


def test_swalr_matches_torch():
    for kw in ({"anneal_epochs": 3}, {"anneal_epochs": 0}, {"anneal_strategy": "linear"},
               {"anneal_epochs": 2, "anneal_strategy": "linear"}):
        def lrs(lib, kw=kw):
            p = lib.nn.Parameter(lib.zeros(1))
            opt = lib.optim.SGD([p, ], lr=0.5)
            opt.add_param_group({"params": [lib.nn.Parameter(lib.zeros(1))], "lr": 0.1})
            sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.01], **kw)
            out = [sched.get_last_lr()]
            for _ in range(6):
                opt.step()
                sched.step()
                out.append(sched.get_last_lr())
            return out

        e, t = lrs(ember), lrs(torch)
        np.testing.assert_allclose(np.array(e), np.array(t), rtol=1e-12)


def test_swalr_state_dict_round_trip():
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([p], lr=0.5)
        s1 = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_strategy="linear")
        opt.step()
        s1.step()
        state = s1.state_dict()
        assert "optimizer" not in state and "anneal_func" not in state
        s2 = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05)
        s2.load_state_dict(state)
        assert s2.anneal_func(0.5) == 0.5  # linear again


def test_swalr_errors():
    def make(lib, **kw):
        p = lib.nn.Parameter(lib.zeros(1))
        return lib.optim.swa_utils.SWALR(lib.optim.SGD([p], lr=0.1), swa_lr=0.05, **kw)

    same(lambda lib: make(lib, anneal_strategy="exp"))
    same(lambda lib: make(lib, anneal_epochs=-1))
    same(lambda lib: make(lib, anneal_epochs=1.5))
    same(lambda lib: lib.optim.swa_utils.SWALR(lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))],
                                                             lr=0.1), swa_lr=[0.1, 0.2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="get_last_lr"):
            make(ember).get_lr()


def test_averaging_function_errors():
    same(lambda lib: lib.optim.swa_utils.get_ema_multi_avg_fn(1.5))
    same(lambda lib: lib.optim.swa_utils.get_ema_avg_fn(-0.1))
    same(lambda lib: lib.optim.swa_utils.AveragedModel(
        lib.nn.Linear(1, 1), avg_fn=lib.optim.swa_utils.get_swa_avg_fn(),
        multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()))


def test_integer_tensors():
    """EMA averages integer buffers with its integer formula; SWA's foreach forms refuse
    them with torch's errors (so does SWA with use_buffers on a batch-norm model)."""
    out = []
    for lib in (ember, torch):
        a, c = [lib.tensor([10, 3])], [lib.tensor([20, 4])]
        lib.optim.swa_utils.get_ema_multi_avg_fn(0.5)(a, c, 1)
        out.append(a[0].tolist())
    assert out[0] == out[1]
    swa = "get_swa_multi_avg_fn"
    same(lambda lib: getattr(lib.optim.swa_utils, swa)()([lib.tensor([1])], [lib.tensor([3])],
                                                         lib.tensor(1)), match="addcdiv")
    same(lambda lib: getattr(lib.optim.swa_utils, swa)()([lib.tensor([1])], [lib.tensor([3])],
                                                         1), match="alpha")
    same(lambda lib: _train(lib, lambda lib, net: lib.optim.swa_utils.AveragedModel(
        net, use_buffers=True)))


def test_update_bn_matches_torch():
    def run(lib):
        net = _net(lib)
        data = [(lib.tensor(X[i:i + 4]), lib.tensor(Y[i:i + 4])) for i in (0, 4)]
        net.eval()
        lib.optim.swa_utils.update_bn(data, net)
        return net

    e, t = run(ember), run(torch)
    assert not e.training and not t.training
    for (k, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert_same(a, b, atol=1e-5, what=k)
    assert e[1].momentum == 0.1
    lin = ember.nn.Linear(2, 2)
    ember.optim.swa_utils.update_bn([ember.ones(1, 2)], lin)  # no batch norm: nothing to do


def test_swa_training_with_swalr():
    (e, elrs), (t, tlrs) = (_train(ember, AVERAGERS["swa"], steps=6, use_sched=True),
                            _train(torch, AVERAGERS["swa"], steps=6, use_sched=True))
    np.testing.assert_allclose(np.array(elrs), np.array(tlrs), rtol=1e-12)
    for (k, a), (_, b) in zip(e.state_dict().items(), t.state_dict().items()):
        assert_same(a, b, atol=1e-5, what=k)
