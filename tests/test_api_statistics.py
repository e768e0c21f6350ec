"""cov, corrcoef, histogram, histogramdd, trapezoid/trapz, cumulative_trapezoid and gradient
against torch: values, dtypes, grad_fn names, gradients, warnings and errors."""

import warnings

import numpy as np
import oracle
import pytest
from oracle import check, same

import ember

_RNG = np.random.default_rng(99)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _nodes(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]


X = arr(3, 5)
FW = np.array([1, 2, 1, 1, 3])
AW = np.array([0.5, 0.1, 1.0, 2.0, 0.3], dtype="float32")


@pytest.mark.parametrize("fn", [
    lambda m, x: m.cov(x),
    lambda m, x: m.cov(x, correction=0),
    lambda m, x: m.cov(x, correction=2),
    lambda m, x: m.cov(x[0]),
    lambda m, x: x.cov(fweights=m.tensor(FW)),
    lambda m, x: m.cov(x, aweights=m.tensor(AW)),
    lambda m, x: m.cov(x, correction=3, fweights=m.tensor(FW), aweights=m.tensor(AW)),
    lambda m, x: m.cov(x.t()),
    lambda m, x: m.corrcoef(x),
    lambda m, x: x.corrcoef(),
    lambda m, x: m.corrcoef(x[0]),
])
def test_cov_corrcoef(fn):
    e, t = check(fn, X)
    assert _nodes(e) == _nodes(t)


@pytest.mark.parametrize("fn", [
    lambda m: m.cov(m.tensor([[1, 2, 4], [2, 2, 7]])),
    lambda m: m.corrcoef(m.tensor([[1.0, 2, 3], [2, 2, 2]])),
    lambda m: m.cov(m.ones(2, 2, 2)),
    lambda m: m.cov(m.tensor([True, False])),
    lambda m: m.cov(m.ones(3, 5), fweights=m.ones(5)),
    lambda m: m.cov(m.ones(3, 5), fweights=m.tensor([1, -2, 1, 1, 3])),
    lambda m: m.cov(m.ones(3, 5), aweights=m.tensor(FW)),
    lambda m: m.cov(m.ones(3, 5), aweights=-m.ones(5)),
    lambda m: m.cov(m.ones(3, 5), fweights=m.ones(4, dtype=m.int64)),
    lambda m: m.cov(m.ones(3, 5), fweights=m.ones(1, 5, dtype=m.int64)),
    lambda m: m.cov(m.ones(3, 5), fweights=m.zeros(5, dtype=m.int64)),
    lambda m: m.corrcoef(m.ones(2, 2, 2)),
])
def test_cov_rules(fn):
    same(fn)


def test_cov_degrees_of_freedom_warning():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        out = ember.cov(ember.tensor(X), correction=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle.assert_same(out, oracle.torch.cov(oracle.torch.tensor(X), correction=10))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.histogram(x, 4),
    lambda m, x: m.histogram(x, 1),
    lambda m, x: x.histogram(3),
    lambda m, x: m.histogram(x.double(), 3, range=(-1.0, 1.0)),
    lambda m, x: m.histogram(x, m.tensor([-1.0, 0.0, 0.5, 2.0])),
    lambda m, x: m.histogram(x, 3, weight=x.abs(), density=True),
    lambda m, x: m.histogram(x, 5, density=True),
    lambda m, x: m.histogram(m.ones(3), 2),
    lambda m, x: m.histogram(m.tensor([]), 2),
    lambda m, x: m.histogram(m.tensor([0.0, 1.0, 1.0, 2.0]), 2),
    lambda m, x: m.histogramdd(m.tensor([[0.0, 0], [1, 1], [2, 0.5]]), bins=[2, 3]),
    lambda m, x: m.histogramdd(m.tensor([[0.0, 0], [1, 1], [2, 0.5]]), 2, [0.0, 2, 0, 1],
                               m.tensor([1.0, 2, 3]), True),
    lambda m, x: m.histogramdd(x.reshape(5, 3), [2, 3, 4]),
    lambda m, x: m.histogramdd(x.reshape(5, 3), [m.tensor([-2.0, 0, 2]), m.tensor([-1.0, 1]),
                                                 m.tensor([-3.0, -1, 0, 3])]),
])
def test_histograms(fn):
    check(fn, X, grad=False)


@pytest.mark.parametrize("fn", [
    lambda m: m.histogram(m.tensor([1, 2]), 2),
    lambda m: m.histogram(m.ones(3), 0),
    lambda m: m.histogram(m.ones(3), 2, range=(1.0, 0.0)),
    lambda m: m.histogram(m.ones(3), 2, range=(0.0, float("inf"))),
    lambda m: m.histogram(m.tensor([float("nan"), 1.0]), 2),
    lambda m: m.histogramdd(m.ones(3, 2), bins=[2, 2, 2]),
])
def test_histogram_errors(fn):
    same(fn)


Y = arr(3, 5)
XS = np.array([0.0, 1, 3, 4, 8], dtype="float32")


@pytest.mark.parametrize("fn", [
    lambda m, y, x: m.trapezoid(y),
    lambda m, y, x: m.trapezoid(y, dx=0.5, dim=0),
    lambda m, y, x: m.trapezoid(y, x),
    lambda m, y, x: m.trapezoid(y, x.expand(3, 5) * 2, dim=1),
    lambda m, y, x: m.trapezoid(y, y.detach() * 2, dim=0),
    lambda m, y, x: m.trapz(y, dx=2),
    lambda m, y, x: m.trapz(y, x),
    lambda m, y, x: m.cumulative_trapezoid(y),
    lambda m, y, x: m.cumulative_trapezoid(y, x),
    lambda m, y, x: m.cumulative_trapezoid(y, dx=3.0, dim=0),
])
def test_trapezoid(fn):
    e, t = check(fn, Y, XS, grad_inputs=(0,))
    assert _nodes(e) == _nodes(t)


@pytest.mark.parametrize("fn", [
    lambda m: m.trapezoid(m.tensor([[1, 2, 4]])),
    lambda m: m.trapezoid(m.ones(2, 0)),
    lambda m: m.trapezoid(m.ones(2, 0), m.ones(0)),
    lambda m: m.trapezoid(m.tensor([True, False])),
    lambda m: m.trapezoid(m.ones(3), m.ones(4)),
    lambda m: m.cumulative_trapezoid(m.tensor([1, 2, 4])),
    lambda m: m.cumulative_trapezoid(m.tensor([True, False])),
])
def test_trapezoid_rules(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m, y: m.gradient(y),
    lambda m, y: m.gradient(y, spacing=2.0, dim=1, edge_order=2),
    lambda m, y: m.gradient(y, spacing=[2.0, 0.5]),
    lambda m, y: m.gradient(y, dim=-1),
    lambda m, y: m.gradient(y, spacing=(m.tensor([0.0, 1, 3]), m.tensor([0.0, 1, 2, 4, 8]))),
    lambda m, y: m.gradient(y, spacing=(m.tensor(XS),), dim=1, edge_order=2),
    lambda m, y: m.gradient(y[0]),
])
def test_gradient(fn):
    e, t = check(fn, Y)
    assert _nodes(e) == _nodes(t)


@pytest.mark.parametrize("fn", [
    lambda m: m.gradient(m.tensor([1, 4, 9, 16])),
    lambda m: m.gradient(m.ones(3, 3), edge_order=3),
    lambda m: m.gradient(m.ones(3, 2), edge_order=2),
    lambda m: m.gradient(m.ones(3, 3), spacing=[1.0, 2.0, 3.0]),
])
def test_gradient_rules(fn):
    same(fn)


def test_histogram_results_require_grad_like_torch():
    same(lambda m: (lambda h: (h.hist.requires_grad, h.bin_edges.requires_grad,
                               type(h.hist.grad_fn).__name__))(
        m.histogram(m.tensor([0.5, 1.0, 2.0], requires_grad=True), 2)))
    same(lambda m: m.histogram(m.tensor([0.5, 1.0], requires_grad=True), 2).hist.sum()
         .backward())
    same(lambda m: m.histogramdd(m.ones(3, 2, requires_grad=True), [2, 2]).bin_edges[1]
         .requires_grad)
