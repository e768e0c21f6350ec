"""Optimizers against torch: 50 steps of identical gradients, state dicts, errors, hooks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from optim_oracle import compare_state_dicts

import ember

STEPS = 50


def _combos(**options):
    keys = list(options)
    return [dict(zip(keys, vals)) for vals in itertools.product(*options.values())]


def _sgd_cases():
    out = []
    for kw in _combos(momentum=[0, 0.9], dampening=[0, 0.1], nesterov=[False, True],
                      weight_decay=[0, 0.1], maximize=[False, True]):
        if kw["momentum"] == 0 and (kw["dampening"] or kw["nesterov"]):
            continue
        if kw["nesterov"] and kw["dampening"]:
            continue
        out.append(("SGD", dict(lr=0.05, **kw)))
    return out


CASES = (
    _sgd_cases()
    + [("Adam", dict(lr=0.01, **kw)) for kw in _combos(
        amsgrad=[False, True], weight_decay=[0, 0.1], maximize=[False, True])]
    + [("AdamW", dict(lr=0.01, **kw)) for kw in _combos(
        amsgrad=[False, True], weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6)),
       ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True))]
    + [("RMSprop", dict(lr=0.01, **kw)) for kw in _combos(
        momentum=[0, 0.5], centered=[False, True], weight_decay=[0, 0.1],
        maximize=[False, True])]
    + [("RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-6))]
    + [("Adagrad", dict(lr=0.1, **kw)) for kw in _combos(
        lr_decay=[0, 0.01], initial_accumulator_value=[0, 0.1], weight_decay=[0, 0.1],
        maximize=[False, True])]
    + [("Adagrad", dict(lr=0.1, eps=1e-6))]
)


def _ids(case):
    name, kw = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kw.items() if k != "lr")


def _run(lib, name, kw, dtype, steps=STEPS, seed=0):
    """Two param groups (the second with its own lr); grads drawn from a seeded RNG."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(3, 4), (5,), ()]]
    params = [lib.tensor(a, requires_grad=True) for a in arrays]
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": kw["lr"] / 2}]
    opt = getattr(lib.optim, name)(groups, **kw)
    for _ in range(steps):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    return params, opt


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_matches_torch_float64(case):
    name, kw = case
    ep, eopt = _run(ember, name, kw, "float64")
    tp, topt = _run(torch, name, kw, "float64")
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-12)
        assert e._version == t._version
    compare_state_dicts(eopt.state_dict(), topt.state_dict(), rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_matches_torch_float32_and_keeps_dtype(name):
    kw = {"lr": 0.01, "weight_decay": 0.1}
    if name in ("SGD", "RMSprop"):
        kw["momentum"] = 0.9
    ep, eopt = _run(ember, name, kw, "float32")
    tp, _ = _run(torch, name, kw, "float32")
    for e, t in zip(ep, tp):
        assert e.dtype == ember.float32
        assert e._data.dtype == np.float32
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    for st in eopt.state.values():
        for k, v in st.items():
            if k == "step":
                assert v.dtype == ember.float32 and v.ndim == 0
            else:
                assert v._data.dtype == np.float32


def test_state_dict_shapes_like_torch_before_any_step():
    for name in ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]:
        e = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], lr=0.1)
        t = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], lr=0.1)
        compare_state_dicts(e.state_dict(), t.state_dict())
        assert repr(e) == repr(t)


def test_repr_matches_torch_with_two_groups():
    def make(lib):
        a, b = lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)
        return lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1,
                             momentum=0.9, nesterov=True)
    assert repr(make(ember)) == repr(make(torch))
    assert repr(make(ember)).startswith("SGD (\nParameter Group 0\n    dampening: 0\n")


def _both_raise(fn, match=None):
    """fn(lib) raises the same exception type (and message) in ember and torch."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value), match=match) as ee:
        fn(ember)
    assert str(ee.value) == str(te.value).replace("torch.", "ember.")


@pytest.mark.parametrize("fn", [
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=-0.1),
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1, momentum=-1),
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1, weight_decay=-1),
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1, nesterov=True),
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9,
                          dampening=0.1, nesterov=True),
    lambda m: m.optim.Adam([m.zeros(1, requires_grad=True)], lr=-1.0),
    lambda m: m.optim.Adam([m.zeros(1, requires_grad=True)], betas=(1.0, 0.9)),
    lambda m: m.optim.Adam([m.zeros(1, requires_grad=True)], betas=(0.9, -0.1)),
    lambda m: m.optim.Adam([m.zeros(1, requires_grad=True)], eps=-1.0),
    lambda m: m.optim.AdamW([m.zeros(1, requires_grad=True)], weight_decay=-1.0),
    lambda m: m.optim.RMSprop([m.zeros(1, requires_grad=True)], alpha=-1.0),
    lambda m: m.optim.RMSprop([m.zeros(1, requires_grad=True)], momentum=-1.0),
    lambda m: m.optim.Adagrad([m.zeros(1, requires_grad=True)], lr_decay=-1.0),
    lambda m: m.optim.Adagrad([m.zeros(1, requires_grad=True)], initial_accumulator_value=-1),
    lambda m: m.optim.SGD([], lr=0.1),
    lambda m: m.optim.SGD(m.zeros(2, requires_grad=True), lr=0.1),
    lambda m: m.optim.SGD([{"params": {m.zeros(2, requires_grad=True)}}], lr=0.1),
    lambda m: m.optim.SGD([1.0], lr=0.1),
    lambda m: m.optim.SGD([m.zeros(2, requires_grad=True) * 2], lr=0.1),
    lambda m: m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1, fused=True, foreach=True),
])
def test_bad_arguments_raise_like_torch(fn):
    _both_raise(fn)


def test_duplicate_params_across_groups():
    def fn(m):
        p = m.zeros(2, requires_grad=True)
        m.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    _both_raise(fn, match="some parameters appear in more than one parameter group")


def test_load_state_dict_mismatch_errors():
    def fn_groups(m):
        p, q = m.zeros(2, requires_grad=True), m.zeros(2, requires_grad=True)
        a = m.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
        b = m.optim.SGD([p, q], lr=0.1)
        b.load_state_dict(a.state_dict())

    def fn_sizes(m):
        p, q = m.zeros(2, requires_grad=True), m.zeros(2, requires_grad=True)
        m.optim.SGD([p], lr=0.1).load_state_dict(m.optim.SGD([p, q], lr=0.1).state_dict())
    _both_raise(fn_groups)
    _both_raise(fn_sizes)


def test_add_param_group_fills_defaults_and_steps():
    p, q = ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": q, "lr": 1.0})
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 1.0
    q.grad = ember.ones(3)
    opt.step()  # p has no grad: skipped, no state
    np.testing.assert_allclose(q.detach().numpy(), 0.0)
    np.testing.assert_allclose(p.detach().numpy(), 1.0)
    assert p not in opt.state and "momentum_buffer" in opt.state[q]


def test_named_params_store_param_names():
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([("w", p)], lr=0.1)
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w"]


def test_zero_grad():
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(2)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_with_closure_returns_loss_and_enables_grad():
    w = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        assert ember.is_grad_enabled()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with ember.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6], rtol=1e-6)


def test_step_runs_without_autograd_and_updates_in_place():
    w = ember.ones(3, requires_grad=True)
    data = w._data
    opt = ember.optim.Adam([w], lr=0.1)
    modes = []
    opt.register_step_post_hook(lambda o, a, k: modes.append(ember.is_grad_enabled()))
    w.grad = ember.ones(3)
    opt.step()
    assert w._data is data and w.is_leaf and w.grad_fn is None
    assert w._version == 1 and modes == [True]


def test_step_hooks():
    w = ember.ones(1, requires_grad=True)
    w.grad = ember.ones(1)
    opt = ember.optim.SGD([w], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    opt.step()
    assert calls == [("pre", True), ("post", True)]
    h1.remove()
    opt.step()
    assert calls[-1] == ("post", True) and len(calls) == 3


def test_custom_optimizer_subclass_gets_hooks():
    class Plain(ember.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            for g in self.param_groups:
                for p in g["params"]:
                    p._data -= g["lr"] * p.grad._data
            return "done"

    w = ember.ones(2, requires_grad=True)
    w.grad = ember.ones(2)
    opt = Plain([w])
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(ember.is_grad_enabled()))
    assert opt.step() == "done" and seen == [True]  # user steps keep the caller's grad mode


def test_optimizer_with_nn_linear_matches_torch():
    nn_lin = getattr(ember.nn, "Linear", None)
    if nn_lin is None:
        pytest.skip("ember.nn.Linear not available")
    rng = np.random.default_rng(5)
    em, tm = ember.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    em.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    eo = ember.optim.AdamW(em.parameters(), lr=0.01)
    to = torch.optim.AdamW(tm.parameters(), lr=0.01)
    for _ in range(5):
        x = rng.standard_normal((8, 4)).astype("float32")
        for m, o, lib in ((em, eo, ember), (tm, to, torch)):
            o.zero_grad()
            (m(lib.tensor(x)) ** 2).mean().backward()
            o.step()
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(em.state_dict()[k].detach().numpy(), v.numpy(), rtol=1e-4,
                                   atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
@pytest.mark.parametrize("flag", ["foreach", "fused"])
def test_foreach_and_fused_flags_same_numbers(name, flag):
    kw = {"lr": 0.01, "weight_decay": 0.1, flag: True}
    if name == "SGD":
        kw["momentum"] = 0.9
    ep, eopt = _run(ember, name, kw, "float64", steps=10)
    tp, topt = _run(torch, name, kw, "float64", steps=10)
    for e, t in zip(ep, tp):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    assert eopt.param_groups[0][flag] is True


def test_differentiable_is_refused():
    with pytest.raises(NotImplementedError, match="differentiable"):
        ember.optim.SGD([ember.ones(1, requires_grad=True)], lr=0.1, differentiable=True)


def test_capturable_refused_on_cpu_like_torch():
    def fn(m):
        p = m.ones(1, requires_grad=True)
        p.grad = m.ones(1)
        m.optim.Adam([p], capturable=True).step()
    with pytest.raises(AssertionError) as te:
        fn(torch)
    with pytest.raises(AssertionError) as ee:
        fn(ember)
    assert str(te.value).split(":")[0] == str(ee.value).split(":")[0]


def test_tensor_lr_matches_torch():
    out = {}
    for lib in (ember, torch):
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.Adam([p], lr=lib.tensor(0.01))
        for _ in range(3):
            p.grad = lib.tensor([0.5, -1.0])
            opt.step()
        out[lib.__name__] = p.detach().numpy().copy()
    np.testing.assert_allclose(out["ember"], out["torch"], rtol=1e-6)


def test_old_checkpoint_format_is_upgraded_like_torch():
    """Pre-1.12 checkpoints: 'step' a plain number, groups lacking newer options."""
    def old_sd(m):
        return {"state": {0: {"step": 3, "exp_avg": m.ones(2), "exp_avg_sq": m.ones(2)}},
                "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8,
                                  "weight_decay": 0, "amsgrad": False, "params": [0]}]}

    out = {}
    for lib in (ember, torch):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([p], lr=1.0)
        opt.load_state_dict(old_sd(lib))
        step = opt.state[p]["step"]
        assert isinstance(step, lib.Tensor) and step.item() == 3.0
        out[lib.__name__] = opt.param_groups[0]
    e, t = out["ember"], out["torch"]
    assert {k: v for k, v in e.items() if k != "params"} == \
        {k: v for k, v in t.items() if k != "params"}


def test_state_dict_hooks():
    p = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    seen = []
    opt.register_state_dict_pre_hook(lambda o: seen.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert seen == ["pre"] and sd["extra"] == 1

    def bump_lr(o, sd):
        sd["param_groups"][0]["lr"] = 0.5

    opt.register_load_state_dict_pre_hook(bump_lr)
    opt.register_load_state_dict_post_hook(lambda o: seen.append("post"), prepend=True)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5 and seen[-1] == "post"


def test_global_step_hooks_run_around_instance_hooks():
    from ember.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    w = ember.ones(1, requires_grad=True)
    w.grad = ember.ones(1)
    opt = ember.optim.Adam([w])
    order = []
    handles = [register_optimizer_step_pre_hook(lambda o, a, k: order.append("global pre")),
               register_optimizer_step_post_hook(lambda o, a, k: order.append("global post")),
               opt.register_step_pre_hook(lambda o, a, k: order.append("pre")),
               opt.register_step_post_hook(lambda o, a, k: order.append("post"))]
    opt.step()
    for h in handles:
        h.remove()
    opt.step()
    assert order == ["global pre", "pre", "post", "global post"]


@pytest.mark.parametrize("shape", [(300, 300), (70000,), (3, 40000)])
def test_large_sgd_update_matches_torch(shape):
    """Updates past the block size run block by block; each element is still torch's
    ``p + (-lr) * g``."""
    rng = np.random.default_rng(0)
    w0, g = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape)
    out = {}
    for L in (torch, ember):
        w = L.tensor(w0, requires_grad=True)
        w.grad = L.tensor(g.astype(np.float32))
        L.optim.SGD([w], lr=0.1, weight_decay=0.01).step()
        out[L.__name__] = w.detach().numpy()
    np.testing.assert_allclose(out["ember"], out["torch"], rtol=1e-6, atol=1e-7)
    expected = w0 + np.float32(-0.1) * (g.astype(np.float32) + np.float32(0.01) * w0)
    np.testing.assert_allclose(out["ember"], expected, rtol=1e-6, atol=1e-7)
