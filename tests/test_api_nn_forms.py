"""torch.<name> forms of nn.functional ops (ATen signatures) against torch: values, dtypes,
gradients, grad_fn names, seeded random draws, errors."""

import numpy as np
import oracle
import pytest
from oracle import check, check_error, same

import ember

_RNG = np.random.default_rng(1818)


def arr(*shape, **kw):
    return oracle.arr(*shape, rng=_RNG, **kw)


def _node(out):
    out = out[0] if isinstance(out, tuple | list) else out
    return type(out.grad_fn).__name__ if out.grad_fn is not None else None


X = arr(2, 3, 5)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.celu(x),
    lambda m, x: m.celu(x, 0.5),
    lambda m, x: m.selu(x),
    lambda m, x: m.rrelu(x),
    lambda m, x: m.rrelu(x, 0.1, 0.3),
    lambda m, x: m.threshold(x, 0.1, 2.0),
    lambda m, x: m.hardshrink(x),
    lambda m, x: x.hardshrink(0.3),
    lambda m, x: m.prelu(x, m.tensor([0.25, 0.5, 0.1])),
    lambda m, x: x.prelu(m.tensor([0.25])),
])
def test_activations(fn):
    e, t = check(fn, X)
    assert _node(e) == _node(t)


def grads_match(fn, *arrays, seed=0):
    """Values and input gradients for a random upstream gradient, without oracle's
    saved-tensor comparison: in-place activations save the result in torch (its
    ``*Backward1`` nodes) and the input in ember's nn.functional."""
    u = None
    grads = []
    for lib in (ember, oracle.torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        if u is None:
            u = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype("float32")
        out.backward(lib.tensor(u))
        grads.append([out.detach().numpy()] + [x.grad.numpy() for x in xs])
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.celu_(x * 1),
    lambda m, x: m.celu_(x * 1, 0.5),
    lambda m, x: m.selu_(x * 1),
    lambda m, x: m.threshold_(x * 1, 0.0, -1.0),
    lambda m, x: m.rrelu_(x * 1),
])
def test_inplace_activations(fn):
    grads_match(fn, X)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.dropout(x, 0.3, True),
    lambda m, x: m.dropout(x, 0.3, False),
    lambda m, x: m.alpha_dropout(x, 0.3, True),
    lambda m, x: m.feature_alpha_dropout(x, 0.3, True),
    lambda m, x: m.feature_dropout(x, 0.3, True),
    lambda m, x: m.feature_dropout(x[0], 0.5, True),
    lambda m, x: m.dropout_(x * 1, 0.3, True),
    lambda m, x: m.alpha_dropout_(x * 1, 0.3, True),
    lambda m, x: m.feature_dropout_(x * 1, 0.3, True),
    lambda m, x: m.feature_alpha_dropout_(x * 1, 0.3, True),
])
def test_dropout_draws_as_torch(fn):
    def seeded(m, x):
        m.manual_seed(7)
        return fn(m, x)
    e, t = check(seeded, X)
    assert _node(e) == _node(t)


def test_rrelu_training_draws_as_torch():
    def seeded(m, x):
        m.manual_seed(7)
        return m.rrelu(x, training=True)
    check(seeded, X)
    grads_match(lambda m, x: (m.manual_seed(3), m.rrelu_(x * 1, 0.1, 0.4, True))[1], X)


@pytest.mark.parametrize("fn, match", [
    (lambda m, x: m.feature_dropout(x[0, 0], 0.5, True), "at least 2 dimensions"),
    (lambda m, x: m.dropout(x, 1.5, True), "but got 1.5"),
    (lambda m, x: m.dropout(x, 1.5, False), "between 0 and 1"),
    (lambda m, x: m.alpha_dropout_(x, -0.5, True), "but got -0.5"),
    (lambda m, x: m.feature_dropout(x, 2.0, True), "but got 2"),
    (lambda m, x: m.feature_alpha_dropout(x, 2.0, False), "but got 2"),
    (lambda m, x: m.embedding(x, m.tensor([0])), None),
])
def test_dropout_errors(fn, match):
    check_error(fn, X, match=match)


W3, B3 = arr(3), arr(3)


@pytest.mark.parametrize("fn", [
    lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
    lambda m, x, w, b: m.batch_norm(x, None, None, m.zeros(3), m.ones(3), False, 0.1, 1e-5,
                                    True),
    lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
    lambda m, x, w, b: m.layer_norm(x, [5]),
    lambda m, x, w, b: m.layer_norm(x.transpose(1, 2), [3], w, b, 1e-3),
    lambda m, x, w, b: m.group_norm(x, 3, w, b),
    lambda m, x, w, b: m.group_norm(x, 1),
    lambda m, x, w, b: m.rms_norm(x.transpose(1, 2).contiguous(), [3], w),
    lambda m, x, w, b: m.rms_norm(x, (5,), eps=1e-3),
])
def test_normalization(fn):
    e, t = check(fn, X, W3, B3)
    assert _node(e) == _node(t)


def test_bilinear():
    # values and gradients; nn.functional.bilinear records another last node than torch's
    check(lambda m, x, w, b: m.bilinear(x[:, :, :3], x[:, :, 2:], m.ones(4, 3, 3) * w[:, None],
                                        m.ones(4) * b.sum()), X, W3, B3)


def test_batch_norm_updates_running_stats():
    for lib in (ember, oracle.torch):
        rm, rv = lib.zeros(3), lib.ones(3)
        lib.batch_norm(lib.tensor(X), None, None, rm, rv, True, 0.3, 1e-5, False)
        if lib is ember:
            erm, erv = rm.numpy(), rv.numpy()
    np.testing.assert_allclose(erm, rm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(erv, rv.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda m, w: m.embedding(w, m.tensor([[0, 2], [1, 1]])),
    lambda m, w: m.embedding(w, m.tensor([0, 2, 3]), 2),
    lambda m, w: m.embedding(w, m.tensor([0, 2, 3]), -1),
    lambda m, w: m.embedding(w, m.tensor([0, 2, 2, 3]), -1, True),
])
def test_embedding(fn):
    e, t = check(fn, arr(4, 3))
    assert _node(e) == _node(t)


A, P, N = arr(4, 6), arr(4, 6), arr(4, 6)
SIGN = np.array([1.0, -1.0, 1.0, -1.0], dtype="float32")


@pytest.mark.parametrize("red", [0, 1, 2])
@pytest.mark.parametrize("fn", [
    lambda m, a, p, n, r: m.kl_div(a, p.softmax(-1), r),
    lambda m, a, p, n, r: m.kl_div(a, p, r, log_target=True),
    lambda m, a, p, n, r: m.hinge_embedding_loss(a, m.tensor(SIGN)[:, None].expand(4, 6), 0.5, r),
    lambda m, a, p, n, r: m.margin_ranking_loss(a[:, 0], p[:, 0], m.tensor(SIGN), 0.1, r),
    lambda m, a, p, n, r: m.cosine_embedding_loss(a, p, m.tensor(SIGN), 0.2, r),
    lambda m, a, p, n, r: m.triplet_margin_loss(a, p, n, 1.0, 2.0, 1e-6, True, r),
    lambda m, a, p, n, r: m.poisson_nll_loss(a, p.abs(), True, True, 1e-8, r),
    lambda m, a, p, n, r: m.poisson_nll_loss(a.abs(), p.abs(), False, False, 1e-8, r),
    lambda m, a, p, n, r: m.binary_cross_entropy_with_logits(a, p.sigmoid(), n.abs().detach(),
                                                             m.ones(6) * 2, r),
    lambda m, a, p, n, r: m.binary_cross_entropy_with_logits(a, p.sigmoid(), reduction=r),
])
def test_losses(fn, red):
    e, t = check(lambda m, a, p, n: fn(m, a, p, n, red), A, P, N)
    assert _node(e) == _node(t)


def test_kl_div_does_not_warn():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.kl_div(ember.tensor(A), ember.tensor(P))


def test_unknown_reduction_is_none():
    check(lambda m, a: m.kl_div(a, a.abs(), 5), A)
    check(lambda m, a: m.hinge_embedding_loss(a, a.sign(), 1.0, -1), A)


@pytest.mark.parametrize("fn", [
    lambda m, x: m.cosine_similarity(x, x.flip(0)),
    lambda m, x: m.cosine_similarity(x, x * 2, 2, 1e-6),
    lambda m, x: m.pairwise_distance(x[0], x[1]),
    lambda m, x: m.pairwise_distance(x[0], x[1], 1.0, 1e-6, True),
    lambda m, x: m.pdist(x[0]),
    lambda m, x: m.pdist(x[0], 3.0),
])
def test_distances(fn):
    check(fn, X)  # nn.functional's pairwise_distance/pdist record other nodes than torch's


@pytest.mark.parametrize("fn", [
    lambda m, x: m.max_pool1d(x, 2),
    lambda m, x: m.max_pool1d(x, [2], [1], [1], [1], True),
    lambda m, x: m.max_pool1d_with_indices(x, 3, 1),
    lambda m, x: m.max_pool2d(x[None], 2),
    lambda m, x: m.max_pool2d(x[None], (2, 2), (1, 2), 1),
    lambda m, x: m.max_pool3d(x[None, None], 2),
    lambda m, x: m.avg_pool1d(x, 2),
    lambda m, x: m.avg_pool1d(x, 3, 2, 1, True, False),
    lambda m, x: m.adaptive_avg_pool1d(x, 2),
    lambda m, x: m.adaptive_max_pool1d(x, 3),
    lambda m, x: m.constant_pad_nd(x, [1, 2]),
    lambda m, x: m.constant_pad_nd(x, (1, 0, 0, 2), 1.5),
])
def test_pooling_padding(fn):
    e, t = check(fn, X)
    assert _node(e) == _node(t)


@pytest.mark.parametrize("fn", [
    lambda m, x, w: m.convolution(x, w, None, [1], [0], [1], False, [0], 1),
    lambda m, x, w: m.convolution(x, w, m.ones(4), [2], [1], [1], False, [0], 1),
    lambda m, x, w: m.convolution(x, w.transpose(0, 1), None, [2], [1], [1], True, [1], 1),
    lambda m, x, w: m.convolution(x[:, :, None].expand(2, 3, 2, 5), w[:, :, None]
                                  .expand(4, 3, 2, 2), None, [1, 1], [0, 0], [1, 1], False,
                                  [0, 0], 1),
])
def test_convolution(fn):
    e, t = check(fn, X, arr(4, 3, 2))
    assert _node(e) == _node(t)


def test_convolution_error():
    same(lambda m: m.convolution(m.ones(2, 3), m.ones(2, 3), None, [1], [0], [1], False, [0], 1))


def test_embedding_wrong_argument():
    same(lambda m: m.embedding(m.tensor([0, 1]), [[1.0]]))


@pytest.mark.parametrize("modes", [(0, 0), (1, 1), (2, 2), (0, 2)])
def test_grid_sampler(modes):
    check(lambda m, x, g: m.grid_sampler(x, g, modes[0], modes[1], True), arr(2, 3, 4, 5),
          arr(2, 3, 3, 2, low=-1.2, high=1.2), atol=1e-4, rtol=1e-4)


def test_affine_grid_generator():
    e, t = check(lambda m, th: m.affine_grid_generator(th, [2, 3, 4, 5], False), arr(2, 2, 3))
    assert _node(e) == _node(t) == "AffineGridGeneratorBackward0"
