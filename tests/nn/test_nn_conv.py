"""Convolutions against torch: values, input/weight/bias grads, errors, double backward."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import arr, check, check_error, fd_check, gradgrad_check

import ember


def F(m):
    return m.nn.functional


CONV2D = [
    # (x shape, w shape, kwargs)
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 4, 9, 8), (6, 2, 3, 3), {"groups": 2, "dilation": 2, "padding": (2, 1)}),
    ((2, 4, 8, 8), (4, 1, 3, 3), {"groups": 4, "stride": (2, 1)}),
    ((2, 3, 6, 6), (5, 3, 4, 2), {"padding": "same"}),
    ((2, 3, 6, 6), (5, 3, 3, 3), {"padding": "same", "dilation": 2}),
    ((2, 3, 6, 5), (5, 3, 3, 3), {"padding": "valid", "stride": 3}),
    ((3, 7, 7), (2, 3, 3, 3), {"padding": 1}),
    ((0, 3, 5, 5), (2, 3, 3, 3), {}),
]


@pytest.mark.parametrize("xs,ws,kw", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(xs, ws, kw, bias):
    args = [arr(*xs), arr(*ws)] + ([arr(ws[0])] if bias else [])
    check(lambda m, *a: F(m).conv2d(*a, **kw), *args, atol=1e-4)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 3, 10), (4, 3, 3), {}),
    ((2, 4, 11), (6, 2, 4), {"stride": 2, "padding": 3, "groups": 2, "dilation": 2}),
    ((3, 9), (2, 3, 4), {"padding": "same"}),
])
def test_conv1d(xs, ws, kw):
    check(lambda m, x, w, b: F(m).conv1d(x, w, b, **kw), arr(*xs), arr(*ws), arr(ws[0]),
          atol=1e-4)


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 4, 5, 5), (4, 3, 3, 3), {}),
    ((2, 4, 5, 4), (4, 3, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((1, 4, 4, 4), (4, 2, 3, 3), {"stride": (2, 3), "groups": 2, "dilation": 2,
                                  "output_padding": (1, 2)}),
    ((4, 3, 3), (4, 2, 2, 2), {"stride": 2, "padding": (1, 0)}),
])
def test_conv_transpose2d(xs, ws, kw):
    check(lambda m, x, w, b: F(m).conv_transpose2d(x, w, b, **kw), arr(*xs), arr(*ws),
          arr(ws[1] * kw.get("groups", 1)), atol=1e-4)


def test_conv_transpose1d():
    check(lambda m, x, w, b: F(m).conv_transpose1d(x, w, b, stride=3, padding=1),
          arr(2, 4, 6), arr(4, 3, 3), arr(3), atol=1e-4)


def test_noncontiguous_and_grad_fn():
    x = arr(2, 3, 8, 7)[:, :, ::-1].transpose(0, 1, 3, 2)
    check(lambda m, x, w: F(m).conv2d(x, w, stride=2), x, arr(4, 3, 3, 3), atol=1e-4)
    x = ember.tensor(arr(1, 2, 5, 5), requires_grad=True)
    out = ember.nn.functional.conv2d(x, ember.tensor(arr(3, 2, 3, 3)))
    assert type(out.grad_fn).__name__ == "ConvolutionBackward0"
    out = ember.nn.functional.conv_transpose2d(x, ember.tensor(arr(2, 3, 3, 3)))
    assert type(out.grad_fn).__name__ == "ConvolutionBackward0"


def test_float64_and_dtype():
    check(lambda m, x, w: F(m).conv2d(x, w, padding=1), arr(1, 2, 4, 4, dtype="float64"),
          arr(3, 2, 3, 3, dtype="float64"))


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": (1, 0), "dilation": (1, 2)},
                                {"groups": 2, "padding": 1}])
def test_conv2d_fd_and_gradgrad(kw):
    x, w, b = arr(2, 2, 5, 5), arr(2, 2 // kw.get("groups", 1), 2, 3), arr(2)
    fn = lambda x, w, b: ember.nn.functional.conv2d(x, w, b, **kw)  # noqa: E731
    fd_check(fn, x, w, b)
    gradgrad_check(fn, x, w, b)


def test_conv_transpose_fd_and_gradgrad():
    fn = lambda x, w, b: ember.nn.functional.conv_transpose2d(  # noqa: E731
        x, w, b, stride=2, padding=1, output_padding=1)
    fd_check(fn, arr(1, 2, 3, 3), arr(2, 2, 3, 2), arr(2))
    gradgrad_check(fn, arr(1, 2, 3, 3), arr(2, 2, 3, 2), arr(2))
    fn1 = lambda x, w: ember.nn.functional.conv1d(x, w, stride=2, padding=2)  # noqa: E731
    gradgrad_check(fn1, arr(1, 2, 6), arr(3, 2, 3))


@pytest.mark.parametrize("fn,shapes,match", [
    (lambda m, x, w: F(m).conv2d(x, w), [(2, 5, 8, 8), (4, 3, 3, 3)], "to have 3 channels"),
    (lambda m, x, w: F(m).conv2d(x, w), [(2, 3, 2, 2), (4, 3, 3, 3)],
     "Kernel size can't be greater than actual input size"),
    (lambda m, x, w: F(m).conv2d(x, w, stride=2, padding="same"), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "padding='same' is not supported for strided convolutions"),
    (lambda m, x, w: F(m).conv2d(x, w), [(8, 8), (4, 3, 3, 3)],
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]"),
    (lambda m, x, w: F(m).conv2d(x, w, padding="foo"), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "Invalid padding string: 'foo'"),
    (lambda m, x, w: F(m).conv2d(x, w, stride=0), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "non-positive stride is not supported"),
    (lambda m, x, w: F(m).conv2d(x, w, padding=-1), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "negative padding is not supported"),
    (lambda m, x, w: F(m).conv2d(x, w, m.zeros(3)), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "expected bias to be 1-dimensional with 4 elements"),
    (lambda m, x, w: F(m).conv_transpose2d(x, w), [(2, 5, 8, 8), (4, 3, 3, 3)],
     "to have 4 channels, but got 5 channels instead"),
    (lambda m, x, w: F(m).conv_transpose2d(x, w, stride=2, output_padding=2),
     [(2, 4, 8, 8), (4, 3, 3, 3)], "output padding must be smaller than either stride or"),
    (lambda m, x, w: F(m).conv1d(x, w), [(2, 5, 8, 8), (4, 3, 3)],
     "Expected 2D (unbatched) or 3D (batched) input to conv1d"),
    (lambda m, x, w: F(m).conv2d(x, w.double()), [(2, 3, 8, 8), (4, 3, 3, 3)],
     "should be the same"),
])
def test_conv_errors(fn, shapes, match):
    check_error(fn, *[arr(*s) for s in shapes], match=match)


def test_conv_speed_shape_sanity():
    # The CNN's second conv: batch 64, 32 -> 64 channels, 14x14: one GEMM, right shape.
    x = ember.tensor(arr(8, 32, 14, 14))
    w = ember.tensor(arr(64, 32, 3, 3))
    out = ember.nn.functional.conv2d(x, w, padding=1)
    assert out.shape == (8, 64, 14, 14)
    assert np.isfinite(out.numpy()).all()


@pytest.mark.parametrize("xs,ws,kw", [
    ((3, 5, 10, 9), (4, 5, 3, 3), {"padding": 1}),  # per-image weight GEMMs (>= 64 pixels)
    ((3, 2, 12, 12), (4, 2, 5, 5), {"padding": 2}),  # few rows: g @ cols.T per image
    ((2, 4, 9, 10), (6, 2, 3, 2), {"groups": 2, "stride": 2}),  # one long GEMM
])
def test_conv_weight_grad_kept_columns_and_retain_graph(xs, ws, kw):
    """The forward keeps its columns for the weight's gradient and frees them in backward: a
    second backward (retain_graph) computes them again; both match torch, as does the weight
    gradient of a transposed convolution (columns never kept)."""
    import torch

    x, w, u = arr(*xs), arr(*ws), None
    grads = {}
    for m in (torch, ember):
        xt, wt = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        out = m.nn.functional.conv2d(xt, wt, **kw)
        if u is None:
            u = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(np.float32)
        out.backward(m.tensor(u), retain_graph=True)
        first = wt.grad.numpy().copy()
        out.backward(m.tensor(u))
        xt2 = m.tensor(x, requires_grad=True)
        wt2 = m.tensor(w.transpose(1, 0, 2, 3).copy() if not kw.get("groups") else w,
                       requires_grad=True)
        if not kw.get("groups"):
            m.nn.functional.conv_transpose2d(xt2[:, :ws[1]], wt2[:, :, :2], **kw).sum().backward()
        grads[m.__name__] = first, wt.grad.numpy(), xt.grad.numpy(), (
            None if wt2.grad is None else wt2.grad.numpy())
    for e, t in zip(grads["ember"], grads["torch"]):
        if t is None:
            assert e is None
        else:
            np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-4)


# --- layers ----------------------------------------------------------------------------------

CONV_LAYERS = [
    ("Conv2d", (3, 4, 3), {}, (2, 3, 7, 6)),
    ("Conv2d", (4, 6, (3, 2)), {"stride": 2, "padding": 1, "groups": 2, "bias": False},
     (2, 4, 7, 6)),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, (2, 3, 7, 6)),
    ("Conv2d", (3, 4, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 3, 7, 6)),
    ("Conv2d", (3, 4, 3), {"padding": (1, 2), "padding_mode": "replicate"}, (2, 3, 7, 6)),
    ("Conv2d", (3, 4, 4), {"padding": "same", "padding_mode": "circular"}, (2, 3, 7, 6)),
    ("Conv2d", (3, 4, 3), {"padding": "valid"}, (3, 7, 6)),
    ("Conv1d", (3, 4, 3), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("Conv1d", (3, 4, 3), {"padding": 1, "padding_mode": "circular"}, (2, 3, 9)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2}, (2, 4, 5, 5)),
    ("ConvTranspose2d", (4, 3, (2, 3)), {"dilation": 2, "bias": False}, (2, 4, 5, 5)),
    ("ConvTranspose1d", (4, 3, 3), {"stride": 3}, (2, 4, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", CONV_LAYERS)
def test_conv_layers(name, args, kw, shape):
    from layer_oracle import check_layer

    check_layer(name, args, kw, shape, atol=1e-4)


def test_conv_transpose_output_size():
    import torch
    from layer_oracle import compare_layer

    e, t = ember.nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    compare_layer(e, t, arr(1, 2, 4, 4), forward=lambda m, x: m(x, output_size=[10, 9]))


def test_conv_default_init_statistics():
    ember.manual_seed(0)
    layer = ember.nn.Conv2d(16, 64, 3)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    bound = 1 / np.sqrt(16 * 9)  # kaiming_uniform(a=sqrt(5)) and the bias both give 1/sqrt(fan_in)
    assert w.shape == (64, 16, 3, 3) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.02 * bound
    assert abs(w.mean()) < 0.02 * bound
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
    assert layer.weight.requires_grad and isinstance(layer.weight, ember.nn.Parameter)


@pytest.mark.parametrize("kw,match,exc", [
    ({"groups": 0}, "groups must be a positive integer", ValueError),
    ({"groups": 2}, "in_channels must be divisible by groups", ValueError),
    ({"padding": "foo"}, "Invalid padding string 'foo'", ValueError),
    ({"padding": "same", "stride": 2}, "padding='same' is not supported for strided", ValueError),
    ({"padding_mode": "bad"}, "padding_mode must be one of", ValueError),
])
def test_conv_layer_errors(kw, match, exc):
    import torch

    with pytest.raises(exc, match=match.replace("(", r"\(")):
        torch.nn.Conv2d(3, 4, 3, **kw)
    with pytest.raises(exc, match=match.replace("(", r"\(")):
        ember.nn.Conv2d(3, 4, 3, **kw)


def _cnn(nn, p=0.25):
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Dropout(p), nn.Linear(512, 10))


def test_note_cnn_prints_and_trains_like_torch():
    import torch
    from layer_oracle import assert_same_structure, compare_layer

    e, t = _cnn(ember.nn), _cnn(torch.nn)
    assert_same_structure(e, t)
    assert str(e) == str(t)
    # Eval mode (dropout off): same weights give the same outputs and gradients.
    compare_layer(e, t, arr(4, 1, 28, 28), train=False, atol=1e-4)
    # Train mode without dropout: batch statistics, running-stat updates, all gradients.
    e, t = _cnn(ember.nn, 0.0), _cnn(torch.nn, 0.0)
    compare_layer(e, t, arr(4, 1, 28, 28), atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       p=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       groups=st.sampled_from([1, 2]), hw=st.tuples(st.integers(5, 8), st.integers(5, 8)))
def test_conv2d_geometry_hypothesis(k, s, d, p, groups, hw):
    x, w, b = arr(2, 2 * groups, *hw), arr(2 * groups, 2, *k), arr(2 * groups)
    check(lambda m, x, w, b: F(m).conv2d(x, w, b, stride=s, padding=p, dilation=d,
                                         groups=groups), x, w, b, atol=1e-4)
    # The transpose with the same geometry (output_padding inside the valid range).
    op = tuple(min(si, di) - 1 for si, di in zip(s, d))
    check(lambda m, x, w, b: F(m).conv_transpose2d(x, w, b, stride=s, padding=p,
                                                   output_padding=op, groups=groups,
                                                   dilation=d), x, w.reshape(2 * groups, 2, *k),
          b, atol=1e-4)


# --- fold / unfold -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 5, 6), {"kernel_size": 2}),
    ((2, 3, 7, 6), {"kernel_size": (3, 2), "dilation": (1, 2), "padding": 1, "stride": 2}),
    ((3, 5, 5), {"kernel_size": 3, "padding": (0, 1)}),
])
def test_unfold_fold(shape, kw):
    check(lambda m, x: F(m).unfold(x, **kw), arr(*shape))
    with ember.no_grad():
        cols_shape = F(ember).unfold(ember.tensor(arr(*shape)), **kw).shape
    check(lambda m, c: F(m).fold(c, shape[-2:], **kw), arr(*cols_shape))
    fd_check(lambda x: ember.nn.functional.unfold(x, **kw), arr(*shape[:-3], 1, *shape[-2:]))


def test_fold_unfold_layers_and_errors():
    import torch
    from layer_oracle import assert_same_structure, compare_layer

    e, t = ember.nn.Unfold(2, stride=2), torch.nn.Unfold(2, stride=2)
    assert_same_structure(e, t)
    compare_layer(e, t, arr(2, 3, 6, 6))
    e, t = ember.nn.Fold((4, 5), (2, 3), stride=2), torch.nn.Fold((4, 5), (2, 3), stride=2)
    assert_same_structure(e, t)
    compare_layer(e, t, arr(2, 12, 4))
    check_error(lambda m, x: F(m).fold(x, (5, 6), 2), arr(2, 13, 20),
                match="to be divisible by the product of kernel_size")
    check_error(lambda m, x: F(m).unfold(x, 7), arr(2, 3, 5, 6),
                match="but its components must be at least one")
    check_error(lambda m, x: F(m).fold(x, (5, 6), 2), arr(1, 2, 12, 20),
                match="Expected 2D or 3D (batch mode) tensor")
    check_error(lambda m, x: F(m).fold(x, (5, 6), 2), arr(2, 12, 19),
                match="expected size of input's dimension 2 to match")
