"""Pooling against torch: values, indices, grads, errors, double backward."""

import numpy as np
import pytest
from oracle import arr, check, check_error, fd_check

import ember


def F(m):
    return m.nn.functional


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 8, 8), {"kernel_size": 2}),
    ((2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((1, 2, 9, 9), {"kernel_size": (3, 2), "stride": (1, 2), "dilation": 2}),
    ((3, 6, 5), {"kernel_size": 2, "stride": 1}),
    ((2, 2, 5, 5), {"kernel_size": 2, "ceil_mode": True}),
])
def test_max_pool2d(shape, kw):
    out = check(lambda m, x: F(m).max_pool2d(x, return_indices=True, **kw), arr(*shape))
    assert out[0][1].dtype == ember.int64


def test_max_pool_ties_and_nan():
    x = np.zeros((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 1, 1] = np.nan
    check(lambda m, x: F(m).max_pool2d(x, 2, return_indices=True), x, grad=False)
    x = np.ones((1, 1, 4, 4), dtype=np.float32)
    check(lambda m, x: F(m).max_pool2d(x, 3, 1, return_indices=True), x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
                                {"kernel_size": (2, 3), "stride": 1, "padding": 1,
                                 "dilation": 2}], ids=str)
@pytest.mark.parametrize("nan", [0.05, 0.0], ids=["nan", "no-nan"])
def test_max_pool_special_values_like_torch(kw, dtype, nan):
    """Windows of NaNs (the last one wins), of -inf only (the first tap inside the input, not
    the padding), of +0 and -0 ties (the first one's sign): indices and bits as torch. Without
    NaNs too: the -0.0 ties alone must still select the winning tap's bits."""
    import torch

    rng = np.random.default_rng(0)
    x = rng.choice(np.array([0.0, -0.0, 1.0, -np.inf, np.nan, 2.0]), (2, 3, 9, 10),
                   p=[0.3, 0.3, 0.1, 0.2, nan, 0.1 - nan]).astype(dtype)
    out = {}
    for L in (torch, ember):
        v, i = L.nn.functional.max_pool2d(L.tensor(x), return_indices=True, **kw)
        out[L.__name__] = v.numpy(), i.numpy()
    (ev, ei), (tv, ti) = out["ember"], out["torch"]
    np.testing.assert_array_equal(ei, ti)
    np.testing.assert_array_equal(ev, tv)
    np.testing.assert_array_equal(np.signbit(ev), np.signbit(tv))


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1,
                                                     "return_indices": True},
                                {"kernel_size": 2, "ceil_mode": True, "dilation": 2}])
def test_max_pool1d(kw):
    check(lambda m, x: F(m).max_pool1d(x, **kw), arr(2, 3, 9))


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 8, 8), {"kernel_size": 2}),
    ((2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ((2, 3, 7, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((2, 3, 6, 8), {"kernel_size": (3, 2), "stride": 2, "padding": (1, 1), "ceil_mode": True,
                    "count_include_pad": False}),
    ((2, 3, 7, 9), {"kernel_size": 3, "divisor_override": 2}),
    ((3, 5, 5), {"kernel_size": 2, "stride": 1}),
])
def test_avg_pool2d(shape, kw):
    check(lambda m, x: F(m).avg_pool2d(x, **kw), arr(*shape))


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1,
                                                     "count_include_pad": False}])
def test_avg_pool1d(kw):
    check(lambda m, x: F(m).avg_pool1d(x, **kw), arr(2, 3, 9))


@pytest.mark.parametrize("shape,osize", [((2, 3, 8, 8), 3), ((2, 3, 7, 9), (4, 5)),
                                         ((2, 3, 7, 9), (None, 2)), ((3, 6, 6), 1),
                                         ((2, 3, 5, 5), (7, 8)), ((2, 3, 6, 6), (3, 2))])
def test_adaptive_avg_pool2d(shape, osize):
    check(lambda m, x: F(m).adaptive_avg_pool2d(x, osize), arr(*shape))


@pytest.mark.parametrize("shape,osize", [((2, 3, 8, 8), 3), ((2, 3, 7, 9), (4, 5)),
                                         ((3, 6, 6), 1), ((2, 3, 5, 5), (7, 8))])
def test_adaptive_max_pool2d(shape, osize):
    check(lambda m, x: F(m).adaptive_max_pool2d(x, osize, return_indices=True), arr(*shape))


def test_adaptive_1d():
    check(lambda m, x: F(m).adaptive_avg_pool1d(x, 4), arr(2, 3, 10))
    check(lambda m, x: F(m).adaptive_max_pool1d(x, 4, return_indices=True), arr(2, 3, 10))


def test_grad_fn_names():
    x = ember.tensor(arr(1, 2, 6, 6), requires_grad=True)
    f = ember.nn.functional
    names = [type(o.grad_fn).__name__ for o in (
        f.max_pool2d(x, 2), f.avg_pool2d(x, 2), f.adaptive_avg_pool2d(x, 3),
        f.adaptive_max_pool2d(x, 3), f.adaptive_avg_pool2d(x, 1))]
    assert names == ["MaxPool2DWithIndicesBackward0", "AvgPool2DBackward0",
                     "AdaptiveAvgPool2DBackward0", "AdaptiveMaxPool2DBackward0", "MeanBackward1"]


POOLS = [
    lambda f, x: f.max_pool2d(x, 3, 2, 1),
    lambda f, x: f.max_pool2d(x, 2),
    lambda f, x: f.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda f, x: f.adaptive_avg_pool2d(x, (2, 3)),
    lambda f, x: f.adaptive_max_pool2d(x, (3, 2)),
]


@pytest.mark.parametrize("fn", POOLS)
def test_pool_fd_and_double_backward(fn):
    x = np.random.default_rng(3).permutation(50).reshape(1, 2, 5, 5) / 10.0  # no ties
    fd_check(lambda x: fn(ember.nn.functional, x), x)
    # Pools are piecewise linear: the grad is a function of the upstream gradient only.
    u = arr(*fn(ember.nn.functional, ember.tensor(x)).shape, dtype="float64")

    def double(m, x, u):
        x = x.detach().requires_grad_()
        return m.autograd.grad(fn(m.nn.functional, x), x, u, create_graph=True)[0]

    check(double, x, u, grad_inputs=(1,))


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, x: F(m).max_pool2d(x, 3, padding=2), (2, 3, 4, 4),
     "pad should be at most half of effective kernel size"),
    (lambda m, x: F(m).max_pool2d(x, 5), (2, 3, 4, 4), "Output size is too small"),
    (lambda m, x: F(m).max_pool2d(x, 2), (4, 4),
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda m, x: F(m).avg_pool2d(x, 3, padding=2), (2, 3, 4, 4),
     "pad should be at most half of effective kernel size"),
    (lambda m, x: F(m).max_pool1d(x, 2, padding=2), (3, 4, 4),
     "padding should be at most half of kernel size"),
    (lambda m, x: F(m).max_pool1d(x, 2), (2, 3, 4, 4), "max_pool1d: Expected 2D or 3D"),
    (lambda m, x: F(m).avg_pool1d(x, 2), (2, 3, 4, 4), "Expected 2 to 3 dimensions"),
    (lambda m, x: F(m).max_pool2d(x, 2, stride=0), (2, 3, 4, 4), "stride should not be zero"),
    (lambda m, x: F(m).adaptive_avg_pool2d(x, 2), (4, 4), "Expected 3D or 4D tensor"),
    (lambda m, x: F(m).adaptive_avg_pool2d(x, (2, 3, 4)), (2, 3, 4, 4),
     "output_size must be 2"),
    (lambda m, x: F(m).avg_pool2d(x, 2, divisor_override=0), (2, 3, 4, 4),
     "divisor must be not zero"),
])
def test_pool_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


# --- layers ----------------------------------------------------------------------------------

POOL_LAYERS = [
    ("MaxPool2d", (2,), {}, (2, 3, 8, 8)),
    ("MaxPool2d", ((2, 3),), {"padding": 1, "ceil_mode": True, "return_indices": True},
     (2, 3, 7, 8)),
    ("MaxPool1d", (3, 2), {"dilation": 2}, (2, 3, 11)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, (2, 3, 7, 8)),
    ("AvgPool2d", (3,), {"divisor_override": 2}, (2, 3, 7, 8)),
    ("AvgPool1d", (3,), {"ceil_mode": True}, (2, 3, 10)),
    ("AdaptiveAvgPool2d", ((5, 7),), {}, (2, 3, 8, 9)),
    ("AdaptiveAvgPool2d", ((None, 2),), {}, (2, 3, 8, 9)),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 8)),
    ("AdaptiveMaxPool2d", (3,), {"return_indices": True}, (2, 3, 8, 9)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 3, 8)),
]


@pytest.mark.parametrize("name,args,kw,shape", POOL_LAYERS)
def test_pool_layers(name, args, kw, shape):
    from layer_oracle import check_layer

    check_layer(name, args, kw, shape)


@pytest.mark.parametrize("fn", [
    lambda m, x: F(m).max_pool2d(x, 2, return_indices=True),
    lambda m, x: F(m).avg_pool2d(x, 2),
    lambda m, x: F(m).adaptive_max_pool2d(x, 2, return_indices=True),
    lambda m, x: F(m).adaptive_avg_pool2d(x, 2),
])
def test_pool_empty_batch_and_float64(fn):
    check(fn, arr(0, 3, 4, 4))
    check(fn, arr(2, 3, 5, 5, dtype="float64"))


def test_avg_pool2d_2d_input_error():
    check_error(lambda m, x: F(m).avg_pool2d(x, 2), arr(4, 4), match="Dimension out of range")


def test_max_unpool():
    import torch
    from layer_oracle import assert_same_structure, compare_layer

    def unpool2d(m, x):
        out, idx = F(m).max_pool2d(x, 2, return_indices=True)
        return F(m).max_unpool2d(out, idx, 2, output_size=(5, 5))

    check(unpool2d, arr(2, 3, 5, 5))

    def unpool1d(m, x):
        out, idx = F(m).max_pool1d(x, 3, 2, 1, return_indices=True)
        return F(m).max_unpool1d(out, idx, 3, 2, 1)

    check(unpool1d, arr(2, 3, 7))
    e, t = ember.nn.MaxUnpool2d(2), torch.nn.MaxUnpool2d(2)
    assert_same_structure(e, t)
    assert repr(ember.nn.MaxUnpool1d(3, 2, 1)) == repr(torch.nn.MaxUnpool1d(3, 2, 1))
    x = arr(2, 3, 4, 4)
    idx = np.array(torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)[1])
    compare_layer(e, t, x[:, :, ::2, ::2].copy(), idx,
                  forward=lambda m, v, i: m(v, (ember if m is e else torch).tensor(i)))
    o, i = arr(2, 3, 2, 2), idx
    check_error(lambda m, o: F(m).max_unpool2d(o, m.tensor(i), 2, output_size=(9, 9)), o,
                match="invalid output_size")
    check_error(lambda m, o: F(m).max_unpool2d(o, m.tensor(i * 10), 2), o,
                match="Found an invalid max index")
    check_error(lambda m, o: F(m).max_unpool2d(o, m.tensor(i[:, :, :1]), 2), o,
                match="Expected shape of indices to be same as that of the input tensor")
