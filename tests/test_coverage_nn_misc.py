"""nn.MultiLabelMarginLoss, CrossMapLRN2d, conv_tbc, AdaptiveLogSoftmaxWithLoss,
LinearCrossEntropyLoss / Options and F.linear_cross_entropy against torch 2.13: values, gradients
for a random upstream gradient, grad_fn names, reprs, module paths, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from oracle import (
    arr,
    assert_same,
    check,
    check_double_backward,
    check_error,
    gradgrad_check,
    same,
)

import ember

Y = np.array([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0], [4, 4, 1, -1, 3]])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss(reduction):
    check(lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor(Y),
                                                               reduction=reduction), arr(4, 5))
    check(lambda L, x: L.nn.MultiLabelMarginLoss(reduction=reduction)(x, L.tensor(Y[3])),
          arr(5))
    check(lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor(Y),
                                                               reduction=reduction),
          arr(4, 5, dtype="float64"))


def test_multilabel_margin_loss_edges():
    check(lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.zeros(0, 5).long(),
                                                               reduction="none"), arr(0, 5))
    check(lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor(0)), arr())
    check(lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor(Y), reduction="sum"),
          arr(5, 4).T)  # non-contiguous input


def test_multilabel_margin_loss_module_and_names():
    same(lambda L: L.nn.MultiLabelMarginLoss(reduction="sum"))
    x = arr(4, 5)
    for lib in (ember, torch):
        out = lib.nn.functional.multilabel_margin_loss(lib.tensor(x, requires_grad=True),
                                                       lib.tensor(Y))
        assert type(out.grad_fn).__name__ == "MultilabelMarginLossBackward0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: L.nn.MultiLabelMarginLoss(size_average=False).reduction)


@pytest.mark.parametrize("case", [
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([1, 2, 5, 0, 0])),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([1, 2, -2, 0, 0])),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([1, 2, 0])),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([1, 2, 0, 0, 0.0])),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([1, 2, 0, 0, 0]).int()),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x.reshape(1, 1, 5),
                                                        L.zeros(1, 1, 5).long()),
    lambda L, x: L.nn.functional.multilabel_margin_loss(x, L.tensor([0, 0, 0, 0, 0]),
                                                        reduction="bad"),
])
def test_multilabel_margin_loss_errors(case):
    check_error(case, arr(5))


@pytest.mark.parametrize("size", [2, 3, 4, 5, 7])
def test_cross_map_lrn2d(size):
    # torch's legacy arithmetic, kept: channel 0 stays in every window sum and backward is the
    # legacy formula (not forward's derivative), so only a comparison with torch can check it
    check(lambda L, x: L.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2)(x), arr(2, 6, 3, 4))
    check(lambda L, x: L.nn.CrossMapLRN2d(size)(x), arr(1, 3, 2, 2, dtype="float64"))


def test_cross_map_lrn2d_module():
    same(lambda L: L.nn.CrossMapLRN2d(3))
    same(lambda L: L.nn.CrossMapLRN2d(5, alpha=0.1, beta=0.5, k=2.0))
    check(lambda L, x: L.nn.CrossMapLRN2d(1)(x), arr(2, 3, 2, 2), grad=False)
    check_error(lambda L, x: L.nn.CrossMapLRN2d(3)(x), arr(2, 3, 4))
    x = ember.randn(1, 3, 2, 2, requires_grad=True)
    node = ember.nn.CrossMapLRN2d(3)(x).grad_fn
    assert type(node).__name__ == "CrossMapLRN2dBackward"
    assert ember.nn.modules._functions.CrossMapLRN2d.__module__ == "ember.nn.modules._functions"


@pytest.mark.parametrize("pad", [0, 1, 3])
def test_conv_tbc(pad):
    check(lambda L, x, w, b: L.conv_tbc(x, w, b, pad), arr(6, 2, 3), arr(3, 3, 4), arr(4))
    check(lambda L, x, w, b: L.nn.functional.conv_tbc(x, w, b, pad), arr(5, 3, 2), arr(1, 2, 4),
          arr(4))
    check(lambda L, x, w, b: L.conv_tbc(x, w, b, pad=pad), arr(4, 1, 2, dtype="float64"),
          arr(2, 2, 3, dtype="float64"), arr(3, dtype="float64"))


def test_conv_tbc_names_and_double_backward():
    x = arr(5, 2, 3)
    for lib in (ember, torch):
        out = lib.conv_tbc(lib.tensor(x, requires_grad=True), lib.ones(3, 3, 4), lib.ones(4))
        assert type(out.grad_fn).__name__ == "ConvTbcBackward0"
    assert ember.nn.functional.conv_tbc is ember.conv_tbc
    gradgrad_check(lambda x, w, b: ember.conv_tbc(x, w, b, 1), arr(4, 2, 3), arr(2, 3, 2),
                   arr(2))
    check(lambda L, x, w, b: L.conv_tbc(x, w, b), arr(2, 2, 3), arr(3, 3, 4), arr(4))  # empty
    check(lambda L, x, w, b: L.conv_tbc(x.bfloat16(), w.bfloat16(), b.bfloat16(), 1).float(),
          arr(5, 2, 3), arr(3, 3, 4), arr(4), grad=False, atol=1e-2, rtol=1e-2)
    for pad in (-1, -2):  # a negative pad crops the input
        check(lambda L, x, w, b, p=pad: L.conv_tbc(x, w, b, p), arr(7, 2, 3), arr(2, 3, 4),
              arr(4))


@pytest.mark.parametrize("case", [
    lambda L: L.conv_tbc(L.ones(2, 3), L.ones(3, 3, 4), L.ones(4)),
    lambda L: L.conv_tbc(L.ones(5, 2, 3), L.ones(3, 4), L.ones(4)),
    lambda L: L.conv_tbc(L.ones(5, 2, 3), L.ones(3, 3, 4), L.ones(4, 1)),
    lambda L: L.conv_tbc(L.ones(5, 2, 3), L.ones(3, 2, 4), L.ones(4)),
    lambda L: L.conv_tbc(L.ones(5, 2, 3), L.ones(3, 3, 4), L.ones(5)),
    lambda L: L.conv_tbc(L.ones(2, 2, 3), L.ones(3, 3, 4), L.ones(4), pad=-1),
    lambda L: L.conv_tbc(L.ones(5, 2, 3).double(), L.ones(3, 3, 4), L.ones(4)),
    lambda L: L.conv_tbc(L.ones(5, 2, 3), L.ones(3, 3, 4), None),
])
def test_conv_tbc_errors(case):
    same(case)


def test_conv_tbc_autocast():
    for lib in (ember, torch):
        with lib.autocast("cpu"):
            out = lib.conv_tbc(lib.ones(5, 2, 3), lib.ones(3, 3, 4), lib.ones(4))
            loss = lib.nn.functional.multilabel_margin_loss(lib.ones(2, 3).bfloat16(),
                                                           lib.zeros(2, 3).long())
        assert str(out.dtype).endswith("bfloat16") and str(loss.dtype).endswith("float32")


def _asm(lib, **kw):
    lib.manual_seed(0)
    return lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], **kw)


def test_adaptive_log_softmax_init_and_repr():
    same(_asm)
    same(lambda L: _asm(L, head_bias=True, div_value=2.0))
    for (n, pe), (_, pt) in zip(_asm(ember).named_parameters(), _asm(torch).named_parameters()):
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), err_msg=n)


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_forward(head_bias):
    target = np.array([0, 5, 19, 12, 3, 11, 15])

    def fn(lib, x):
        out = _asm(lib, head_bias=head_bias)(x, lib.tensor(target))
        assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
        return tuple(out)

    check(fn, arr(7, 8))
    check(lambda L, x: tuple(_asm(L)(x, L.tensor(13))), arr(8))
    check(lambda L, x: _asm(L, head_bias=head_bias).log_prob(x), arr(5, 8))
    x = arr(9, 8, low=-4, high=4)
    assert np.array_equal(_asm(ember).predict(ember.tensor(x)).numpy(),
                          _asm(torch).predict(torch.tensor(x)).numpy())


def test_adaptive_log_softmax_predict_paths():
    # all in the shortlist, none in it, and mixed: the three branches of predict
    for bias in (-50.0, 50.0, 0.0):
        outs = []
        for lib in (ember, torch):
            m = _asm(lib, head_bias=True)
            with lib.no_grad():
                m.head.bias[4:] = bias
            outs.append(m.predict(lib.tensor(arr(6, 8, rng=np.random.default_rng(3)))).numpy())
        assert np.array_equal(*outs)


@pytest.mark.parametrize("case", [
    lambda L: _asm(L)(L.zeros(3, 8), L.tensor([0, 25, 1])),
    lambda L: _asm(L)(L.zeros(3, 8), L.tensor([0, 2])),
    lambda L: _asm(L)(L.zeros(2, 3, 8), L.zeros(2, 3).long()),
    lambda L: _asm(L)(L.zeros(3, 8), L.tensor(2)),
    lambda L: _asm(L)(L.zeros(8), L.tensor([2])),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 4]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, []),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4]),
    lambda L: L.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 20]),
])
def test_adaptive_log_softmax_errors(case):
    same(case)


T1 = np.array([0, 4, 2, 1])
T2 = np.array([[0, 1], [4, 4], [2, 0], [1, 3]])


def test_linear_cross_entropy():
    F = "nn.functional.linear_cross_entropy"

    def f(lib):
        return lib.nn.functional.linear_cross_entropy

    check(lambda L, x, w: f(L)(x, w, L.tensor(T1)), arr(4, 3), arr(5, 3))
    check(lambda L, x, w, b: f(L)(x, w, L.tensor(T1), linear_bias=b, reduction="none",
                                  ignore_index=2, label_smoothing=0.2), arr(4, 3), arr(5, 3),
          arr(5))
    check(lambda L, x, w, b, cw: f(L)(x, w, L.tensor(T2), linear_bias=b, weight=cw,
                                      reduction="sum"),
          arr(4, 3), arr(5, 2, 3), arr(5, 2), arr(5, low=0.5, high=1.5), grad_inputs=(0, 1, 2))
    check(lambda L, x, w, p: f(L)(x, w, p.softmax(1)), arr(4, 3), arr(5, 3), arr(4, 5))
    check(lambda L, x, w: f(L)(x, w, L.tensor(3)), arr(3), arr(5, 3))
    assert F


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(4, 3), L.ones(5, 3), L.ones(4, 5),
                                                   ignore_index=1),
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(4, 3), L.ones(5, 2),
                                                   L.zeros(4).long()),
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(2, 4, 3), L.ones(5, 3),
                                                   L.zeros(4).long()),
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(4, 3), L.ones(5), L.zeros(4).long()),
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(4, 3), L.ones(5, 3),
                                                   L.zeros(4).long(), linear_bias=L.ones(4)),
    lambda L: L.nn.functional.linear_cross_entropy(L.ones(3), L.ones(5, 2, 3),
                                                   L.zeros(()).long()),
    lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(64, 3), L.ones(50, 3), L.zeros(64).long(),
        options=L.nn.LinearCrossEntropyOptions(batch_chunk_size=4,
                                               chunking_method="aspect_ratio")),
    lambda L: L.nn.functional.linear_cross_entropy(
        L.ones(64, 3), L.ones(50, 3), L.zeros(64).long(),
        options=L.nn.LinearCrossEntropyOptions(batch_chunk_size=7,
                                               chunking_method="aspect_ratio:2")),
    lambda L: L.nn.LinearCrossEntropyLoss(3, 5, weight=L.ones(4)),
    lambda L: L.nn.LinearCrossEntropyLoss(3, 5, label_smoothing=2),
])
def test_linear_cross_entropy_errors(case):
    same(case)


def test_linear_cross_entropy_options_path():
    """With options torch takes its chunked path (another node, fewer saved tensors): values
    and gradients agree."""
    rng = np.random.default_rng(0)
    x, w, b = arr(9, 4, rng=rng), arr(6, 4, rng=rng), arr(6, rng=rng)
    t = np.array([0, 5, 2, 1, 3, 3, 4, 0, 1])
    for kw in ({}, {"batch_chunk_size": 4}, {"chunking_method": "aspect_ratio:2"},
               {"allow_retain_graph": True, "acc_policy": "accurate"}):
        for reduction in ("mean", "sum", "none"):
            res = []
            u = rng.standard_normal(9).astype("float32")
            for lib in (ember, torch):
                xs, ws, bs = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
                out = lib.nn.functional.linear_cross_entropy(
                    xs, ws, lib.tensor(t), linear_bias=bs, reduction=reduction,
                    options=lib.nn.LinearCrossEntropyOptions(**kw))
                out.backward(lib.tensor(u) if reduction == "none" else None)
                res.append((out, xs.grad, ws.grad, bs.grad))
            for e, tt in zip(*res):
                assert_same(e, tt, atol=1e-5, rtol=1e-4)


def test_linear_cross_entropy_options_warning():
    msgs = []
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.nn.functional.linear_cross_entropy(
                lib.ones(4, 3), lib.ones(5, 3), lib.zeros(4).long(), label_smoothing=0.1,
                options=lib.nn.LinearCrossEntropyOptions())
        msgs.append([str(w.message).replace("torch.", "ember.") for w in rec])
        assert rec[0].filename == __file__
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("kw", [
    {}, {"acc_policy": "x"}, {"chunking_method": "aspect_ratio:0"}, {"chunking_method": "foo"},
    {"chunking_method": "aspect_ratio:3"}, {"batch_chunk_size": 0}, {"acc_dtype": "float32"},
    {"acc_dtype": "int32"}, {"acc_dtype": "bfloat16", "chunking_method": None,
                             "batch_chunk_size": 3, "acc_policy": "compact",
                             "allow_retain_graph": True},
])
def test_linear_cross_entropy_options(kw):
    def make(lib):
        args = {k: getattr(lib, v) if k == "acc_dtype" and v != "float32" else v
                for k, v in kw.items()}
        return lib.nn.LinearCrossEntropyOptions(**args)

    same(make)


def _lce(lib, **kw):
    lib.manual_seed(3)
    return lib.nn.LinearCrossEntropyLoss(3, 5, **kw)


def test_linear_cross_entropy_loss_module():
    kw = {"out_features": (2,), "bias": True, "reduction": "sum", "ignore_index": 3,
          "label_smoothing": 0.1}
    same(lambda L: _lce(L, **kw))
    same(lambda L: _lce(L, options=L.nn.LinearCrossEntropyOptions(batch_chunk_size=2)))
    check(lambda L, x: _lce(L, **kw)(x, L.tensor(T2)), arr(4, 3))
    check(lambda L, x: _lce(L, weight=L.tensor([1.0, 2.0, 0.5, 1.0, 1.0]))(x, L.tensor(T1)),
          arr(4, 3))
    for a, b in zip(_lce(ember, bias=True).state_dict().items(),
                    _lce(torch, bias=True).state_dict().items()):
        assert a[0] == b[0]
        np.testing.assert_allclose(a[1].numpy(), b[1].numpy())


def test_module_paths():
    pairs = [(ember.nn.MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss()),
             (ember.nn.CrossMapLRN2d(3), torch.nn.CrossMapLRN2d(3)),
             (_asm(ember), _asm(torch)), (_lce(ember), _lce(torch)),
             (ember.nn.LinearCrossEntropyOptions(), torch.nn.LinearCrossEntropyOptions())]
    for e, t in pairs:
        assert type(e).__module__ == type(t).__module__.replace("torch", "ember", 1)
        assert type(e).__mro__[1].__name__ == type(t).__mro__[1].__name__
    out = _asm(ember)(ember.zeros(2, 8), ember.tensor([0, 1]))
    assert type(out).__module__ == "ember.nn.modules.adaptive"
    assert ember.nn.functional.multilabel_margin_loss.__module__ == "ember.nn.functional"
    assert ember.nn.functional.linear_cross_entropy.__module__ == "ember.nn.functional"


OFFS = np.array([2, 4, 6], dtype=np.int32)


def _gmm(lib):
    return lib.nn.functional.grouped_mm


def test_grouped_mm_layouts():
    check(lambda L, a, b: _gmm(L)(a, b.transpose(-2, -1), offs=L.tensor(OFFS)), arr(6, 8),
          arr(3, 4, 8))  # 2d x 3d, b column-major as in MoE forward
    check(lambda L, a, b: _gmm(L)(a, b, offs=L.tensor(OFFS)), arr(6, 8), arr(3, 8, 4))
    check(lambda L, a, b: _gmm(L)(a, b, offs=L.tensor(np.array([1, 1, 6], np.int32))),
          arr(6, 8), arr(3, 8, 4))  # an empty group
    check(lambda L, a, b: _gmm(L)(a, b.transpose(-2, -1)), arr(3, 6, 8), arr(3, 4, 8))
    check(lambda L, a, b: _gmm(L)(a, b.t(), offs=L.tensor(np.array([4, 8, 12], np.int32))),
          arr(3, 6, 8), arr(12, 8))  # 3d x 2d: b's columns in groups
    # 2d x 2d (the shared dim in groups): torch's own backward trips over its stride rule here
    check(lambda L, a, b: _gmm(L)(a, b.t(), offs=L.tensor(np.array([2, 5, 8], np.int32))),
          arr(4, 8), arr(6, 8), grad=False)
    for dt in ("bfloat16", "float16"):
        check(lambda L, a, b, d=dt: _gmm(L)(a.to(getattr(L, d)), b.to(getattr(L, d)).mT,
                                            offs=L.tensor(OFFS)).float(),
              arr(6, 8), arr(3, 4, 8), atol=1e-2, rtol=1e-2, grad=False)


def test_grouped_mm_2d_2d_gradients():
    """The 2d x 2d gradients against the per-group products torch computes them from."""
    a, b, u = arr(4, 8), arr(6, 8), arr(3, 4, 6)
    ends = [2, 5, 8]
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    _gmm(ember)(ea, eb.t(), offs=ember.tensor(np.array(ends, np.int32))).backward(
        ember.tensor(u))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.stack([ta[:, s:e] @ tb.t()[s:e] for s, e in zip([0, *ends[:-1]], ends)]).backward(
        torch.tensor(u))
    assert_same(ea.grad, ta.grad)
    assert_same(eb.grad, tb.grad)



def test_grouped_mm_double_backward():
    """Second derivatives (ember's backward is grouped_mm again) against torch's per-group
    products."""
    def fn(lib, a, b):
        if lib is ember:
            return _gmm(ember)(a * a, b, offs=ember.tensor(OFFS))
        return torch.cat([(a * a)[s:e] @ b[g] for g, (s, e) in enumerate([(0, 2), (2, 4),
                                                                          (4, 6)])])

    check_double_backward(fn, arr(6, 4), arr(3, 4, 4))


def test_grouped_mm_grad_fn():
    for lib in (ember, torch):
        out = _gmm(lib)(lib.ones(6, 8, requires_grad=True), lib.ones(3, 8, 4),
                        offs=lib.tensor(OFFS))
        assert type(out.grad_fn).__name__ == "GroupedMmBackward0"


@pytest.mark.parametrize("case", [
    lambda L: _gmm(L)(L.ones(6, 8).double(), L.ones(3, 8, 4).double(), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(6, 8).int(), L.ones(3, 8, 4), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4).bfloat16(), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(48), L.ones(3, 8, 4), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(1, 3, 8, 4), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(6, 8, 2), L.ones(3, 8, 4)),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4)),
    lambda L: _gmm(L)(L.ones(3, 6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS).long()),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor([OFFS])),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS[:2])),
    lambda L: _gmm(L)(L.ones(3, 6, 8), L.ones(4, 8, 12)),
    lambda L: _gmm(L)(L.ones(6, 2), L.ones(3, 2, 4), offs=L.tensor(OFFS)),
    lambda L: _gmm(L)(L.ones(4, 8), L.ones(8, 6), offs=L.tensor(np.array([2, 5, 8], np.int32))),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS), bias=L.ones(3, 4)),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS), out_dtype=L.bfloat16),
    lambda L: _gmm(L)(L.ones(6, 8), L.ones(3, 8, 4), offs=L.tensor(OFFS), out_dtype=L.float32),
])
def test_grouped_mm_errors(case):
    same(case)
