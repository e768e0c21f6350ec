"""Losses vs torch: values, input grads, grad_fn chains, reductions, weights, errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from layer_oracle import assert_same_structure, compare_layer
from oracle import arr, check, check_error, fd_check, gradgrad_check

import ember

RED = ["mean", "sum", "none"]
R = np.random.default_rng(5)


def idx(*shape, high=4):
    return R.integers(0, high, size=shape).astype(np.int64)


def probs(*shape):
    p = R.random(shape).astype(np.float32)
    return p / p.sum(1, keepdims=True)


def F(m):
    return m.nn.functional


@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_indices(reduction):
    def run(m, x, t):
        y = F(m).cross_entropy(x, t, reduction=reduction)
        return y, y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
    check(run, arr(5, 4), idx(5))


def test_cross_entropy_grad_fn_chain_is_torchs():
    x = ember.randn(3, 4, requires_grad=True)
    y = ember.nn.functional.cross_entropy(x, ember.tensor([0, 1, 3]))
    assert y.grad_fn.name() == "NllLossBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"


@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_options(reduction):
    w = np.array([0.5, 1.0, 2.0, 0.1], dtype=np.float32)
    t = idx(6)
    t[1] = 2
    for kw in [dict(ignore_index=2), dict(label_smoothing=0.2), dict(ignore_index=1,
                                                                       label_smoothing=0.1)]:
        check(lambda m, x, w, kw=kw: F(m).cross_entropy(x, t_(m, t), weight=w,
                                                      reduction=reduction, **kw),
              arr(6, 4), w, grad_inputs=[0])
        check(lambda m, x, kw=kw: F(m).cross_entropy(x, t_(m, t), reduction=reduction, **kw),
              arr(6, 4))


def t_(m, a):
    return m.from_numpy(a.copy()) if m is ember else torch.from_numpy(a.copy())


@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_nd_and_unbatched(reduction):
    check(lambda m, x, t: F(m).cross_entropy(x, t, reduction=reduction), arr(2, 4, 3, 5),
          idx(2, 3, 5))
    check(lambda m, x, t: F(m).cross_entropy(x, t, reduction=reduction), arr(2, 4, 3),
          idx(2, 3))
    check(lambda m, x, t: F(m).cross_entropy(x, t, reduction=reduction), arr(4),
          np.array(2, dtype=np.int64))


@pytest.mark.parametrize("reduction", RED)
def test_cross_entropy_probabilities(reduction):
    w = np.array([0.5, 1.0, 2.0, 0.1], dtype=np.float32)
    check(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction), arr(5, 4), probs(5, 4))
    check(lambda m, x, p, w: F(m).cross_entropy(x, p, weight=w, reduction=reduction,
                                               label_smoothing=0.3),
          arr(5, 4), probs(5, 4), w, grad_inputs=[0, 1])
    check(lambda m, x, p: F(m).cross_entropy(x, p, reduction=reduction), arr(2, 4, 3),
          probs(2, 4, 3))


def test_cross_entropy_all_ignored_is_nan():
    check(lambda m, x: F(m).cross_entropy(x, t_(m, np.array([0, 0])), ignore_index=0),
          arr(2, 3))


def test_cross_entropy_errors():
    ce = lambda m, x, t: F(m).cross_entropy(x, t)  # noqa: E731
    check_error(ce, arr(3, 4), np.zeros((3, 4), np.int64),
                match="Expected floating point type for target with class probabilities")
    check_error(ce, arr(3, 4), np.zeros(3, np.float32), match="expected target dtype")
    check_error(ce, arr(3, 4), arr(3, 5), match="0D or 1D target tensor expected")
    check_error(ce, arr(3, 4), idx(2), match="Expected input batch_size (3) to match target "
                                            "batch_size (2).")
    check_error(ce, arr(3, 4), np.array([0, 1, 7]), match="Target 7 is out of bounds.")
    check_error(lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=1.5), arr(3, 4),
                idx(3), match="label_smoothing must be between 0.0 and 1.0")
    check_error(lambda m, x, t: F(m).cross_entropy(x, t, reduction="foo"), arr(3, 4), idx(3),
                match="foo is not a valid value for reduction")
    check_error(lambda m, x, t, w: F(m).nll_loss(x, t, weight=w), arr(3, 4), idx(3), arr(3),
                match="weight tensor should be defined either for all 4 classes")
    check_error(lambda m, x, t: F(m).nll_loss(x, t), arr(2, 3, 4, 5), idx(2, 4, 6),
                match="size mismatch")
    check_error(lambda m, x, t: F(m).nll_loss(x, t), arr(2, 3, 4, 5), idx(2, 4),
                match="only batches of spatial targets supported")


@pytest.mark.parametrize("reduction", RED)
def test_nll_loss(reduction):
    w = np.array([0.5, 1.0, 2.0, 0.1], dtype=np.float32)
    check(lambda m, x, t: F(m).nll_loss(x, t, reduction=reduction), arr(5, 4), idx(5))
    check(lambda m, x, t, w: F(m).nll_loss(x, t, weight=w, ignore_index=1, reduction=reduction),
          arr(5, 4), idx(5), w, grad_inputs=[0])
    check(lambda m, x, t: F(m).nll_loss(x, t, reduction=reduction), arr(2, 4, 3), idx(2, 3))


PAIR = [
    ("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.3}),
    ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}), ("huber_loss", {"delta": 0.4}),
]


@pytest.mark.parametrize("name,kw", PAIR)
@pytest.mark.parametrize("reduction", RED)
def test_regression_losses(name, kw, reduction):
    def run(m, x, t):
        y = getattr(F(m), name)(x, t, reduction=reduction, **kw)
        return y, y.grad_fn.name()
    check(run, arr(4, 5), arr(4, 5))
    fd_check(lambda x, t: getattr(ember.nn.functional, name)(x, t, reduction=reduction, **kw),
             arr(3, 2), arr(3, 2) + 0.05)


def test_regression_losses_broadcast_warn_and_weight():
    with pytest.warns(UserWarning, match="Using a target size"):
        check(lambda m, x, t: F(m).mse_loss(x, t), arr(3, 4), arr(4))
    check(lambda m, x, t, w: F(m).mse_loss(x, t, weight=w), arr(3, 4), arr(3, 4), arr(3, 4))
    check(lambda m, x, t: F(m).mse_loss(x, t), arr(3), np.array([1, 2, 3]), grad_inputs=[0])
    with pytest.warns(UserWarning):
        check_error(lambda m, x, t: F(m).mse_loss(x, t), arr(3, 4), arr(5))
    check_error(lambda m, x, t: F(m).smooth_l1_loss(x, t, beta=-1.0), arr(3), arr(3))
    check_error(lambda m, x, t: F(m).huber_loss(x, t, delta=0.0), arr(3), arr(3))


@pytest.mark.parametrize("reduction", RED)
def test_bce(reduction):
    p = R.uniform(0.05, 0.95, size=(4, 3)).astype(np.float32)
    t = R.random((4, 3)).astype(np.float32)
    w = R.random((4, 3)).astype(np.float32)
    check(lambda m, x, y: F(m).binary_cross_entropy(x, y, reduction=reduction), p, t)
    check(lambda m, x, y, w: F(m).binary_cross_entropy(x, y, w, reduction=reduction), p, t, w,
          grad_inputs=[0, 1])
    check(lambda m, x, y, w: F(m).binary_cross_entropy(x, y, w, reduction=reduction), p, t,
          w[0], grad_inputs=[0])


def test_bce_log_clamp_and_errors():
    p = np.array([0.0, 1.0, 0.5], dtype=np.float32)
    t = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    check(lambda m, x, y: F(m).binary_cross_entropy(x, y, reduction="none"), p, t, grad=False)
    check_error(lambda m, x, y: F(m).binary_cross_entropy(x, y), arr(3, 4), arr(3, 4),
                match="all elements of input should be between 0 and 1")
    check_error(lambda m, x, y: F(m).binary_cross_entropy(x, y), p, arr(1),
                match="that is different to the input size")


@pytest.mark.parametrize("reduction", RED)
def test_bce_with_logits(reduction):
    x = arr(4, 3) * 10
    t = R.random((4, 3)).astype(np.float32)
    pw = np.array([0.5, 2.0, 3.0], dtype=np.float32)
    w = R.random((4, 3)).astype(np.float32)
    check(lambda m, a, b: F(m).binary_cross_entropy_with_logits(a, b, reduction=reduction), x, t)
    check(lambda m, a, b, w, pw: F(m).binary_cross_entropy_with_logits(
        a, b, w, reduction=reduction, pos_weight=pw), x, t, w, pw, grad_inputs=[0, 1])
    fd_check(lambda a, b: ember.nn.functional.binary_cross_entropy_with_logits(
        a, b, pos_weight=ember.tensor(pw, dtype=ember.float64)), arr(4, 3), t)
    check_error(lambda m, a, b: F(m).binary_cross_entropy_with_logits(a, b), x, t[0],
                match="must be the same as input size")


def test_bce_with_logits_is_stable():
    x = np.array([-200.0, 200.0, 0.0], dtype=np.float32)
    t = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    check(lambda m, a, b: F(m).binary_cross_entropy_with_logits(a, b, reduction="none"), x, t)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    inp = np.log(probs(3, 4))
    tgt = np.log(probs(3, 4)) if log_target else probs(3, 4)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda m, a, b: F(m).kl_div(a, b, reduction=reduction, log_target=log_target),
              inp, tgt)


@pytest.mark.parametrize("reduction", RED)
def test_cosine_embedding_loss(reduction):
    t = np.array([1, -1, 1, -1], dtype=np.int64)
    check(lambda m, a, b: F(m).cosine_embedding_loss(a, b, t_(m, t), margin=0.1,
                                                     reduction=reduction), arr(4, 5), arr(4, 5))


def test_fused_loss_gradgrad():
    t = ember.tensor([0, 2, 1])
    gradgrad_check(lambda x: ember.nn.functional.cross_entropy(x, t), arr(3, 4))
    gradgrad_check(lambda x: ember.nn.functional.cross_entropy(x, t, label_smoothing=0.2),
                   arr(3, 4))
    gradgrad_check(lambda x, y: ember.nn.functional.mse_loss(x, y), arr(2, 3), arr(2, 3))
    gradgrad_check(lambda x, y: ember.nn.functional.binary_cross_entropy_with_logits(x, y),
                   arr(2, 3), R.random((2, 3)))
    p = R.uniform(0.1, 0.9, size=(2, 3))
    gradgrad_check(lambda x: ember.nn.functional.binary_cross_entropy(
        x, ember.tensor(np.full((2, 3), 0.3))), p)
    fd_check(lambda x: ember.nn.functional.nll_loss(x, t, reduction="none"), arr(3, 4))
    target = ember.tensor(probs(3, 4), dtype=ember.float64)
    fd_check(lambda x: ember.nn.functional.cross_entropy(x, target), arr(3, 4))


LOSSES = [
    ("CrossEntropyLoss", {}, "idx"), ("CrossEntropyLoss", {"label_smoothing": 0.1}, "idx"),
    ("CrossEntropyLoss", {"weight": [1.0, 2.0, 0.5, 1.0]}, "idx"),
    ("NLLLoss", {"reduction": "sum"}, "idx"), ("MSELoss", {}, "float"),
    ("L1Loss", {"reduction": "none"}, "float"), ("SmoothL1Loss", {"beta": 0.5}, "float"),
    ("HuberLoss", {"delta": 2.0}, "float"), ("BCELoss", {}, "prob"),
    ("BCEWithLogitsLoss", {"pos_weight": [1.0, 2.0, 3.0, 4.0]}, "float01"),
    ("KLDivLoss", {"reduction": "batchmean"}, "prob"),
]


@pytest.mark.parametrize("name,kw,kind", LOSSES)
def test_loss_layers(name, kw, kind):
    ekw = {k: ember.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, list) else v for k, v in kw.items()}
    e, t = getattr(ember.nn, name)(**ekw), getattr(torch.nn, name)(**tkw)
    assert_same_structure(e, t)
    x = R.uniform(0.05, 0.95, (3, 4)).astype(np.float32) if kind == "prob" else arr(3, 4)
    if kind == "idx":
        tgt = idx(3)
    elif kind in ("prob", "float01"):
        tgt = R.random((3, 4)).astype(np.float32)
    else:
        tgt = arr(3, 4)

    def fwd(layer, a):
        lib = ember if isinstance(layer, ember.nn.Module) else torch
        return layer(a, t_(lib, tgt))
    for train in (True, False):
        compare_layer(e, t, x, train=train, forward=fwd)


def test_legacy_size_average_reduce():
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        e = ember.nn.MSELoss(size_average=False)
    assert e.reduction == "sum"
    with pytest.warns(UserWarning):
        assert ember.nn.L1Loss(reduce=False).reduction == "none"


def test_more_fd_checks():
    Fe = ember.nn.functional
    fd_check(lambda a, b: Fe.kl_div(a, b, reduction="batchmean"), np.log(probs(3, 4)),
             probs(3, 4))
    fd_check(lambda a, b: Fe.kl_div(a, b, reduction="sum", log_target=True),
             np.log(probs(3, 4)), np.log(probs(3, 4)))
    t = ember.tensor([1, -1, 1])
    fd_check(lambda a, b: Fe.cosine_embedding_loss(a, b, t, margin=-0.5), arr(3, 4), arr(3, 4))
    fd_check(lambda a, b: Fe.smooth_l1_loss(a, b, reduction="none"), arr(2, 3), arr(2, 3) + 0.1)
    p = R.uniform(0.1, 0.9, (2, 3))
    fd_check(lambda a, b: Fe.binary_cross_entropy(a, b), p, R.random((2, 3)))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_cross_entropy_random_shapes(shape, data):
    dim_count = len(shape)
    rng = np.random.default_rng(len(shape) * 7 + sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    n_classes = shape[1] if dim_count > 1 else shape[0]
    tshape = (shape[0], *shape[2:]) if dim_count > 1 else ()
    t = rng.integers(0, n_classes, size=tshape).astype(np.int64)
    reduction = data.draw(st.sampled_from(RED))
    smoothing = data.draw(st.sampled_from([0.0, 0.25]))
    check(lambda m, a, b: F(m).cross_entropy(a, b, reduction=reduction,
                                             label_smoothing=smoothing), x, t)
    dim = data.draw(st.integers(-dim_count, dim_count - 1))
    check(lambda m, a: F(m).log_softmax(a, dim), x)
    check(lambda m, a: F(m).softmax(a * 30, dim), x)
