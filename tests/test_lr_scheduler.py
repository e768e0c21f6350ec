"""LR schedulers against torch: the lr sequence over 100 steps must be bit-identical."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember

STEPS = 100


def _opt(m, kind="SGD"):
    a, b = m.zeros(2, requires_grad=True), m.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "Adam":
        return m.optim.Adam(groups, lr=0.1)
    return m.optim.SGD(groups, lr=0.1, momentum=0.9)


def _ls(m):
    return m.optim.lr_scheduler


SCHEDULERS = {
    "LambdaLR": lambda m, o: _ls(m).LambdaLR(o, lambda e: 0.95**e),
    "LambdaLR-list": lambda m, o: _ls(m).LambdaLR(o, [lambda e: 0.9**e, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: _ls(m).MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda m, o: _ls(m).StepLR(o, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, o: _ls(m).MultiStepLR(o, milestones=[10, 30, 30, 60], gamma=0.3),
    "ConstantLR": lambda m, o: _ls(m).ConstantLR(o, factor=0.5, total_iters=20),
    "LinearLR-up": lambda m, o: _ls(m).LinearLR(o, start_factor=0.1, total_iters=30),
    "LinearLR-down": lambda m, o: _ls(m).LinearLR(o, start_factor=1.0, end_factor=0.05,
                                                  total_iters=40),
    "ExponentialLR": lambda m, o: _ls(m).ExponentialLR(o, gamma=0.97),
    "PolynomialLR": lambda m, o: _ls(m).PolynomialLR(o, total_iters=50, power=2.0),
    "CosineAnnealingLR": lambda m, o: _ls(m).CosineAnnealingLR(o, T_max=30, eta_min=0.001),
    "CosineAnnealingLR-long": lambda m, o: _ls(m).CosineAnnealingLR(o, T_max=150),
    "CosineAnnealingWarmRestarts": lambda m, o: _ls(m).CosineAnnealingWarmRestarts(
        o, T_0=10, T_mult=2, eta_min=1e-4),
    "CosineAnnealingWarmRestarts-1": lambda m, o: _ls(m).CosineAnnealingWarmRestarts(o, T_0=7),
    "OneCycleLR": lambda m, o: _ls(m).OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=STEPS + 1),
    "OneCycleLR-linear": lambda m, o: _ls(m).OneCycleLR(o, max_lr=0.5, epochs=10,
                                                        steps_per_epoch=11,
                                                        anneal_strategy="linear"),
    "OneCycleLR-three-phase": lambda m, o: _ls(m).OneCycleLR(
        o, max_lr=0.3, total_steps=STEPS + 1, three_phase=True, pct_start=0.25),
    "OneCycleLR-no-momentum": lambda m, o: _ls(m).OneCycleLR(
        o, max_lr=0.3, total_steps=STEPS + 1, cycle_momentum=False, div_factor=10.0,
        final_div_factor=100.0),
    "CyclicLR": lambda m, o: _ls(m).CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2],
                                             step_size_up=7, step_size_down=13),
    "CyclicLR-triangular2": lambda m, o: _ls(m).CyclicLR(o, 0.01, 0.1, step_size_up=5,
                                                         mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: _ls(m).CyclicLR(o, 0.001, 0.1, step_size_up=9,
                                                       mode="exp_range", gamma=0.97),
    "CyclicLR-scale_fn": lambda m, o: _ls(m).CyclicLR(
        o, 0.01, 0.1, step_size_up=4, scale_fn=lambda x: 0.9**x, scale_mode="iterations",
        cycle_momentum=False),
    "SequentialLR": lambda m, o: _ls(m).SequentialLR(
        o, [_ls(m).LinearLR(o, start_factor=0.1, total_iters=10),
            _ls(m).CosineAnnealingLR(o, T_max=90)], milestones=[10]),
    "SequentialLR-3": lambda m, o: _ls(m).SequentialLR(
        o, [_ls(m).ConstantLR(o, factor=0.2, total_iters=5), _ls(m).ExponentialLR(o, 0.9),
            _ls(m).StepLR(o, step_size=5)], milestones=[20, 50]),
    "ChainedScheduler": lambda m, o: _ls(m).ChainedScheduler(
        [_ls(m).ConstantLR(o, factor=0.1, total_iters=5), _ls(m).ExponentialLR(o, gamma=0.9)]),
}


def _momenta(opt):
    return [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def _trace(m, name, kind="SGD", steps=STEPS):
    opt = _opt(m, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = SCHEDULERS[name](m, opt)
        out = [(list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt))]
        for _ in range(steps):
            opt.step()
            sched.step()
            out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups],
                        _momenta(opt)))
    return out, sched


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch_exactly(name):
    e, es = _trace(ember, name)
    t, ts = _trace(torch, name)
    assert e == t  # exact float equality, step by step
    assert set(es.state_dict()) == set(ts.state_dict())


@pytest.mark.parametrize("name", ["OneCycleLR", "OneCycleLR-three-phase", "CyclicLR"])
def test_cyclic_schedules_cycle_adam_betas(name):
    e, _ = _trace(ember, name, kind="Adam")
    t, _ = _trace(torch, name, kind="Adam")
    assert e == t


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "LambdaLR",
                                  "SequentialLR", "MultiStepLR", "LinearLR-up",
                                  "CosineAnnealingWarmRestarts", "ChainedScheduler",
                                  "CyclicLR-exp_range"])
def test_state_dict_resume(name):
    """Stop after 40 steps, rebuild optimizer and scheduler from state dicts, continue."""
    full, _ = _trace(ember, name, steps=80)
    opt = _opt(ember)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = SCHEDULERS[name](ember, opt)
        for _ in range(40):
            opt.step()
            sched.step()
        osd, ssd = opt.state_dict(), sched.state_dict()
        opt2 = _opt(ember)
        sched2 = SCHEDULERS[name](ember, opt2)
        opt2.load_state_dict(osd)
        sched2.load_state_dict(ssd)
        rest = []
        for _ in range(40):
            opt2.step()
            sched2.step()
            rest.append(list(sched2.get_last_lr()))
    assert rest == [lrs for lrs, _, _ in full[41:]]


PLATEAU = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2},
    {"threshold_mode": "abs", "threshold": 0.05, "patience": 3, "cooldown": 2},
    {"mode": "max", "threshold_mode": "abs", "patience": 0, "min_lr": [0.01, 0.02]},
    {"patience": 1, "min_lr": 0.004, "eps": 1e-3, "factor": 0.3},
]


@pytest.mark.parametrize("kw", PLATEAU)
def test_reduce_lr_on_plateau_matches_torch(kw):
    rng = np.random.default_rng(7)
    metrics = np.concatenate([np.linspace(1, 0.5, 20), 0.5 + 0.01 * rng.standard_normal(60),
                              np.linspace(0.5, 0.1, 20)]).tolist()

    def trace(m):
        opt = _opt(m)
        sched = m.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        out = []
        for v in metrics:
            opt.step()
            sched.step(v)
            out.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter,
                        sched.best))
        return out, sched

    (e, es), (t, ts) = trace(ember), trace(torch)
    assert e == t
    assert set(es.state_dict()) == set(ts.state_dict())


def test_plateau_accepts_0d_tensor_metric():
    opt = _opt(ember)
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    sched.step(ember.tensor(1.0))
    sched.step(ember.tensor(2.0))
    assert sched.get_last_lr() == [0.1 * 0.1, 0.05 * 0.1]


def test_warns_when_scheduler_steps_before_optimizer():
    opt = _opt(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()


def test_no_warning_in_the_right_order():
    opt = _opt(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


@pytest.mark.parametrize("fn", [
    lambda m, o: m.optim.lr_scheduler.StepLR(object(), 3),
    lambda m, o: m.optim.lr_scheduler.LinearLR(o, start_factor=0),
    lambda m, o: m.optim.lr_scheduler.ConstantLR(o, factor=2.0),
    lambda m, o: m.optim.lr_scheduler.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(o, factor=1.0),
    lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(o, mode="avg"),
    lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1),
    lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=10,
                                                 anneal_strategy="exp"),
    lambda m, o: m.optim.lr_scheduler.SequentialLR(
        o, [m.optim.lr_scheduler.StepLR(o, 2)], milestones=[3]),
    lambda m, o: m.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda m, o: m.optim.lr_scheduler.StepLR(o, 3, last_epoch=5),
])
def test_bad_arguments_raise_like_torch(fn):
    with pytest.raises(Exception) as te:
        fn(torch, _opt(torch))
    with pytest.raises(type(te.value)) as ee:
        fn(ember, _opt(ember))
    assert str(ee.value) == str(te.value).replace("torch", "ember")


def test_one_cycle_raises_past_total_steps():
    opt = _opt(ember)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


def test_get_lr_outside_step_warns():
    sched = ember.optim.lr_scheduler.StepLR(_opt(ember), step_size=3)
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched.get_lr()


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
                                  "LinearLR-up", "ConstantLR", "PolynomialLR", "LambdaLR",
                                  "CosineAnnealingWarmRestarts"])
def test_step_with_explicit_epoch_uses_closed_form_like_torch(name):
    epochs = [3, 10, 11, 25, 7, 60, 0, 45]

    def trace(m):
        opt = _opt(m)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = SCHEDULERS[name](m, opt)
            out = []
            for e in epochs:
                opt.step()
                sched.step(e)
                out.append(list(sched.get_last_lr()))
        return out

    assert trace(ember) == trace(torch)


def test_epoch_argument_warns_deprecation():
    opt = _opt(ember)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(5)
