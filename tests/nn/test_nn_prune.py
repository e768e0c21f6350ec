"""nn.utils.prune vs torch: masks (seeded for the random methods), the weight_orig /
weight_mask reparametrisation and its forward pre-hook, iterative pruning through
PruningContainer, global pruning, remove, is_pruned, state_dict keys, gradients and errors."""

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 - not imported by torch.nn.utils, as in torch
from oracle import assert_same, same

import ember
import ember.nn.utils.prune  # noqa: F401

R = np.random.default_rng(11)


def _pair(build, seed=0):
    ember.manual_seed(seed)
    e = build(ember)
    torch.manual_seed(seed)
    t = build(torch)
    return e, t


def _same_module(e, t):
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        assert_same(es[k], ts[k], atol=1e-6, what=k)
    assert sorted(n for n, _ in e.named_parameters()) == sorted(n for n, _ in t.named_parameters())
    assert sorted(n for n, _ in e.named_buffers()) == sorted(n for n, _ in t.named_buffers())
    assert len(e._forward_pre_hooks) == len(t._forward_pre_hooks)
    for name in ("weight", "bias"):
        if hasattr(t, name) and getattr(t, name) is not None:
            assert_same(getattr(e, name), getattr(t, name), atol=1e-6, what=name)


METHODS = {
    "l1-frac": lambda P, m: P.l1_unstructured(m, "weight", amount=0.4),
    "l1-count": lambda P, m: P.l1_unstructured(m, "weight", amount=5),
    "l1-zero": lambda P, m: P.l1_unstructured(m, "weight", amount=0),
    "random": lambda P, m: P.random_unstructured(m, "weight", amount=0.5),
    "random-bias": lambda P, m: P.random_unstructured(m, "bias", amount=2),
    "ln-dim0": lambda P, m: P.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
    "ln-dim1-l1": lambda P, m: P.ln_structured(m, "weight", amount=2, n=1, dim=1),
    "ln-inf": lambda P, m: P.ln_structured(m, "weight", amount=0.34, n=float("inf"), dim=-1),
    "random-structured": lambda P, m: P.random_structured(m, "weight", amount=0.5, dim=0),
    "identity": lambda P, m: P.identity(m, "weight"),
    "custom": lambda P, m: P.custom_from_mask(m, "weight", mask=(m.weight > 0).float()),
    "l1-scores": lambda P, m: P.l1_unstructured(
        m, "weight", amount=0.3, importance_scores=m.weight.detach() ** 2 * -1),
    "iterative": lambda P, m: P.ln_structured(
        P.random_unstructured(P.l1_unstructured(m, "weight", amount=0.2), "weight", 0.3),
        "weight", amount=1, n=2, dim=0),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_pruning_matches_torch(name):
    def build(lib):
        m = lib.nn.Linear(6, 4)
        METHODS[name](lib.nn.utils.prune, m)
        return m

    e, t = _pair(build)
    _same_module(e, t)
    x = R.standard_normal((3, 6)).astype(np.float32)
    eo, to = e(ember.tensor(x)), t(torch.tensor(x))
    assert_same(eo, to, atol=1e-5)
    u = R.standard_normal((3, 4)).astype(np.float32)
    eo.backward(ember.tensor(u))
    to.backward(torch.tensor(u))
    for (k, p), (_, q) in zip(sorted(e.named_parameters()), sorted(t.named_parameters())):
        assert_same(p.grad, q.grad, atol=1e-5, what=k)  # masked entries get no gradient
    assert ember.nn.utils.prune.is_pruned(e) and torch.nn.utils.prune.is_pruned(t)
    hook = next(iter(e._forward_pre_hooks.values()))
    assert type(hook).__name__ == type(next(iter(t._forward_pre_hooks.values()))).__name__


def test_mask_follows_updates_and_remove():
    def build(lib):
        m = lib.nn.Conv2d(2, 3, 3)
        lib.nn.utils.prune.l1_unstructured(m, "weight", amount=0.5)
        with lib.no_grad():
            m.weight_orig.mul_(2.0)  # the hook recomputes weight on the next call
        m(lib.ones(1, 2, 5, 5))
        return m

    e, t = _pair(build)
    _same_module(e, t)
    orig = e.weight_orig
    ember.nn.utils.prune.remove(e, "weight")
    torch.nn.utils.prune.remove(t, "weight")
    _same_module(e, t)
    assert e.weight is orig and isinstance(e.weight, ember.nn.Parameter)
    assert not ember.nn.utils.prune.is_pruned(e)


def test_global_unstructured():
    def build(lib):
        net = lib.nn.Sequential(lib.nn.Linear(5, 4), lib.nn.ReLU(), lib.nn.Linear(4, 3))
        lib.nn.utils.prune.l1_unstructured(net[2], "weight", amount=2)
        lib.nn.utils.prune.global_unstructured(
            [(net[0], "weight"), (net[2], "weight"), (net[0], "bias")],
            pruning_method=lib.nn.utils.prune.L1Unstructured, amount=0.4)
        return net

    e, t = _pair(build)
    for a, b in zip(e, t):
        _same_module(a, b)
    same(lambda lib: lib.nn.utils.prune.global_unstructured(
        [(lib.nn.Linear(2, 2), "weight")], lib.nn.utils.prune.LnStructured, amount=1, n=2, dim=0))
    same(lambda lib: lib.nn.utils.prune.global_unstructured(
        5, lib.nn.utils.prune.L1Unstructured, amount=1))
    same(lambda lib: lib.nn.utils.prune.global_unstructured(
        [(lib.nn.Linear(2, 2), "weight")], lib.nn.utils.prune.L1Unstructured,
        importance_scores=[1], amount=1))


def test_prune_method_and_container():
    def fn(lib):
        P = lib.nn.utils.prune  # noqa: N806
        t = lib.tensor([[0.5, -2.0, 0.1], [3.0, -0.2, 1.0]])
        a = P.L1Unstructured(amount=2).prune(t)
        b = P.LnStructured(amount=1, n=1, dim=1).prune(t, importance_scores=t.abs())
        m = lib.nn.Linear(3, 2)
        P.l1_unstructured(m, "weight", amount=1)
        P.l1_unstructured(m, "weight", amount=1)
        hook = next(iter(m._forward_pre_hooks.values()))
        return a, b, type(hook).__name__, len(hook), [type(h).__name__ for h in hook]

    same(fn)


def test_prune_errors():
    P = "prune"  # noqa: N806
    same(lambda lib: getattr(lib.nn.utils, P).l1_unstructured(lib.nn.Linear(2, 2), "weight",
                                                             amount=1.5))
    same(lambda lib: getattr(lib.nn.utils, P).l1_unstructured(lib.nn.Linear(2, 2), "weight",
                                                             amount=-1))
    same(lambda lib: getattr(lib.nn.utils, P).l1_unstructured(lib.nn.Linear(2, 2), "weight",
                                                             amount="a"))
    same(lambda lib: getattr(lib.nn.utils, P).l1_unstructured(lib.nn.Linear(2, 2), "weight",
                                                             amount=9))
    same(lambda lib: getattr(lib.nn.utils, P).ln_structured(lib.nn.Linear(2, 2), "bias",
                                                           amount=1, n=2, dim=0))
    same(lambda lib: getattr(lib.nn.utils, P).ln_structured(lib.nn.Linear(2, 2), "weight",
                                                           amount=1, n=2, dim=3))
    same(lambda lib: getattr(lib.nn.utils, P).remove(lib.nn.Linear(2, 2), "weight"))
    same(lambda lib: getattr(lib.nn.utils, P).l1_unstructured(
        lib.nn.Linear(2, 2), "weight", amount=1, importance_scores=lib.ones(3)))

    def failed_prune_keeps_parameter(lib):
        m = lib.nn.Linear(2, 2)
        try:
            getattr(lib.nn.utils, P).l1_unstructured(m, "weight", amount=9)
        except ValueError:
            pass
        return sorted(n for n, _ in m.named_parameters())

    same(failed_prune_keeps_parameter)
