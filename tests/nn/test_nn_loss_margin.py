"""Margin and likelihood losses vs torch: values, grads, reductions, errors, fd checks."""

import numpy as np
import pytest
import torch
from oracle import arr, check, check_error, fd_check, positive

import ember

RED = ["mean", "sum", "none"]
R = np.random.default_rng(8)
SIGNS = np.array([1, -1, 1, 1, -1], dtype=np.float32)


def F(m):
    return m.nn.functional


@pytest.mark.parametrize("reduction", RED)
def test_margin_losses(reduction):
    check(lambda m, a, b, t: F(m).margin_ranking_loss(a, b, t, margin=0.3, reduction=reduction),
          arr(5), arr(5), SIGNS, grad_inputs=[0, 1])
    check(lambda m, a, t: F(m).hinge_embedding_loss(a, t, margin=0.8, reduction=reduction),
          arr(5), SIGNS, grad_inputs=[0])
    check(lambda m, a, t: F(m).soft_margin_loss(a, t, reduction=reduction), arr(5), SIGNS,
          grad_inputs=[0])
    check(lambda m, a, t, w: F(m).multilabel_soft_margin_loss(a, t, w, reduction=reduction),
          arr(3, 4), (R.random((3, 4)) > 0.5).astype(np.float32), positive(4), grad_inputs=[0])
    check(lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, reduction=reduction),
          arr(4, 3), arr(4, 3), arr(4, 3))
    check(lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, p=1, swap=True, margin=2.0,
                                                      reduction=reduction),
          arr(4, 3), arr(4, 3), arr(4, 3))


@pytest.mark.parametrize("reduction", RED)
def test_likelihood_losses(reduction):
    counts = R.integers(0, 5, size=(3, 4)).astype(np.float32)
    check(lambda m, a, t: F(m).poisson_nll_loss(a, t, reduction=reduction), arr(3, 4), counts,
          grad_inputs=[0])
    check(lambda m, a, t: F(m).poisson_nll_loss(a, t, log_input=False, full=True,
                                                reduction=reduction),
          positive(3, 4), counts, grad_inputs=[0])
    # the target's gradient, through the masked Stirling term: NaN at 0 (0 / 0), as torch
    target = np.array([[0.0, 0.5, 1.0, 2.0], [3.0, 0.0, 1.5, 4.0], [1.2, 0.7, 6.0, 0.1]],
                      dtype=np.float32)
    check(lambda m, a, t: F(m).poisson_nll_loss(a, t, full=True, reduction=reduction),
          arr(3, 4), target)
    check(lambda m, a, t, v: F(m).gaussian_nll_loss(a, t, v, reduction=reduction), arr(3, 4),
          arr(3, 4), positive(3, 4))
    check(lambda m, a, t, v: F(m).gaussian_nll_loss(a, t, v, full=True, reduction=reduction),
          arr(3, 4), arr(3, 4), positive(3))
    check(lambda m, a, t, v: F(m).gaussian_nll_loss(a, t, v, reduction=reduction), arr(3, 4),
          arr(3, 4), positive(3, 1))
    check(lambda m, a, t: F(m).gaussian_nll_loss(a, t, 0.5, reduction=reduction), arr(3, 4),
          arr(3, 4))


def test_errors():
    check_error(lambda m, a, t: F(m).gaussian_nll_loss(a, t, -1.0), arr(3), arr(3),
                match="var has negative entry/entries")
    check_error(lambda m, a, t, v: F(m).gaussian_nll_loss(a, t, v), arr(3, 4), arr(3, 4),
                positive(2), match="var is of incorrect size")
    check_error(lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, margin=0.0), arr(2, 3),
                arr(2, 3), arr(2, 3), match="margin must be greater than 0, got 0.0")
    check_error(lambda m, a, b, t: F(m).margin_ranking_loss(a, b, t), arr(2, 3), arr(2, 3),
                arr(2), match="All input tensors should have same dimension")
    check_error(lambda m, a, t: F(m).poisson_nll_loss(a, t, reduction="x"), arr(2), arr(2),
                match="x is not a valid value for reduction")
    check_error(lambda m: m.nn.TripletMarginLoss(margin=0),
                match="expected margin to be greater than 0")


LAYERS = {
    "MarginRankingLoss": ({"margin": 0.2}, lambda: [arr(5), arr(5), SIGNS]),
    "HingeEmbeddingLoss": ({}, lambda: [arr(5), SIGNS]),
    "SoftMarginLoss": ({}, lambda: [arr(5), SIGNS]),
    "MultiLabelSoftMarginLoss": ({}, lambda: [arr(3, 4), R.random((3, 4)).astype(np.float32)]),
    "PoissonNLLLoss": ({"full": True}, lambda: [arr(3, 4), positive(3, 4) * 3]),
    "GaussianNLLLoss": ({"full": True}, lambda: [arr(3, 4), arr(3, 4), positive(3, 4)]),
    "TripletMarginLoss": ({"swap": True}, lambda: [arr(3, 4), arr(3, 4), arr(3, 4)]),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layers(name):
    kw, make = LAYERS[name]
    e, t = getattr(ember.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(e) == repr(t) and list(e.state_dict()) == list(t.state_dict())
    check(lambda m, *a: (e if m is ember else t)(*a), *make(), grad_inputs=[0])


def test_fd_checks():
    Fe = ember.nn.functional
    s = ember.tensor(SIGNS[:3], dtype=ember.float64)
    fd_check(lambda a, b: Fe.margin_ranking_loss(a, b, s, margin=0.5), arr(3), arr(3))
    fd_check(lambda a: Fe.soft_margin_loss(a, s), arr(3))
    fd_check(lambda a, t: Fe.multilabel_soft_margin_loss(a, t), arr(2, 3), R.random((2, 3)))
    fd_check(lambda a, v: Fe.gaussian_nll_loss(a, ember.zeros(2, 3, dtype=ember.float64), v),
             arr(2, 3), positive(2, 3))
    fd_check(lambda a, p, n: Fe.triplet_margin_loss(a, p, n, margin=5.0), arr(2, 3), arr(2, 3),
             arr(2, 3))
    fd_check(lambda a: Fe.poisson_nll_loss(a, ember.tensor([[1.0, 3.0]], dtype=ember.float64),
                                           full=True), arr(1, 2))


@pytest.mark.parametrize("reduction", RED)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(reduction, p):
    t = np.array([0, 3, 1], dtype=np.int64)
    w = positive(4)
    check(lambda m, x: F(m).multi_margin_loss(x, m.tensor(t), p=p, margin=0.7,
                                              reduction=reduction), arr(3, 4))
    check(lambda m, x, w: F(m).multi_margin_loss(x, m.tensor(t), weight=w, reduction=reduction),
          arr(3, 4), w, grad_inputs=[0])
    check(lambda m, x: F(m).multi_margin_loss(x, m.tensor([2]), reduction=reduction), arr(4))


def test_multi_margin_errors_and_layer():
    mm = lambda m, x, t: F(m).multi_margin_loss(x, t, p=3)  # noqa: E731
    check_error(mm, arr(3, 4), np.array([0, 1, 2]), match="only p == 1 and p == 2 supported")
    check_error(lambda m, x, t: F(m).multi_margin_loss(x, t), arr(3, 4), np.array([0, 1]),
                match="target tensor should be 1-D with size equal to the number of input")
    e, t = ember.nn.MultiMarginLoss(p=2), torch.nn.MultiMarginLoss(p=2)
    assert repr(e) == repr(t)
    check(lambda m, x: (e if m is ember else t)(x, m.tensor([1, 0])), arr(2, 3))
    fd_check(lambda x: ember.nn.functional.multi_margin_loss(x, ember.tensor([1, 0]), p=2),
             arr(2, 3))


def test_triplet_with_distance_and_nllloss2d():
    e = ember.nn.TripletMarginWithDistanceLoss(swap=True)
    t = torch.nn.TripletMarginWithDistanceLoss(swap=True)
    assert repr(e) == repr(t)
    check(lambda m, a, p, n: (e if m is ember else t)(a, p, n), arr(4, 3), arr(4, 3), arr(4, 3))

    def cos_dist(m):
        return lambda x, y: 1 - F(m).cosine_similarity(x, y)
    check(lambda m, a, p, n: F(m).triplet_margin_with_distance_loss(
        a, p, n, distance_function=cos_dist(m), margin=0.5, reduction="none"),
        arr(4, 3), arr(4, 3), arr(4, 3))
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        n2 = ember.nn.NLLLoss2d()
    assert repr(n2) == "NLLLoss2d()"
