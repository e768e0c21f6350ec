"""The older nn.utils.weight_norm / spectral_norm (forward pre-hooks) vs torch: deprecation
warning, parameter and buffer names, seeded values, gradients, state-dict metadata, removal,
checkpoint compatibility and errors."""

import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(23)


def _pair(build, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ember.manual_seed(seed)
        e = build(ember)
        torch.manual_seed(seed)
        t = build(torch)
    return e, t


def _same_state(e, t, atol=1e-5):
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        assert_same(es[k], ts[k], atol=atol, what=k)
    assert dict(es._metadata) == dict(ts._metadata)


def _step(e, t, x):
    eo, to = e(ember.tensor(x)), t(torch.tensor(x))
    assert_same(eo, to, atol=1e-5)
    u = R.standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.tensor(u))
    to.backward(torch.tensor(u))
    en, tn = dict(e.named_parameters()), dict(t.named_parameters())
    assert list(en) == list(tn)
    for k in tn:
        assert_same(en[k].grad, tn[k].grad, atol=1e-4, rtol=1e-3, what=f"grad of {k}")


def test_weight_norm_warns_like_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        ember.nn.utils.weight_norm(ember.nn.Linear(2, 2))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook(dim):
    e, t = _pair(lambda lib: lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 3, 3), dim=dim))
    _same_state(e, t)
    assert [n for n, _ in e.named_parameters()] == ["bias", "weight_g", "weight_v"]
    x = R.standard_normal((2, 2, 7)).astype(np.float32)
    _step(e, t, x)
    assert type(e.weight.grad_fn).__name__ == type(t.weight.grad_fn).__name__

    def removed(lib):
        m = lib.nn.utils.weight_norm(lib.nn.Linear(3, 2), dim=dim)
        lib.nn.utils.remove_weight_norm(m)
        return m

    e, t = _pair(removed)
    _same_state(e, t)
    assert not e._forward_pre_hooks
    assert isinstance(e.weight, ember.nn.Parameter)


def test_weight_norm_errors():
    same(lambda lib: lib.nn.utils.weight_norm(lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))),
         match="Cannot register two weight_norm hooks")
    same(lambda lib: lib.nn.utils.remove_weight_norm(lib.nn.Linear(2, 2)))
    same(lambda lib: lib.nn.utils.weight_norm(lib.nn.LazyLinear(2)))


@pytest.mark.parametrize("make,kw,xshape", [
    (lambda lib: lib.nn.Linear(4, 3), {}, (2, 4)),
    (lambda lib: lib.nn.Conv2d(2, 3, 2), {"n_power_iterations": 2}, (2, 2, 4, 4)),
    (lambda lib: lib.nn.ConvTranspose2d(3, 2, 2), {}, (2, 3, 3, 3)),
])
def test_spectral_norm_hook(make, kw, xshape):
    e, t = _pair(lambda lib: lib.nn.utils.spectral_norm(make(lib), **kw))
    _same_state(e, t)  # weight_orig, weight_u, weight_v; metadata spectral_norm version 1
    assert sorted(e._buffers) == ["weight_u", "weight_v"]
    x = R.standard_normal(xshape).astype(np.float32)
    for _ in range(2):
        _step(e, t, x)
        _same_state(e, t)
    e.eval()
    t.eval()
    _step(e, t, x)
    _same_state(e, t)

    def removed(lib):
        m = lib.nn.utils.spectral_norm(make(lib), **kw)
        m(lib.ones(xshape))
        return lib.nn.utils.remove_spectral_norm(m)

    e, t = _pair(removed)
    _same_state(e, t)
    assert not e._forward_pre_hooks and not e._state_dict_hooks


def test_spectral_norm_loads_version0_checkpoint():
    """A checkpoint from before version 1 holds ``weight`` but not ``weight_v``; the pre-hook
    solves for v as torch's does."""
    e, t = _pair(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(3, 4)).double())
    t(torch.ones(1, 3, dtype=torch.float64))
    sd = t.state_dict()
    sd["weight"] = t.weight.detach()
    del sd["weight_v"]
    sd._metadata[""]["spectral_norm"]["weight.version"] = 0
    esd = type(sd)((k, ember.tensor(v.numpy())) for k, v in sd.items())
    esd._metadata = sd._metadata
    t.load_state_dict(sd)
    e.load_state_dict(esd)
    assert_same(e.weight_v, t.weight_v, atol=1e-9)


def test_spectral_norm_errors():
    same(lambda lib: lib.nn.utils.spectral_norm(lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))),
         match="Cannot register two spectral_norm hooks")
    same(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)))
    same(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0))
    same(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2, bias=False), "bias"))
    same(lambda lib: lib.nn.utils.spectral_norm(lib.nn.LazyLinear(2)))
