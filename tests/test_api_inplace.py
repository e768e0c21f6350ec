"""The in-place forms added for API coverage (addmm_, cumsum_, tril_, logit_, ...),
fill_diagonal_ and index_reduce against torch: values, grad_fn, version counters, errors."""

import warnings

import numpy as np
import oracle
import pytest
from oracle import check, same

import ember

_RNG = np.random.default_rng(4242)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _node(out):
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


X, Y = arr(3, 4), arr(4, 4)
POS = arr(3, 4, low=0.1, high=0.9)


@pytest.mark.parametrize("fn", [
    lambda m, x, y: (x * 1).addmm_(x, y),
    lambda m, x, y: (x * 1).addmm_(x, y, beta=0.5, alpha=2),
    lambda m, x, y: (x * 1).addbmm_(x[None].expand(2, 3, 4), y[None].expand(2, 4, 4)),
    lambda m, x, y: (x[None] * 1).baddbmm_(x[None], y[None], alpha=0.5),
    lambda m, x, y: (x[:, 0] * 1).addmv_(x, y[0]),
    lambda m, x, y: m.addmv_(x[:, 0] * 1, x, y[0], beta=2),
    lambda m, x, y: (x * 1).addr_(x[:, 0], y[0]),
    lambda m, x, y: (x * 1).cumsum_(1),
    lambda m, x, y: (x * 1).cumprod_(0),
    lambda m, x, y: (x.abs() + 0.5).digamma_(),
    lambda m, x, y: (x.abs() + 0.5).lgamma_(),
    lambda m, x, y: (x.abs() + 0.5).polygamma_(1),
    lambda m, x, y: (x.sigmoid() * 1).logit_(),
    lambda m, x, y: m.logit_(x.sigmoid() * 1, 0.1),
    lambda m, x, y: (x * 1).sinc_(),
    lambda m, x, y: m.sinc_(x * 1),
    lambda m, x, y: (x * 1).renorm_(2, 0, 1.0),
    lambda m, x, y: (x * 1).tril_(),
    lambda m, x, y: (x * 1).triu_(1),
    lambda m, x, y: (x * 1).i0_(),
    lambda m, x, y: (x * 1).ldexp_(m.tensor([1.0, 2.0, -1.0, 0.0])),
    lambda m, x, y: m.ldexp_(x * 1, m.tensor(3.0)),
    lambda m, x, y: (x * 1).nextafter_(y[:3]),
])
def test_inplace_forms(fn):
    e, t = check(fn, X, Y)
    assert _node(e) == _node(t)


def test_inplace_without_torch_node_names():
    # values and gradients; ember's out-of-place mvlgamma is a composite (no MvlgammaBackward0)
    check(lambda m, x: (x.abs() + 2).mvlgamma_(2), X)
    check(lambda m, x: (x * 1).heaviside_(m.tensor(0.5)), X, grad=False)


@pytest.mark.parametrize("fn", [
    lambda m: (lambda x: (x.cumsum_(0), x._version))(m.ones(3)),
    lambda m: m.ones(3, requires_grad=True).tril_(),
    lambda m: m.ones(2, 2, dtype=m.int64).digamma_(),
    lambda m: m.ones(2, 2, dtype=m.int32).cumsum_(0),
    lambda m: m.tensor([4, 6]).gcd_(m.tensor([6, 9])),
    lambda m: m.lcm_(m.tensor([4, 6], dtype=m.int32), m.tensor([6, 9], dtype=m.int32)),
    lambda m: m.gcd_(m.tensor([4, 6]), m.tensor([6.0, 9.0])),
])
def test_inplace_state_and_errors(fn):
    same(fn)


FILL = [
    lambda m: m.zeros(3, 4).fill_diagonal_(3.0),
    lambda m: m.zeros(7, 3).fill_diagonal_(1, wrap=True),
    lambda m: m.zeros(7, 3).fill_diagonal_(1),
    lambda m: m.zeros(3, 7).fill_diagonal_(1, wrap=True),
    lambda m: m.zeros(2, 2, 2).fill_diagonal_(5),
    lambda m: m.zeros(3, 3, 3).permute(2, 0, 1).fill_diagonal_(5),
    lambda m: m.zeros(7, 3).t().fill_diagonal_(1, wrap=True),
    lambda m: m.zeros(2, 3, dtype=m.int64).fill_diagonal_(1.7),
    lambda m: m.zeros(2, 3, 2).fill_diagonal_(5),
    lambda m: m.zeros(3).fill_diagonal_(1),
    lambda m: (lambda x: (x.fill_diagonal_(2), x._version))(m.zeros(2, 2)),
]


@pytest.mark.parametrize("fn", FILL)
def test_fill_diagonal(fn):
    same(fn)


def test_fill_diagonal_gradient():
    e, t = check(lambda m, x: (x * 1).fill_diagonal_(2.0), X)
    assert _node(e) == _node(t) == "CopySlices"
    check(lambda m, x: (x.repeat(3, 1) * 1).fill_diagonal_(2.0, wrap=True), arr(2, 3))


INDEX = np.array([0, 0, 2])


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    def fn(m, x, s, dim=0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return x.index_reduce(dim, m.tensor(INDEX), s, reduce, include_self=include_self)
    e, t = check(fn, X, arr(3, 4))
    assert _node(e) == _node(t)
    check(lambda m, x, s: fn(m, x.t(), s.t(), 1), X, arr(3, 4))


def test_index_reduce_inplace_and_function():
    def fn(m, x, s):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = m.index_reduce(x, 1, m.tensor([3, 0]), s[:, :2], "amax")
            return (x * 1).index_reduce_(1, m.tensor([3, 0]), s[:, :2], "mean") + a
    check(fn, X, arr(3, 4))


def test_index_reduce_warns_once_in_beta():
    import importlib

    mod = importlib.import_module("ember.ops.inplace_more")
    mod._WARNED.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(2):
            ember.zeros(2).index_reduce(0, ember.tensor([0]), ember.ones(1), "prod")
    assert [str(x.message) for x in w] == [
        "index_reduce() is in beta and the API may change at any time."]


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(3, 4).index_reduce(0, m.tensor([0, 0, 2]), m.ones(3, 4), "sum"),
    lambda m: m.zeros(3, 4).index_reduce(0, m.tensor([0, 5, 2]), m.ones(3, 4), "prod"),
    lambda m: m.zeros(3, 4).index_reduce(0, m.tensor([0, 0]), m.ones(3, 4), "prod"),
    lambda m: m.zeros(3, 4).index_reduce(0, m.tensor([0.0, 0, 2]), m.ones(3, 4), "prod"),
    lambda m: m.zeros(3, 4).long().index_reduce(0, m.tensor([0, 0, 2]), m.ones(3, 4), "prod"),
])
def test_index_reduce_errors(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(fn)
