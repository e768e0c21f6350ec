"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS against torch: trajectories of 50
steps, state and state dicts, checkpoints crossing between the libraries, errors, schedulers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from optim_oracle import compare_state_dicts, convert
from oracle import outcome

import ember

STEPS = 50
NAMES = ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]


def _combos(**options):
    keys = list(options)
    return [dict(zip(keys, vals)) for vals in itertools.product(*options.values())]


CASES = (
    [("Adadelta", kw) for kw in _combos(
        lr=[1.0, 0.5], weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adadelta", dict(rho=0.5, eps=1e-4)), ("Adadelta", dict(rho=1.0))]
    + [("Adamax", dict(lr=0.01, **kw)) for kw in _combos(
        weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adamax", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-3))]
    + [("NAdam", dict(lr=0.01, **kw)) for kw in _combos(
        weight_decay=[0, 0.1], decoupled_weight_decay=[False, True], maximize=[False, True])]
    + [("NAdam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, momentum_decay=0.05)),
       ("NAdam", dict(lr=0.01, momentum_decay=0))]
    + [("RAdam", dict(lr=0.01, **kw)) for kw in _combos(
        weight_decay=[0, 0.1], decoupled_weight_decay=[False, True], maximize=[False, True])]
    # beta2 = 0.9 crosses the rho_t > 5 threshold at step 6: both branches of the update
    + [("RAdam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6)),
       ("RAdam", dict(lr=0.01, betas=(0.9, 0.5)))]
    + [("ASGD", dict(lr=0.05, **kw)) for kw in _combos(
        t0=[1e6, 10], weight_decay=[0, 0.1], maximize=[False, True])]
    + [("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=0))]
    + [("Rprop", dict(lr=0.01, **kw)) for kw in _combos(
        etas=[(0.5, 1.2), (0.3, 1.5)], step_sizes=[(1e-6, 50), (1e-3, 0.05)],
        maximize=[False, True])]
    # foreach=True (a speed hint) runs the same update
    + [(name, dict(lr=0.01, foreach=True)) for name in NAMES]
)


def _ids(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _run(lib, name, kw, dtype, steps=STEPS, seed=0, lr_scale=0.5):
    """Two param groups (the second with its own lr); grads drawn from a seeded RNG, with
    some exact zeros (Rprop's sign logic) and one parameter that never gets a gradient."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(3, 4), (5,), (), (2,)]]
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    lr = kw.get("lr", 1.0)
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": lr * lr_scale}]
    opt = getattr(lib.optim, name)(groups, **kw)
    for _ in range(steps):
        for p in params[:3]:
            g = rng.standard_normal(tuple(p.shape))
            g[np.abs(g) < 0.2] = 0
            p.grad = lib.tensor(g.astype(dtype))
        opt.step()
    return params, opt


# --- trajectories ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_matches_torch_float64(case):
    name, kw = case
    ep, eopt = _run(ember, name, kw, "float64")
    tp, topt = _run(torch, name, kw, "float64")
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6,
                                   atol=1e-12)
        if not kw.get("foreach"):  # torch's foreach kernels fuse some in-place writes
            assert e._version == t._version
    compare_state_dicts(eopt.state_dict(), topt.state_dict(), rtol=1e-6)
    assert eopt.defaults == topt.defaults


@pytest.mark.parametrize("case", [c for c in CASES if not c[1].get("maximize")], ids=_ids)
def test_matches_torch_float32_and_keeps_dtype(case):
    name, kw = case
    ep, eopt = _run(ember, name, kw, "float32")
    tp, topt = _run(torch, name, kw, "float32")
    for e, t in zip(ep, tp):
        assert e._data.dtype == np.float32
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    compare_state_dicts(eopt.state_dict(), topt.state_dict(), rtol=1e-5, atol=1e-6)
    for st in eopt.state.values():
        assert st["step"].dtype == ember.float32 and st["step"].ndim == 0


@pytest.mark.parametrize("name", NAMES)
def test_scalar_state_follows_the_default_dtype(name):
    """torch keeps step (and NAdam's mu_product, ASGD's eta and mu) in the default dtype."""
    out = {}
    for lib in (ember, torch):
        old = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            _, opt = _run(lib, name, {"lr": 0.01}, "float32", steps=3)
            out[lib.__name__] = opt.state_dict()
        finally:
            lib.set_default_dtype(old)
    compare_state_dicts(out["ember"], out["torch"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_tensor_lr_matches_torch(name):
    out = {}
    for lib in (ember, torch):
        p = lib.tensor([1.0, 2.0, -0.5], requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.01))
        for i in range(5):
            p.grad = lib.tensor([0.5, -1.0, 0.25 * i])
            opt.step()
        out[lib.__name__] = (p.detach().numpy().copy(), opt.state_dict())
    np.testing.assert_allclose(out["ember"][0], out["torch"][0], rtol=1e-6)
    elr = out["ember"][1]["param_groups"][0]["lr"]
    assert isinstance(elr, ember.Tensor) and elr.item() == pytest.approx(0.01)


def test_nn_module_training_matches_torch():
    """A small MLP on a regression batch trains identically."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 4)).astype("float32")
    y = rng.standard_normal((16, 2)).astype("float32")
    for name, kw in [("NAdam", {"lr": 0.01, "weight_decay": 0.01,
                                "decoupled_weight_decay": True}),
                     ("RAdam", {"lr": 0.01}), ("Adamax", {"lr": 0.01}), ("Rprop", {})]:
        models = {}
        for lib in (torch, ember):
            lib.manual_seed(0)
            models[lib] = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(),
                                            lib.nn.Linear(8, 2))
        models[ember].load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                                       for k, v in models[torch].state_dict().items()})
        for lib, m in models.items():
            opt = getattr(lib.optim, name)(m.parameters(), **kw)
            for _ in range(20):
                opt.zero_grad()
                ((m(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
                opt.step()
        for k, v in models[torch].state_dict().items():
            np.testing.assert_allclose(models[ember].state_dict()[k].detach().numpy(),
                                       v.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


# --- state dicts and checkpoints ------------------------------------------------------------
@pytest.mark.parametrize("name", [*NAMES, "LBFGS"])
def test_defaults_state_dict_and_repr_before_any_step(name):
    e = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], lr=0.1)
    t = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], lr=0.1)
    assert e.defaults == t.defaults
    assert list(e.defaults) == list(t.defaults)
    compare_state_dicts(e.state_dict(), t.state_dict())
    assert repr(e) == repr(t)


@pytest.mark.parametrize("name,kw", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                     ("Adam", {"lr": 0.01, "amsgrad": True}),
                                     ("RMSprop", {"lr": 0.01, "centered": True}),
                                     ("Adagrad", {"lr": 0.1}),
                                     ("Adadelta", {"weight_decay": 0.1}),
                                     ("Adamax", {"lr": 0.01}),
                                     ("NAdam", {"lr": 0.01, "weight_decay": 0.1,
                                                "decoupled_weight_decay": True}),
                                     ("RAdam", {"lr": 0.01, "betas": (0.9, 0.9)}),
                                     ("ASGD", {"lr": 0.05, "t0": 5}),
                                     ("Rprop", {"lr": 0.01})])
def test_load_state_dict_from_torch_then_continue(name, kw):
    """Train 10 steps in torch, move the state to a fresh ember optimizer, go on in both."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3))
    tw = torch.tensor(w0, requires_grad=True)
    topt_first = getattr(torch.optim, name)([tw], **kw)
    grads = rng.standard_normal((20, 4, 3))
    for g in grads[:10]:
        tw.grad = torch.tensor(g)
        topt_first.step()
    ew = ember.tensor(tw.detach().numpy().copy(), requires_grad=True)
    eopt = getattr(ember.optim, name)([ew], lr=123.0)
    eopt.load_state_dict(convert(topt_first.state_dict(), ember))
    assert eopt.param_groups[0]["params"][0] is ew
    # loading casts float state (not step) to the parameter's dtype: compare with torch's load
    topt = getattr(torch.optim, name)([tw], lr=123.0)
    topt.load_state_dict(topt_first.state_dict())
    compare_state_dicts(eopt.state_dict(), topt.state_dict(), rtol=0)
    for g in grads[10:]:
        tw.grad = torch.tensor(g)
        ew.grad = ember.tensor(g)
        topt.step()
        eopt.step()
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-10)
    compare_state_dicts(eopt.state_dict(), topt.state_dict(), rtol=1e-10)
    # ...and back: ember's state dict loads into torch, which carries on the same way.
    topt2 = getattr(torch.optim, name)([tw], lr=5.0)
    topt2.load_state_dict(convert(eopt.state_dict(), torch))
    compare_state_dicts(eopt.state_dict(), topt2.state_dict(), rtol=0)


def _rosenbrock(lib, x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


@pytest.mark.parametrize("name", [*NAMES, "LBFGS"])
def test_checkpoint_files_cross_over(name, tmp_path):
    """ember.save -> torch.load -> torch optimizer, and torch.save -> ember.load -> ember."""
    def train(lib, opt, w, steps):
        def closure():
            opt.zero_grad()
            loss = _rosenbrock(lib, w)
            loss.backward()
            return loss

        for i in range(steps):
            if name == "LBFGS":
                opt.step(closure)
            else:
                w.grad = lib.tensor(np.sin(np.arange(6.0) + i))
                opt.step()

    kw = {"lr": 0.5, "max_iter": 3, "history_size": 2} if name == "LBFGS" else {"lr": 0.01}
    w0 = np.linspace(-1.0, 1.2, 6)
    ew, tw = ember.tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
    eo = getattr(ember.optim, name)([ew], **kw)
    to = getattr(torch.optim, name)([tw], **kw)
    train(ember, eo, ew, 3)
    train(torch, to, tw, 3)
    ember.save(eo.state_dict(), tmp_path / "e.pt")
    to2 = getattr(torch.optim, name)([tw], lr=0.25)
    to2.load_state_dict(torch.load(tmp_path / "e.pt", weights_only=True))
    eo.load_state_dict(ember.load(tmp_path / "e.pt"))  # loading casts state to the param dtype
    compare_state_dicts(eo.state_dict(), to2.state_dict(), rtol=0)
    torch.save(to.state_dict(), tmp_path / "t.pt")
    eo2 = getattr(ember.optim, name)([ew], lr=0.25)
    eo2.load_state_dict(ember.load(tmp_path / "t.pt"))
    to.load_state_dict(torch.load(tmp_path / "t.pt", weights_only=True))
    compare_state_dicts(eo2.state_dict(), to.state_dict(), rtol=0)
    train(ember, eo2, ew, 3)
    train(torch, to, tw, 3)
    np.testing.assert_allclose(ew.detach().numpy(), tw.detach().numpy(), rtol=1e-7)
    compare_state_dicts(eo2.state_dict(), to.state_dict(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name,scalars,buffers", [
    ("Adadelta", {"step": 3}, ["square_avg", "acc_delta"]),
    ("NAdam", {"step": 3, "mu_product": 0.5}, ["exp_avg", "exp_avg_sq"]),
    ("ASGD", {"step": 3, "eta": 0.01, "mu": 1.0}, ["ax"]),
    ("Rprop", {"step": 3}, ["prev", "step_size"]),
])
def test_old_checkpoints_are_upgraded_like_torch(name, scalars, buffers):
    """Old checkpoints: scalar state as plain numbers, groups without the newer flags."""
    out = {}
    for lib in (ember, torch):
        p = lib.zeros(2, requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=0.01)
        group = {k: v for k, v in opt.state_dict()["param_groups"][0].items()
                 if k not in ("foreach", "maximize", "differentiable", "capturable")}
        opt.load_state_dict({"state": {0: {**scalars, **{k: lib.ones(2) for k in buffers}}},
                             "param_groups": [group]})
        p.grad = lib.ones(2)
        opt.step()
        out[lib.__name__] = opt.state_dict()
    compare_state_dicts(out["ember"], out["torch"], rtol=1e-7)


# --- errors ---------------------------------------------------------------------------------
def _same_error(fn):
    """fn(lib) raises the same exception type, with the same message, in ember and torch."""
    t, e = outcome(fn, torch), outcome(fn, ember)
    assert t[0] == "error", t
    assert e == t


def _p(m):
    return [m.zeros(1, requires_grad=True)]


BAD_OPTIONS = [
    ("Adadelta", {"lr": -1.0}), ("Adadelta", {"rho": 1.5}), ("Adadelta", {"rho": -0.1}),
    ("Adadelta", {"eps": -1.0}), ("Adadelta", {"weight_decay": -1.0}),
    ("Adamax", {"lr": -1.0}), ("Adamax", {"eps": -1.0}), ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}), ("Adamax", {"weight_decay": -1e-3}),
    ("NAdam", {"lr": -1.0}), ("NAdam", {"eps": -1.0}), ("NAdam", {"betas": (-0.5, 0.9)}),
    ("NAdam", {"betas": (0.9, 1.0)}), ("NAdam", {"weight_decay": -1.0}),
    ("NAdam", {"momentum_decay": -1.0}), ("NAdam", {"fused": True}),
    ("RAdam", {"lr": -1.0}), ("RAdam", {"eps": -1.0}), ("RAdam", {"betas": (1.5, 0.9)}),
    ("RAdam", {"betas": (0.9, 1.0)}), ("RAdam", {"weight_decay": -1.0}),
    ("ASGD", {"lr": -0.5}), ("ASGD", {"weight_decay": -0.5}),
    ("Rprop", {"lr": -1.0}), ("Rprop", {"etas": (1.5, 1.2)}), ("Rprop", {"etas": (0.0, 1.2)}),
    ("Rprop", {"etas": (0.5, 1.0)}), ("LBFGS", {"lr": -1.0}), ("LBFGS", {"foreach": True}),
]


@pytest.mark.parametrize("name,kw", BAD_OPTIONS, ids=[_ids(c) for c in BAD_OPTIONS])
def test_bad_options_raise_like_torch(name, kw):
    _same_error(lambda m: getattr(m.optim, name)(_p(m), **kw))


@pytest.mark.parametrize("fn", [
    lambda m: m.optim.Adadelta(_p(m), lr=m.tensor([0.1, 0.2])),
    lambda m: m.optim.Rprop(_p(m), 0.1, (0.5, 1.2), (1e-6, 50), True),  # keyword-only flags
    lambda m: m.optim.LBFGS([{"params": _p(m)}, {"params": _p(m)}]),
    lambda m: m.optim.LBFGS(_p(m)).step(),
    lambda m: m.optim.RAdam([], lr=0.1),
])
def test_bad_calls_raise_like_torch(fn):
    _same_error(fn)


@pytest.mark.parametrize("name", NAMES)
def test_capturable_refused_on_cpu_like_torch(name):
    """Raised at the first step with a gradient, in each optimizer's own words."""
    def fn(m):
        p = m.ones(1, requires_grad=True)
        opt = getattr(m.optim, name)([p], capturable=True)
        opt.step()  # no gradient yet: nothing to check
        p.grad = m.ones(1)
        opt.step()
    _same_error(fn)


@pytest.mark.parametrize("name", NAMES)
def test_differentiable_is_refused(name):
    with pytest.raises(NotImplementedError, match="differentiable"):
        getattr(ember.optim, name)([ember.ones(1, requires_grad=True)], differentiable=True)


# --- lr schedulers --------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sched", ["StepLR", "OneCycleLR"])
def test_lr_schedulers_drive_them_like_torch(name, sched):
    """Schedulers change the lr (and OneCycleLR beta1, for the Adam family) each step."""
    out = {}
    for lib in (ember, torch):
        rng = np.random.default_rng(1)
        p = lib.tensor(rng.standard_normal(5), requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=0.01)
        if sched == "StepLR":
            s = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        else:
            s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=20,
                                                  cycle_momentum="betas" in opt.defaults)
        lrs = []
        for _ in range(20):
            p.grad = lib.tensor(rng.standard_normal(5))
            opt.step()
            s.step()
            lrs.append(opt.param_groups[0]["lr"])
        out[lib.__name__] = (p.detach().numpy().copy(), lrs, opt.state_dict())
    np.testing.assert_allclose(out["ember"][0], out["torch"][0], rtol=1e-6)
    np.testing.assert_allclose(out["ember"][1], out["torch"][1], rtol=1e-12)
    compare_state_dicts(out["ember"][2], out["torch"][2], rtol=1e-6)
