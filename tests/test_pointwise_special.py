"""ember.special against torch.special: values (float32 and float64), grads, node names."""

import numpy as np
import pytest
import torch
from oracle import arr, check, fd_check, gradgrad_check

import ember

UNARY = {
    "ndtr": (-4, 4), "ndtri": (0.02, 0.98), "log_ndtr": (-6, 6), "erfcx": (-2, 5),
    "entr": (0.1, 3), "expit": (-4, 4), "gammaln": (0.2, 6), "psi": (0.2, 6), "erf": (-2, 2),
    "erfc": (-2, 2), "erfinv": (-0.9, 0.9), "exp2": (-2, 2), "expm1": (-2, 2),
    "log1p": (0, 2), "logit": (0.1, 0.9), "sinc": (-2, 2), "round": (-3, 3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_special_unary_matches_torch(name):
    lo, hi = UNARY[name]
    for x in (arr(3, 4, low=lo, high=hi), arr(low=lo, high=hi), arr(0, 2, low=lo, high=hi),
              arr(5, dtype="float64", low=lo, high=hi)):
        check(lambda m, t: getattr(m.special, name)(t), x)
    if name != "round":
        f = getattr(ember.special, name)
        fd_check(f, arr(4, dtype="float64", low=lo, high=hi))
        gradgrad_check(f, arr(3, dtype="float64", low=lo, high=hi))


def test_special_binary_and_multi():
    check(lambda m, x, y: m.special.xlog1py(x, y), arr(3, 4), arr(4, low=0, high=2))
    check(lambda m, x, y: m.special.xlogy(x, y), arr(3, 4), arr(4, low=0.1, high=2))
    check(lambda m, x: m.special.polygamma(2, x), arr(4, low=0.5, high=3))
    check(lambda m, x: m.special.multigammaln(x, 2), arr(4, low=1, high=3))
    check(lambda m, x: m.special.logsumexp(x, 1), arr(3, 4))
    check(lambda m, x: m.special.softmax(x, 0), arr(3, 4))
    check(lambda m, x: m.special.log_softmax(x, -1), arr(3, 4))
    fd_check(ember.special.xlog1py, arr(3, dtype="float64"), arr(3, dtype="float64", low=0))
    z = np.array([0.0, 0.0, 2.0], np.float32)
    check(lambda m, x, y: m.special.xlog1py(x, y), z, np.array([-1.0, np.nan, 1.0], np.float32),
          grad=False)


def test_special_tails_and_edges():
    p = np.concatenate([np.logspace(-300, -1, 60), [0.0, 0.3, 1 - 1e-16, 1.0, 1.5, np.nan]])
    check(lambda m, t: m.special.ndtri(t), p, grad=False, rtol=1e-9)
    x = np.linspace(-60, 60, 241)
    check(lambda m, t: m.special.log_ndtr(t), x, grad=False, rtol=1e-9)
    check(lambda m, t: m.special.ndtr(t), x, grad=False, rtol=1e-9)
    e = np.array([-30.0, -1.0, 0.0, 0.5, 1.0, 7.9, 8.1, 30.0, 1e10, np.inf, np.nan])
    check(lambda m, t: m.special.erfcx(t), e, grad=False, rtol=1e-12)
    check(lambda m, t: m.special.entr(t), np.array([-1.0, 0.0, 0.5, np.inf, np.nan]), grad=False)


def test_special_node_names():
    def names(m):
        x = m.tensor([0.3, 0.6], requires_grad=True)
        s = m.special
        return [s.ndtri(x).grad_fn.name(), s.log_ndtr(x).grad_fn.name(),
                s.erfcx(x).grad_fn.name(), s.entr(x).grad_fn.name(),
                s.xlog1py(x, x).grad_fn.name(), s.expit(x).grad_fn.name(),
                s.gammaln(x).grad_fn.name(), s.psi(x).grad_fn.name()]
    assert names(ember) == names(torch)
