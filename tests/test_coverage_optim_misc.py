"""Adafactor, Muon and swap_in_optimizer_params_and_state against torch 2.13: parameter
trajectories over 20 steps (random gradients, several shapes and options), state dicts, reprs,
errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optim_oracle import compare_state_dicts, convert

import ember


def _pair(opt_name, shapes, seed=0, dtype="float32", ekw=None, **kw):
    """The same parameters in both libraries and an optimizer over each."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    ep = [ember.nn.Parameter(ember.tensor(a.copy())) for a in init]
    tp = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    eo = getattr(ember.optim, opt_name)(ep, **(kw if ekw is None else ekw))
    to = getattr(torch.optim, opt_name)(tp, **kw)
    return ep, tp, eo, to, rng


def _step(ep, tp, eo, to, rng, step: int) -> None:
    """One step of both on the same random gradients."""
    for e, t in zip(ep, tp):
        g = rng.standard_normal(t.shape).astype(t.detach().numpy().dtype) * (1 + step % 3)
        e.grad, t.grad = ember.tensor(g.copy()), torch.tensor(g.copy())
    eo.step()
    to.step()


def _run(opt_name, shapes, rtol, atol, steps=20, dtype="float32", ekw=None, **kw):
    """20 steps of both: the parameters agree after each, the state dicts at the end."""
    ep, tp, eo, to, rng = _pair(opt_name, shapes, dtype=dtype, ekw=ekw, **kw)
    for step in range(steps):
        _step(ep, tp, eo, to, rng, step)
        for e, t in zip(ep, tp):
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol,
                                       atol=atol)
    return eo, to


ADAFACTOR_SHAPES = [(5, 7), (3,), (2, 4, 6), (), (1, 9)]


@pytest.mark.parametrize("kw", [
    {}, {"lr": 0.05, "weight_decay": 0.1}, {"maximize": True, "d": 1.5},
    {"eps": (1e-30, 1e-2), "beta2_decay": -0.5}, {"lr": torch.tensor(0.02)},
    {"foreach": False, "weight_decay": 0.01, "lr": 0.3}, {"foreach": True, "maximize": True},
])
def test_adafactor_trajectory(kw):
    ekw = {k: ember.tensor(float(v)) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    eo, to = _run("Adafactor", ADAFACTOR_SHAPES, rtol=1e-5, atol=1e-6, ekw=ekw, **kw)
    esd, tsd = eo.state_dict(), to.state_dict()
    for g in (*esd["param_groups"], *tsd["param_groups"]):
        g.pop("lr")  # a tensor lr: compared by the trajectory
    compare_state_dicts(esd, tsd, rtol=1e-4, atol=1e-7)


def test_adafactor_float64_and_first_eps():
    # eps1=None takes the first parameter's machine epsilon for the whole group, as torch's loop
    eo, to = _run("Adafactor", [(4, 3), (6,)], rtol=1e-10, atol=1e-12, dtype="float64")
    compare_state_dicts(eo.state_dict(), to.state_dict(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kw", [
    {}, {"lr": 0.02, "weight_decay": 0.0}, {"nesterov": False, "momentum": 0.9},
    {"adjust_lr_fn": "match_rms_adamw"}, {"adjust_lr_fn": "original", "ns_steps": 3},
    {"ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-5},
])
def test_muon_trajectory(kw):
    # The Newton-Schulz iteration runs in bfloat16 in both; a different rounding of one bf16
    # value moves an update entry by ~2^-8 of itself, times lr
    eo, to = _run("Muon", [(5, 7), (8, 3), (4, 4)], rtol=1e-4, atol=2e-5, **kw)
    compare_state_dicts(eo.state_dict(), to.state_dict(), rtol=1e-4, atol=1e-6)


def test_reprs_and_modules():
    for name, kw in [("Adafactor", {}), ("Muon", {}), ("Adafactor", {"eps": (1e-3, 1e-2)}),
                     ("Muon", {"adjust_lr_fn": "original", "nesterov": False})]:
        e = getattr(ember.optim, name)([ember.nn.Parameter(ember.ones(2, 3))], **kw)
        t = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 3))], **kw)
        assert repr(e) == repr(t)
        assert type(e).__module__ == type(t).__module__.replace("torch", "ember")
    assert ember.optim.swap_in_optimizer_params_and_state.__module__ == "ember.optim"


@pytest.mark.parametrize("name,kw", [
    ("Adafactor", {"lr": -1.0}), ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}), ("Adafactor", {"eps": (None, -1.0)}),
    ("Adafactor", {"d": 0.5}), ("Adafactor", {"weight_decay": -0.1}),
    ("Muon", {"lr": -1.0}), ("Muon", {"momentum": -0.5}), ("Muon", {"weight_decay": -1.0}),
    ("Muon", {"adjust_lr_fn": "bogus"}),
])
def test_option_errors(name, kw):
    def make(lib):
        return getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(2, 3))], **kw)

    with pytest.raises(ValueError) as te:
        make(torch)
    with pytest.raises(ValueError) as ee:
        make(ember)
    assert str(ee.value) == str(te.value)


def test_muon_rejects_non_matrices():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
            lib.optim.Muon([lib.nn.Parameter(lib.ones(3))])
        p = lib.nn.Parameter(lib.ones(2, 3))
        opt = lib.optim.Muon([p], ns_steps=100)
        p.grad = lib.ones(2, 3)
        with pytest.raises(ValueError, match="Number of steps must be less than 100"):
            opt.step()


def test_adafactor_complex_error():
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.complex64))
        opt = lib.optim.Adafactor([p])
        p.grad = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="Adafactor does not support complex"):
            opt.step()


def test_state_dict_roundtrip():
    """A torch Adafactor state dict loads into ember and the runs go on together."""
    ep, tp, eo, to, rng = _pair("Adafactor", [(3, 4), (5,)])
    for step in range(3):
        _step(ep, tp, eo, to, rng, step)
    fresh = ember.optim.Adafactor(ep)
    fresh.load_state_dict(convert(to.state_dict(), ember))
    compare_state_dicts(fresh.state_dict(), to.state_dict())
    for step in range(3, 6):
        _step(ep, tp, fresh, to, rng, step)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def _swap_case(lib):
    lib.manual_seed(0)
    lin = lib.nn.Linear(3, 2)
    opt = lib.optim.Adam(lin.parameters(), lr=0.1)
    lin(lib.ones(1, 3)).sum().backward()
    opt.step()
    params = {n: p.detach().clone() for n, p in lin.named_parameters()}
    for p, q in zip(params.values(), lin.parameters()):
        p.grad = q.grad.clone()
    osd = opt.state_dict()
    osd = {"state": {k: {kk: vv.clone() for kk, vv in v.items()} for k, v in osd["state"].items()},
           "param_groups": [dict(g, lr=0.5) for g in osd["param_groups"]]}
    before = [p.detach().clone() for p in lin.parameters()]
    with lib.optim.swap_in_optimizer_params_and_state(opt, params, osd):
        inside_lr = opt.param_groups[0]["lr"]
        opt.step()
    after = [p.detach().clone() for p in lin.parameters()]
    return (inside_lr, opt.param_groups[0]["lr"], [p.numpy() for p in params.values()],
            [float(v["step"]) for v in osd["state"].values()],
            all(bool((a == b).all()) for a, b in zip(before, after)))


def test_swap_in_optimizer_params_and_state():
    e, t = _swap_case(ember), _swap_case(torch)
    assert e[0] == t[0] == 0.5 and e[1] == t[1] == 0.1
    for a, b in zip(e[2], t[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert e[3] == t[3] == [2.0, 2.0]  # the in-place step += 1 shows in the given state
    assert e[4] and t[4]  # the live parameters are untouched


@pytest.mark.parametrize("bad", ["empty", "state", "groups", "keys", "extra", "count"])
def test_swap_in_errors(bad):
    def run(lib):
        lin = lib.nn.Linear(2, 2)
        opt = lib.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        if bad != "empty":
            lin(lib.ones(1, 2)).sum().backward()
            opt.step()
        osd = opt.state_dict()
        params = dict(lin.named_parameters())
        if bad == "state":
            osd["state"] = [1]
        elif bad == "groups":
            osd["param_groups"] = osd["param_groups"][0]
        elif bad == "keys":
            osd["param_groups"][0]["extra"] = 1
        elif bad == "extra":
            osd["state"][7] = {}
        elif bad == "count":
            params = {"w": lin.weight}
        with lib.optim.swap_in_optimizer_params_and_state(opt, params, osd):
            pass

    with pytest.raises(RuntimeError) as te:
        run(torch)
    with pytest.raises(RuntimeError) as ee:
        run(ember)
    assert str(ee.value) == str(te.value)
