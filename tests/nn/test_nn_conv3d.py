"""3-D convolution, pooling and normalization against torch: values, grads, grad_fn names,
reprs, state_dicts, errors, finite differences and double backward."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from layer_oracle import assert_same_structure, check_layer, compare_layer
from oracle import arr, check, check_error, fd_check, grad_fn_names, gradgrad_check

import ember


def F(m):
    return m.nn.functional


def no_ties(*shape) -> np.ndarray:
    """Distinct values, so that max pooling's argmax (and its gradient) is well defined."""
    return np.random.default_rng(3).permutation(int(np.prod(shape))).reshape(shape) / 10.0


# --- F.conv3d / F.conv_transpose3d -----------------------------------------------------------

CONV3D = [
    # (x shape, w shape, kwargs)
    ((2, 3, 5, 6, 4), (4, 3, 3, 3, 2), {}),
    ((2, 4, 6, 5, 7), (6, 2, 2, 3, 2), {"stride": (1, 2, 3), "padding": (1, 0, 2),
                                        "dilation": (2, 1, 1), "groups": 2}),
    ((1, 4, 5, 5, 5), (4, 1, 3, 3, 3), {"groups": 4, "stride": 2, "padding": 1}),
    ((2, 3, 4, 5, 6), (5, 3, 2, 3, 4), {"padding": "same"}),
    ((2, 3, 6, 6, 6), (5, 3, 3, 3, 3), {"padding": "same", "dilation": 2}),
    ((2, 3, 6, 5, 4), (2, 3, 2, 2, 2), {"padding": "valid", "stride": 2}),
    ((3, 4, 5, 6), (2, 3, 3, 3, 3), {"padding": 1}),  # unbatched
    ((0, 3, 4, 4, 4), (2, 3, 3, 3, 3), {}),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("xs,ws,kw", CONV3D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv3d(xs, ws, kw, bias):
    args = [arr(*xs), arr(*ws)] + ([arr(ws[0])] if bias else [])
    check(lambda m, *a: F(m).conv3d(*a, **kw), *args, atol=1e-4)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 4, 3, 4, 3), (4, 3, 3, 3, 3), {}),
    ((2, 4, 3, 4, 3), (4, 3, 3, 2, 3), {"stride": 2, "padding": 1, "output_padding": (1, 0, 1),
                                        "groups": 2}),
    ((1, 2, 3, 3, 2), (2, 2, 2, 3, 2), {"stride": (2, 1, 3), "dilation": 2,
                                        "output_padding": (1, 0, 2)}),
    ((4, 3, 3, 3), (4, 2, 2, 2, 2), {"stride": 2, "padding": (1, 0, 1)}),  # unbatched
])
def test_conv_transpose3d(xs, ws, kw):
    check(lambda m, x, w, b: F(m).conv_transpose3d(x, w, b, **kw), arr(*xs), arr(*ws),
          arr(ws[1] * kw.get("groups", 1)), atol=1e-4)


def test_conv3d_float64_and_noncontiguous():
    check(lambda m, x, w: F(m).conv3d(x, w, padding=1), arr(1, 2, 3, 4, 3, dtype="float64"),
          arr(3, 2, 3, 3, 3, dtype="float64"))
    x = arr(2, 3, 5, 6, 4)[:, :, ::-1].transpose(0, 1, 4, 3, 2)
    check(lambda m, x, w: F(m).conv3d(x, w, stride=2), x, arr(2, 3, 2, 2, 2), atol=1e-4)


@pytest.mark.parametrize("fn", [
    lambda m, x: F(m).conv3d(x, m.ones(2, 2, 2, 2, 2, requires_grad=True)),
    lambda m, x: F(m).conv_transpose3d(x, m.ones(2, 3, 2, 2, 2, requires_grad=True)),
])
def test_conv3d_grad_fn_names(fn):
    x = arr(1, 2, 3, 4, 3)
    assert grad_fn_names(fn, x, ember) == grad_fn_names(fn, x, torch)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": (1, 0, 1), "dilation": (1, 2, 1)},
                                {"groups": 2, "padding": 1}])
def test_conv3d_fd_and_gradgrad(kw):
    g = kw.get("groups", 1)
    x, w, b = arr(1, 2, 3, 4, 3), arr(2, 2 // g, 2, 2, 2), arr(2)
    fn = lambda x, w, b: ember.nn.functional.conv3d(x, w, b, **kw)  # noqa: E731
    fd_check(fn, x, w, b)
    gradgrad_check(fn, x, w, b)


def test_conv_transpose3d_fd_and_gradgrad():
    fn = lambda x, w, b: ember.nn.functional.conv_transpose3d(  # noqa: E731
        x, w, b, stride=2, padding=1, output_padding=(1, 0, 1))
    args = arr(1, 2, 2, 3, 2), arr(2, 2, 3, 2, 2), arr(2)
    fd_check(fn, *args)
    gradgrad_check(fn, *args)


@pytest.mark.parametrize("fn,shapes,match", [
    (lambda m, x, w: F(m).conv3d(x, w), [(2, 5, 4, 4, 4), (4, 3, 3, 3, 3)],
     "to have 3 channels, but got 5 channels instead"),
    (lambda m, x, w: F(m).conv3d(x, w), [(2, 3, 2, 4, 4), (4, 3, 3, 3, 3)],
     "Calculated padded input size per channel: (2 x 4 x 4)"),
    (lambda m, x, w: F(m).conv3d(x, w), [(4, 4, 4), (4, 3, 3, 3, 3)],
     "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [4, 4, 4]"),
    (lambda m, x, w: F(m).conv3d(x, w, stride=2, padding="same"),
     [(2, 3, 4, 4, 4), (4, 3, 3, 3, 3)], "padding='same' is not supported for strided"),
    (lambda m, x, w: F(m).conv3d(x, w, m.zeros(3)), [(2, 3, 4, 4, 4), (4, 3, 3, 3, 3)],
     "expected bias to be 1-dimensional with 4 elements"),
    (lambda m, x, w: F(m).conv_transpose3d(x, w, stride=2, output_padding=2),
     [(1, 4, 3, 3, 3), (4, 3, 3, 3, 3)],
     "output padding must be smaller than either stride or dilation, but got "
     "output_padding_depth: 2 output_padding_height: 2 output_padding_width: 2 stride_depth: 2"),
    (lambda m, x, w: F(m).conv_transpose1d(x, w, stride=2, output_padding=2),
     [(1, 4, 3), (4, 3, 3)], "output_padding_height: 0 output_padding_width: 2 stride_height: 1"),
    (lambda m, x, w: F(m).conv_transpose3d(x, w, padding=1), [(1, 4, 1, 1, 1), (4, 3, 1, 1, 1)],
     "Calculated output size per channel: (-1 x -1 x -1). Output size is too small"),
    (lambda m, x, w: F(m).conv_transpose3d(x, w), [(1, 5, 3, 3, 3), (4, 3, 3, 3, 3)],
     "to have 4 channels, but got 5 channels instead"),
])
def test_conv3d_errors(fn, shapes, match):
    check_error(fn, *[arr(*s) for s in shapes], match=match)


@settings(max_examples=10, deadline=None)
@given(k=st.tuples(*[st.integers(1, 3)] * 3), s=st.tuples(*[st.integers(1, 2)] * 3),
       d=st.tuples(*[st.integers(1, 2)] * 3), p=st.tuples(*[st.integers(0, 1)] * 3),
       groups=st.sampled_from([1, 2]))
def test_conv3d_geometry_hypothesis(k, s, d, p, groups):
    x, w, b = arr(1, 2 * groups, 5, 6, 5), arr(2 * groups, 2, *k), arr(2 * groups)
    check(lambda m, x, w, b: F(m).conv3d(x, w, b, stride=s, padding=p, dilation=d,
                                         groups=groups), x, w, b, atol=1e-4)
    op = tuple(min(si, di) - 1 for si, di in zip(s, d))
    check(lambda m, x, w, b: F(m).conv_transpose3d(x, w, b, stride=s, padding=p,
                                                   output_padding=op, groups=groups,
                                                   dilation=d), x, w, b, atol=1e-4)


CONV3D_LAYERS = [
    ("Conv3d", (3, 4, 3), {}, (2, 3, 5, 6, 4)),
    ("Conv3d", (4, 6, (3, 2, 1)), {"stride": 2, "padding": 1, "groups": 2, "bias": False},
     (2, 4, 5, 6, 4)),
    ("Conv3d", (3, 4, 2), {"padding": "same", "dilation": 2}, (2, 3, 5, 6, 4)),
    ("Conv3d", (3, 4, 3), {"padding": (1, 2, 1), "padding_mode": "reflect"}, (2, 3, 5, 6, 4)),
    ("Conv3d", (3, 4, 3), {"padding": 1, "padding_mode": "replicate"}, (2, 3, 5, 6, 4)),
    ("Conv3d", (3, 4, 3), {"padding": 1, "padding_mode": "circular"}, (3, 5, 6, 4)),
    ("ConvTranspose3d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2}, (2, 4, 3, 4, 3)),
    ("ConvTranspose3d", (4, 3, (2, 3, 2)), {"dilation": 2, "bias": False}, (2, 4, 3, 3, 3)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,args,kw,shape", CONV3D_LAYERS)
def test_conv3d_layers(name, args, kw, shape):
    check_layer(name, args, kw, shape, atol=1e-4)


def test_conv_transpose3d_output_size():
    e, t = ember.nn.ConvTranspose3d(2, 3, 3, stride=2), torch.nn.ConvTranspose3d(2, 3, 3, stride=2)
    compare_layer(e, t, arr(1, 2, 3, 4, 3), forward=lambda m, x: m(x, output_size=[8, 10, 7]))
    for lib in (torch, ember):
        layer = lib.nn.ConvTranspose3d(2, 3, 3, stride=2)
        with pytest.raises(ValueError, match="requested an output size of"):
            layer(lib.zeros(1, 2, 3, 3, 3), output_size=[12, 7, 7])


# --- 3-D pooling -----------------------------------------------------------------------------

MAX3D = [
    ((2, 3, 4, 6, 6), {"kernel_size": 2}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((1, 2, 6, 7, 8), {"kernel_size": (2, 3, 2), "stride": (1, 2, 2), "dilation": (2, 1, 2)}),
    ((3, 4, 5, 6), {"kernel_size": 2, "stride": 1}),  # unbatched
    ((2, 2, 5, 5, 5), {"kernel_size": 2, "ceil_mode": True, "dilation": 2, "padding": 1}),
]


@pytest.mark.parametrize("shape,kw", MAX3D)
def test_max_pool3d(shape, kw):
    out = check(lambda m, x: F(m).max_pool3d(x, return_indices=True, **kw), arr(*shape))
    assert out[0][1].dtype == ember.int64


def test_max_pool3d_ties_and_nan():
    x = np.zeros((1, 1, 4, 4, 4), dtype=np.float32)
    x[0, 0, 1, 1, 2] = np.nan
    check(lambda m, x: F(m).max_pool3d(x, 2, return_indices=True), x, grad=False)
    check(lambda m, x: F(m).max_pool3d(x, 3, 1, return_indices=True), np.ones_like(x))


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 4, 6, 6), {"kernel_size": 2}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((2, 3, 6, 7, 8), {"kernel_size": (3, 2, 3), "stride": 2, "padding": (1, 1, 0),
                       "ceil_mode": True, "count_include_pad": False}),
    ((2, 3, 5, 7, 6), {"kernel_size": 3, "divisor_override": 2}),
    ((3, 5, 5, 4), {"kernel_size": 2, "stride": 1}),  # unbatched
])
def test_avg_pool3d(shape, kw):
    check(lambda m, x: F(m).avg_pool3d(x, **kw), arr(*shape))


@pytest.mark.parametrize("shape,osize", [
    ((2, 3, 6, 8, 7), 3), ((2, 3, 7, 9, 5), (4, 5, 2)), ((2, 3, 7, 9, 5), (None, 2, None)),
    ((3, 6, 6, 6), 1), ((2, 3, 4, 5, 3), (7, 8, 6)), ((3, 6, 5, 4), (3, 2, 4))])
def test_adaptive_pools_3d(shape, osize):
    check(lambda m, x: F(m).adaptive_avg_pool3d(x, osize), arr(*shape))
    check(lambda m, x: F(m).adaptive_max_pool3d(x, osize, return_indices=True), arr(*shape))


@pytest.mark.parametrize("name,shape,osize", [("adaptive_max_pool3d", (2, 3, 4, 5, 3), (2, 0, 1)),
                                              ("adaptive_max_pool2d", (2, 3, 4, 5), (2, 0))])
def test_adaptive_max_pool_empty_output(name, shape, osize):
    check(lambda m, x: getattr(F(m), name)(x, osize, return_indices=True), arr(*shape),
          grad=False)  # torch's backward rejects the empty gradient


def test_max_unpool3d():
    def unpool(m, x):
        out, idx = F(m).max_pool3d(x, 2, return_indices=True)
        return F(m).max_unpool3d(out, idx, 2, output_size=x.shape[-3:])

    check(unpool, arr(2, 3, 5, 6, 7))

    def unpool_strided(m, x):
        out, idx = F(m).max_pool3d(x, 3, 2, 1, return_indices=True)
        return F(m).max_unpool3d(out, idx, 3, 2, 1)

    check(unpool_strided, arr(3, 5, 5, 5))
    x = arr(2, 3, 4, 4, 4)
    idx = torch.nn.functional.max_pool3d(torch.tensor(x), 2, return_indices=True)[1].numpy()
    o = arr(2, 3, 2, 2, 2)
    check_error(lambda m, o: F(m).max_unpool3d(o, m.tensor(idx), 2, output_size=(9, 9, 9)), o,
                match="(dim 0 must be between 2 and 6)")
    check_error(lambda m, o: F(m).max_unpool3d(o, m.tensor(idx * 10), 2), o,
                match="output volumes are of size 4x4x4")
    check_error(lambda m, o: F(m).max_unpool3d(o, m.tensor(idx[:, :1]), 2), o,
                match="Expected shape of indices to be same as that of the input tensor")
    check_error(lambda m, o: F(m).max_unpool3d(o, m.tensor(idx).float(), 2), o,
                match="elements in indices should be type int64 but got: Float")
    check_error(lambda m, o: F(m).max_unpool3d(o[0, 0], m.tensor(idx[0, 0]), 2), o,
                match="Input to max_unpooling3d should be a 4d or 5d Tensor")


POOLS3D = [
    lambda m, x: F(m).max_pool3d(x, 3, 2, 1),
    lambda m, x: F(m).max_pool3d(x, 2, return_indices=True),
    lambda m, x: F(m).avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda m, x: F(m).adaptive_avg_pool3d(x, (2, 3, 2)),
    lambda m, x: F(m).adaptive_avg_pool3d(x, 1),
    lambda m, x: F(m).adaptive_max_pool3d(x, (3, 2, 2)),
    lambda m, x: F(m).max_unpool3d(*F(m).max_pool3d(x, 2, return_indices=True), 2,
                                   output_size=x.shape[-3:]),
]


POOLS2D = [  # the same primitives serve 2-D, under 2-D names
    lambda m, x: F(m).max_pool2d(x, 2),
    lambda m, x: F(m).avg_pool2d(x, 3, 2, 1),
    lambda m, x: F(m).adaptive_avg_pool2d(x, (2, 3)),
    lambda m, x: F(m).adaptive_max_pool2d(x, (3, 2)),
]


@pytest.mark.parametrize("fn,shape", [(fn, (1, 2, 4, 5, 4)) for fn in POOLS3D] +
                         [(fn, (1, 2, 5, 4)) for fn in POOLS2D])
def test_pool_grad_fn_names(fn, shape):
    x = no_ties(*shape)
    e, t = grad_fn_names(fn, x, ember), grad_fn_names(fn, x, torch)
    assert e[0] == t[0]
    if e[0] != "MeanBackward1":  # the (1, 1, 1) shortcut: mean's own double backward
        assert e[1] == t[1]


@pytest.mark.parametrize("fn", POOLS3D)
def test_pool3d_fd_and_double_backward(fn):
    x = no_ties(1, 2, 4, 5, 4)

    def first(m, x):
        out = fn(m, x)
        return out[0] if isinstance(out, tuple) else out

    fd_check(lambda x: first(ember, x), x)
    # Pools are piecewise linear: the grad is a linear function of the upstream gradient.
    u = arr(*first(ember, ember.tensor(x)).shape, dtype="float64")

    def double(m, x, u):
        x = x.detach().requires_grad_()
        return m.autograd.grad(first(m, x), x, u, create_graph=True)[0]

    check(double, x, u, grad_inputs=(1,))


@pytest.mark.parametrize("fn", POOLS3D[:-1])
def test_pool3d_empty_batch_and_float64(fn):
    check(fn, arr(0, 3, 4, 4, 4))
    check(fn, arr(2, 3, 5, 5, 4, dtype="float64"))


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, x: F(m).max_pool3d(x, 2, padding=2), (1, 1, 5, 5, 5),
     "pad should be at most half of effective kernel size"),
    (lambda m, x: F(m).max_pool3d(x, 6), (1, 1, 5, 5, 5),
     "Calculated output size: (1x0x0x0). Output size is too small"),
    (lambda m, x: F(m).max_pool3d(x, 2), (5, 5, 5),
     "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (lambda m, x: F(m).max_pool3d(x, 2, stride=0), (1, 1, 5, 5, 5), "stride should not be zero"),
    (lambda m, x: F(m).max_pool3d(x, 0, stride=1), (1, 1, 5, 5, 5),
     "kernel size should be greater than zero, but got kT: 0 kH: 0 kW: 0"),
    (lambda m, x: F(m).max_pool3d(x, 2, dilation=0), (1, 1, 5, 5, 5),
     "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0"),
    (lambda m, x: F(m).max_pool3d(x, 2, padding=-1), (1, 1, 5, 5, 5),
     "pad must be non-negative, but got pad: -1"),
    (lambda m, x: F(m).max_pool3d(x, (2, 2)), (1, 1, 5, 5, 5), "a tuple of three ints"),
    (lambda m, x: F(m).max_pool3d(x, 2, stride=(1, 1)), (1, 1, 5, 5, 5),
     "stride must either be omitted, a single int, or a tuple of three ints"),
    (lambda m, x: F(m).max_pool3d(x, 1), (1, 2, 3, 0, 4),
     "Expected input's non-batch dimensions to have positive length"),
    (lambda m, x: F(m).avg_pool3d(x, 6, padding=1), (1, 2, 5, 5, 5),
     "input image (T: 5 H: 5 W: 5) smaller than kernel size (kT: 6 kH: 6 kW: 6)"),
    (lambda m, x: F(m).avg_pool3d(x, 2, divisor_override=0), (1, 1, 5, 5, 5),
     "divisor must be not zero"),
    (lambda m, x: F(m).avg_pool3d(x, 2), (5, 5), "non-empty 4D or 5D"),
    (lambda m, x: F(m).adaptive_avg_pool3d(x, 2), (5, 5, 5), "Expected 4D or 5D tensor"),
    (lambda m, x: F(m).adaptive_avg_pool3d(x, (2, 2)), (1, 2, 5, 5, 5), "output_size must be 3"),
    (lambda m, x: F(m).adaptive_avg_pool3d(x, (2, -1, 2)), (1, 2, 5, 5, 5),
     "elements of output_size must be greater than or equal to 0"),
    (lambda m, x: F(m).adaptive_max_pool3d(x, 2), (1, 2, 3, 0, 4),
     "Expected input to have non-zero size for non-batch dimensions"),
    (lambda m, x: F(m).max_pool2d(x, 1), (1, 2, 0, 4),
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size"),
])
def test_pool3d_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


POOL3D_LAYERS = [
    ("MaxPool3d", (2,), {}, (2, 3, 4, 6, 6)),
    ("MaxPool3d", ((2, 3, 1),), {"stride": 1, "padding": (1, 1, 0), "dilation": 2,
                                 "ceil_mode": True, "return_indices": True}, (2, 3, 6, 7, 5)),
    ("AvgPool3d", (2,), {}, (2, 3, 4, 6, 6)),
    ("AvgPool3d", ((2, 3, 1),), {"stride": 1, "padding": (1, 1, 0), "ceil_mode": True,
                                 "count_include_pad": False, "divisor_override": 3},
     (2, 3, 6, 7, 5)),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, (2, 3, 6, 7, 5)),
    ("AdaptiveMaxPool3d", (2,), {"return_indices": True}, (3, 6, 7, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", POOL3D_LAYERS)
def test_pool3d_layers(name, args, kw, shape):
    check_layer(name, args, kw, shape)


def test_max_unpool3d_layer():
    for args in ((2,), ((2, 1, 2), 1, 0)):
        e, t = ember.nn.MaxUnpool3d(*args), torch.nn.MaxUnpool3d(*args)
        assert_same_structure(e, t)
    e, t = ember.nn.MaxUnpool3d(2), torch.nn.MaxUnpool3d(2)
    x = no_ties(2, 3, 4, 4, 4).astype(np.float32)
    out, idx = torch.nn.functional.max_pool3d(torch.tensor(x), 2, return_indices=True)
    compare_layer(e, t, out.numpy(), idx.numpy(),
                  forward=lambda m, v, i: m(v, i, output_size=[5, 4, 5]))


# --- BatchNorm3d / InstanceNorm3d ------------------------------------------------------------

@pytest.mark.parametrize("name,kw,shape", [
    ("BatchNorm3d", {}, (3, 4, 3, 2, 3)),
    ("BatchNorm3d", {"momentum": None, "eps": 1e-3}, (3, 4, 3, 2, 3)),
    ("BatchNorm3d", {"affine": False, "track_running_stats": False}, (3, 4, 3, 2, 3)),
    ("BatchNorm3d", {"bias": False}, (3, 4, 3, 2, 3)),
    ("InstanceNorm3d", {}, (2, 4, 3, 2, 3)),
    ("InstanceNorm3d", {"affine": True, "track_running_stats": True}, (2, 4, 3, 2, 3)),
    ("InstanceNorm3d", {"affine": True, "momentum": 0.3}, (4, 3, 2, 3)),  # unbatched
])
def test_norm3d_layers(name, kw, shape):
    # Running statistics over several steps, then eval.
    check_layer(name, (4,), kw, shape, atol=1e-4, steps=3, random_params=True)


def test_norm3d_errors():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
            lib.nn.BatchNorm3d(3)(lib.zeros(2, 3, 4, 4))
        with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
            lib.nn.InstanceNorm3d(3)(lib.zeros(3, 4, 4))
        with pytest.raises(ValueError, match="expected input's size at dim=1 to match"):
            lib.nn.InstanceNorm3d(3, affine=True)(lib.zeros(2, 4, 2, 2, 2))


def test_batch_norm3d_fd_gradgrad():
    fn = lambda x, w, b: ember.nn.functional.batch_norm(  # noqa: E731
        x, None, None, w, b, training=True)
    fd_check(fn, arr(2, 2, 2, 2, 2), arr(2), arr(2))
    gradgrad_check(fn, arr(2, 2, 2, 2, 2), arr(2), arr(2))
