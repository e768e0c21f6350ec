"""Lazy modules vs torch: uninitialized parameters (repr, errors), materialisation on the first
call with torch's seeded initial values, the class swap, state_dict save/load (loading
materializes), optimizers holding the parameters before the first call, deepcopy, and the
unbatched/grouped input rules."""

import copy

import numpy as np
import pytest
import torch
from oracle import assert_same, same

import ember

R = np.random.default_rng(5)

LAYERS = {
    "LazyLinear": (lambda nn: nn.LazyLinear(3), (2, 5)),
    "LazyLinear-nobias": (lambda nn: nn.LazyLinear(3, bias=False), (2, 4, 5)),
    "LazyConv1d": (lambda nn: nn.LazyConv1d(4, 3, padding=1), (2, 3, 7)),
    "LazyConv1d-unbatched": (lambda nn: nn.LazyConv1d(4, 3), (3, 7)),
    "LazyConv2d": (lambda nn: nn.LazyConv2d(4, 3, stride=2, groups=2), (2, 6, 7, 7)),
    "LazyConv3d": (lambda nn: nn.LazyConv3d(2, 2, bias=False), (1, 3, 4, 4, 4)),
    "LazyConvTranspose1d": (lambda nn: nn.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 5)),
    "LazyConvTranspose2d": (lambda nn: nn.LazyConvTranspose2d(2, 3, output_padding=1,
                                                              stride=2), (1, 3, 4, 4)),
    "LazyConvTranspose3d": (lambda nn: nn.LazyConvTranspose3d(2, 2), (1, 2, 3, 3, 3)),
    "LazyBatchNorm1d": (lambda nn: nn.LazyBatchNorm1d(), (4, 3)),
    "LazyBatchNorm2d": (lambda nn: nn.LazyBatchNorm2d(momentum=None), (2, 3, 4, 4)),
    "LazyBatchNorm3d": (lambda nn: nn.LazyBatchNorm3d(affine=False), (2, 3, 2, 2, 2)),
    "LazyInstanceNorm1d": (lambda nn: nn.LazyInstanceNorm1d(affine=False), (2, 3, 5)),
    "LazyInstanceNorm2d": (lambda nn: nn.LazyInstanceNorm2d(track_running_stats=False),
                           (2, 3, 4, 4)),
    "LazyInstanceNorm3d": (lambda nn: nn.LazyInstanceNorm3d(), (1, 2, 3, 3, 3)),
}


def _pair(name):
    make = LAYERS[name][0]
    ember.manual_seed(0)
    e = make(ember.nn)
    torch.manual_seed(0)
    t = make(torch.nn)
    return e, t


@pytest.mark.parametrize("name", list(LAYERS))
def test_lazy_layer_matches_torch(name):
    e, t = _pair(name)
    assert repr(e) == repr(t)
    assert e.has_uninitialized_params() == t.has_uninitialized_params()
    assert [(k, repr(v)) for k, v in e.state_dict().items()] == \
        [(k, repr(v)) for k, v in t.state_dict().items()]
    x = R.standard_normal(LAYERS[name][1]).astype(np.float32)
    ember.manual_seed(1)
    torch.manual_seed(1)
    eo, to = e(ember.tensor(x)), t(torch.tensor(x))
    assert type(e).__name__ == type(t).__name__  # became the eager class
    assert isinstance(e, getattr(ember.nn, type(t).__name__))
    assert repr(e) == repr(t)
    assert_same(eo, to, atol=1e-5)
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        assert_same(es[k], ts[k], atol=1e-6, what=k)  # torch's seeded initial values
    assert not e._forward_pre_hooks and not hasattr(e, "_initialize_hook")


def test_uninitialized_parameter_api():
    same(lambda lib: lib.nn.LazyLinear(3).weight)
    same(lambda lib: lib.nn.LazyLinear(3).weight + 1, match="uninitialized parameter")
    same(lambda lib: lib.nn.LazyLinear(3).weight.shape, match="Can't access the shape")
    same(lambda lib: lib.nn.LazyLinear(3).weight.share_memory_())
    same(lambda lib: isinstance(lib.nn.LazyLinear(3).weight, lib.nn.Parameter))
    same(lambda lib: lib.nn.parameter.is_lazy(lib.nn.LazyLinear(3).weight))
    same(lambda lib: lib.nn.LazyBatchNorm1d().running_mean)
    same(lambda lib: lib.nn.UninitializedParameter(requires_grad=False).requires_grad)
    same(lambda lib: lib.nn.LazyLinear(3, dtype=lib.float64).weight.dtype)
    p = ember.nn.UninitializedParameter()
    p.materialize((2, 3), dtype=ember.float64)
    assert type(p) is ember.nn.Parameter and p.shape == (2, 3) and p.dtype == ember.float64
    assert type(copy.deepcopy(ember.nn.UninitializedParameter())).__name__ == \
        "UninitializedParameter"


def test_optimizer_before_first_call():
    """An optimizer built on the uninitialized parameters steps the materialized ones."""
    res = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.LazyLinear(4), lib.nn.ReLU(), lib.nn.LazyLinear(2))
        opt = lib.optim.Adam(m.parameters(), lr=0.01)
        x = lib.tensor(R.standard_normal((5, 3)).astype(np.float32) if lib is ember else
                       res[0][1])
        for _ in range(3):
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
        res.append((m, x.numpy()))
    for (k, a), (_, b) in zip(res[0][0].state_dict().items(), res[1][0].state_dict().items()):
        assert_same(a, b, atol=1e-5, what=k)


def test_load_state_dict_materializes():
    def fn(lib):
        lib.manual_seed(0)
        src = lib.nn.Linear(5, 3)
        m = lib.nn.LazyLinear(3)
        m.load_state_dict(src.state_dict())
        before = (type(m).__name__, m.in_features, m.weight.shape)
        out = m(lib.ones(2, 5))
        return before, type(m).__name__, m.in_features, out

    same(fn)

    def mismatch(lib):
        m = lib.nn.LazyLinear(3)
        m.load_state_dict(lib.nn.Linear(5, 3).state_dict())
        return m(lib.ones(2, 4))

    same(mismatch)


def test_lazy_errors():
    same(lambda lib: lib.nn.LazyConv2d(4, 3)(lib.ones(2, 2)))
    same(lambda lib: lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5)))
    same(lambda lib: lib.nn.LazyBatchNorm2d()(lib.ones(2, 3)))

    class Half(ember.nn.LazyLinear):
        def initialize_parameters(self, input):
            self.weight.materialize((3, input.shape[-1]))

    with pytest.raises(RuntimeError, match="has not been fully initialized"):
        Half(3)(ember.ones(2, 4))
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented"):
        ember.nn.modules.lazy.LazyModuleMixin.initialize_parameters(ember.nn.LazyLinear(2))


def test_deepcopy_and_training_mode():
    m = ember.nn.LazyLinear(2)
    c = copy.deepcopy(m)
    c(ember.ones(1, 3))
    assert type(c) is ember.nn.Linear and type(m) is ember.nn.modules.lazy.LazyLinear
    m(ember.ones(1, 6))
    assert m.weight.shape == (2, 6)
