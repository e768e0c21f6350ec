"""RMSNorm, PixelShuffle/PixelUnshuffle, ChannelShuffle, LocalResponseNorm and LPPool against
torch: values, dtypes, grads, grad_fn names, reprs, state_dicts, errors, finite differences."""

import numpy as np
import pytest
import torch
from layer_oracle import assert_same_structure, check_layer, compare_layer
from oracle import arr, check, check_error, fd_check, grad_fn_names, gradgrad_check, positive

import ember


def F(m):
    return m.nn.functional


# --- rms_norm / RMSNorm ----------------------------------------------------------------------

@pytest.mark.parametrize("shape,ns,kw", [
    ((2, 3, 4), (4,), {}),
    ((2, 3, 4), (3, 4), {"eps": 1e-2}),
    ((5, 4), [4], {"eps": None}),
    ((4,), (4,), {}),
])
@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm(shape, ns, kw, weight):
    args = [arr(*shape)] + ([arr(*ns)] if weight else [])
    check(lambda m, x, *w: F(m).rms_norm(x, ns, *w, **kw), *args, atol=1e-4)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_rms_norm_dtypes_and_tiny_values():
    check(lambda m, x, w: F(m).rms_norm(x, (3,), w), arr(2, 3, dtype="float64"),
          arr(3, dtype="float64"))
    # The output keeps the input's dtype whatever the weight's; the weight's grad keeps its own.
    check(lambda m, x, w: F(m).rms_norm(x, (3,), w), arr(2, 3), arr(3, dtype="float64"),
          atol=1e-4)
    # The default eps (the dtype's machine epsilon) matters for inputs near zero.
    check(lambda m, x: F(m).rms_norm(x, (3,)), arr(2, 3) * 1e-4, atol=1e-3)


def test_rms_norm_grad_fn_names():
    for fn in (lambda m, x: F(m).rms_norm(x, (4,)),
               lambda m, x: F(m).rms_norm(x, (4,), m.ones(4, requires_grad=True))):
        x = arr(2, 4, dtype="float64")
        assert grad_fn_names(fn, x, ember) == grad_fn_names(fn, x, torch)


def test_rms_norm_fd_gradgrad():
    fn = lambda x, w: ember.nn.functional.rms_norm(x, (3,), w, eps=1e-3)  # noqa: E731
    fd_check(fn, arr(2, 3), arr(3))
    gradgrad_check(fn, arr(2, 3), arr(3))


@pytest.mark.parametrize("fn,match,exc_shape", [
    (lambda m, x: F(m).rms_norm(x, (4,)), "expected input with shape [*4], but got input of size",
     (2, 3)),
    (lambda m, x: F(m).rms_norm(x, 3), "must be tuple of ints, not int", (2, 3)),
    (lambda m, x: F(m).rms_norm(x, (3,), m.ones(4)),
     "Expected weight to be of same shape as normalized_shape", (2, 3)),
    (lambda m, x: F(m).rms_norm(x, ()),
     "Expected normalized_shape to be at least 1-dimensional", (2, 3)),
    (lambda m, x: F(m).layer_norm(x, ()),
     "Expected normalized_shape to be at least 1-dimensional", (2, 3)),
    (lambda m, x: F(m).rms_norm(x.long(), (3,)), "\"rms_norm\" not implemented for 'Long'",
     (2, 3)),
])
def test_rms_norm_errors(fn, match, exc_shape):
    check_error(fn, arr(*exc_shape), match=match)


@pytest.mark.parametrize("args,kw,shape", [
    ((4,), {}, (2, 3, 4)),
    ([3, 4], {"eps": 1e-3}, (2, 3, 4)),
    ((4,), {"elementwise_affine": False}, (5, 4)),
])
def test_rms_norm_layer(args, kw, shape):
    check_layer("RMSNorm", (args,), kw, shape, atol=1e-4, random_params=True)


# --- pixel_shuffle / pixel_unshuffle / channel_shuffle ---------------------------------------

@pytest.mark.parametrize("shape,r", [((2, 8, 3, 4), 2), ((9, 2, 2), 3), ((2, 3, 4, 2, 3), 2),
                                     ((2, 3, 2, 2), 1)])
def test_pixel_shuffle(shape, r):
    check(lambda m, x: F(m).pixel_shuffle(x, r), arr(*shape))
    up = (*shape[:-3], shape[-3] // (r * r), shape[-2] * r, shape[-1] * r)
    check(lambda m, x: F(m).pixel_unshuffle(x, r), arr(*up))


def test_pixel_shuffle_empty_batch():
    # Forward only: torch's pixel_unshuffle (and so pixel_shuffle's backward) returns an empty
    # input unchanged, not reshaped.
    check(lambda m, x: F(m).pixel_shuffle(x, 2), arr(0, 4, 2, 2), grad=False)


@pytest.mark.parametrize("shape,g", [((2, 6, 3), 3), ((2, 6, 2, 3), 2), ((1, 8, 2, 1, 2), 4),
                                     ((3, 5, 2), 1), ((2, 6, 3), 6)])
def test_channel_shuffle(shape, g):
    check(lambda m, x: F(m).channel_shuffle(x, g), arr(*shape))


def test_shuffles_keep_integer_dtypes_and_are_top_level():
    x = arr(2, 8, 2, 2, dtype="int64", low=-9, high=9)
    check(lambda m, x: m.pixel_shuffle(x, 2), x)
    check(lambda m, x: m.pixel_unshuffle(x, 2), x)
    check(lambda m, x: m.channel_shuffle(x, 4), x)


@pytest.mark.parametrize("fn,shape", [
    (lambda m, x: F(m).pixel_shuffle(x, 2), (1, 8, 2, 3)),
    (lambda m, x: F(m).pixel_unshuffle(x, 2), (1, 2, 4, 6)),
    (lambda m, x: F(m).channel_shuffle(x, 2), (1, 6, 2, 3)),
])
def test_shuffle_grad_fn_names_and_fd(fn, shape):
    x = arr(*shape, dtype="float64")
    assert grad_fn_names(fn, x, ember) == grad_fn_names(fn, x, torch)
    fd_check(lambda t: fn(ember, t), x)
    gradgrad_check(lambda t: fn(ember, t) * fn(ember, t), x)


def test_shuffles_roundtrip():
    x = ember.tensor(arr(2, 12, 3, 4))
    assert ember.equal(F(ember).pixel_unshuffle(F(ember).pixel_shuffle(x, 2), 2), x)
    assert ember.equal(F(ember).channel_shuffle(F(ember).channel_shuffle(x, 3), 4), x)


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, x: F(m).pixel_shuffle(x, 2), (1, 5, 2, 2), "input.size(-3)=5 is not divisible by 4"),
    (lambda m, x: F(m).pixel_shuffle(x, 2), (4, 2), "expects input to have at least 3 dimensions"),
    (lambda m, x: F(m).pixel_shuffle(x, 0), (1, 4, 2, 2), "expects a positive upscale_factor"),
    (lambda m, x: F(m).pixel_unshuffle(x, 2), (1, 1, 5, 4),
     "expects height to be divisible by downscale_factor"),
    (lambda m, x: F(m).pixel_unshuffle(x, 2), (1, 1, 4, 5),
     "expects width to be divisible by downscale_factor"),
    (lambda m, x: F(m).pixel_unshuffle(x, -1), (1, 1, 4, 4), "expects a positive downscale_factor"),
    (lambda m, x: F(m).channel_shuffle(x, 2), (1, 5, 2, 2),
     "Number of channels must be divisible by groups. Got 5 channels and 2 groups."),
    (lambda m, x: F(m).channel_shuffle(x, 0), (1, 4, 2, 2),
     "Number of groups to divide channels in must be positive"),
    (lambda m, x: F(m).channel_shuffle(x, 2), (2, 4),
     "channel_shuffle expects input with > 2 dims"),
])
def test_shuffle_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


@pytest.mark.parametrize("name,args,shape", [
    ("PixelShuffle", (2,), (2, 8, 3, 2)), ("PixelUnshuffle", (3,), (2, 1, 6, 3)),
    ("ChannelShuffle", (2,), (2, 4, 3, 3)),
])
def test_shuffle_layers(name, args, shape):
    check_layer(name, args, {}, shape)


# --- local_response_norm / LocalResponseNorm -------------------------------------------------

@pytest.mark.parametrize("shape,args", [
    ((2, 5, 4), (3,)), ((2, 6, 3, 4), (2, 1e-2, 0.5, 2.0)), ((2, 5, 2, 3, 2), (4, 0.1, 0.9)),
    ((1, 3, 5), (7,)), ((2, 4, 3, 2, 2, 2), (3, 0.2)), ((0, 5, 4), (3,)),
])
def test_local_response_norm(shape, args):
    check(lambda m, x: F(m).local_response_norm(x, *args), arr(*shape), atol=1e-4)


def test_local_response_norm_fd_gradgrad_and_grad_fn():
    fn = lambda x: ember.nn.functional.local_response_norm(x, 3, 0.5, 0.75, 1.0)  # noqa: E731
    fd_check(fn, arr(2, 4, 3))
    gradgrad_check(fn, arr(1, 4, 2, 2))
    f = lambda m, x: F(m).local_response_norm(x, 2)  # noqa: E731
    assert grad_fn_names(f, arr(2, 3, 4), ember)[0] == grad_fn_names(f, arr(2, 3, 4), torch)[0]


def test_local_response_norm_layer_and_errors():
    for args in ((3,), (3, 1e-3, 0.5, 2.0)):
        check_layer("LocalResponseNorm", args, {}, (2, 6, 3, 4), atol=1e-4)
    check_error(lambda m, x: F(m).local_response_norm(x, 2), arr(5, 5),
                match="Expected 3D or higher dimensionality")


# --- lp_pool1d/2d/3d / LPPool ----------------------------------------------------------------

@pytest.mark.parametrize("fn,x", [
    (lambda m, x: F(m).lp_pool1d(x, 2, 3), arr(2, 3, 10)),
    (lambda m, x: F(m).lp_pool1d(x, 1.5, 3, 2, ceil_mode=True), positive(2, 3, 10)),
    (lambda m, x: F(m).lp_pool1d(x, 2, 2), arr(3, 7)),
    (lambda m, x: F(m).lp_pool2d(x, 2, 2), arr(2, 3, 6, 7)),
    (lambda m, x: F(m).lp_pool2d(x, 3, (2, 3), stride=1, ceil_mode=True), positive(2, 3, 6, 7)),
    (lambda m, x: F(m).lp_pool2d(x, 1, 3, 2), positive(3, 7, 7)),
    (lambda m, x: F(m).lp_pool3d(x, 2, 2), arr(2, 3, 4, 5, 6)),
    (lambda m, x: F(m).lp_pool3d(x, 4, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
     arr(2, 3, 4, 5, 6)),
    (lambda m, x: F(m).lp_pool3d(x, 2.5, 2), positive(3, 4, 5, 6)),
])
def test_lp_pool(fn, x):
    check(fn, x, atol=1e-4)


def test_lp_pool_zero_windows_have_zero_gradient():
    x = np.zeros((1, 2, 4, 4), dtype=np.float32)
    x[0, 0, 1, 2] = 1.5
    check(lambda m, x: F(m).lp_pool2d(x, 2, 2), x)
    check(lambda m, x: F(m).lp_pool1d(x, 3, 2), x[0])
    check(lambda m, x: F(m).lp_pool3d(x, 2, 2), x[None])


def test_lp_pool_fd_and_grad_fn():
    fd_check(lambda x: ember.nn.functional.lp_pool2d(x, 2, 2), positive(1, 2, 4, 4))
    fd_check(lambda x: ember.nn.functional.lp_pool3d(x, 3, 2, 1), positive(1, 1, 3, 3, 3))
    fd_check(lambda x: ember.nn.functional.lp_pool1d(x, 1.5, 2), positive(1, 2, 6))
    gradgrad_check(lambda x: ember.nn.functional.lp_pool2d(x, 2, 2), positive(1, 1, 4, 4))
    f = lambda m, x: F(m).lp_pool2d(x, 2, 2)  # noqa: E731
    x = positive(1, 2, 4, 4, dtype="float64")
    assert grad_fn_names(f, x, ember)[0] == grad_fn_names(f, x, torch)[0]


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, x: F(m).lp_pool2d(x, 2, 2), (5, 5), "Dimension out of range"),
    (lambda m, x: F(m).lp_pool1d(x, 2, 2), (2, 3, 5, 5), "Expected 2 to 3 dimensions"),
    (lambda m, x: F(m).lp_pool3d(x, 2, 2), (5, 5, 5), "non-empty 4D or 5D"),
    (lambda m, x: F(m).lp_pool2d(x, 2, 6), (1, 1, 5, 5), "Output size is too small"),
])
def test_lp_pool_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


@pytest.mark.parametrize("name,args,kw,shape", [
    ("LPPool1d", (2, 3), {}, (2, 3, 10)),
    ("LPPool2d", (1.5, (2, 3)), {"stride": 1, "ceil_mode": True}, (2, 3, 6, 7)),
    ("LPPool3d", (3, 2), {}, (2, 3, 4, 4, 4)),
])
def test_lp_pool_layers(name, args, kw, shape):
    e, t = getattr(ember.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert_same_structure(e, t)
    compare_layer(e, t, positive(*shape), atol=1e-4)


_NORMS = {
    "layer": lambda lib, t: lib.nn.functional.layer_norm(t, (6,)),
    "group": lambda lib, t: lib.nn.functional.group_norm(t, 2),
    "batch": lambda lib, t: lib.nn.functional.batch_norm(t, None, None, training=True),
    "batch_eval": lambda lib, t: lib.nn.functional.batch_norm(
        t, lib.zeros(4), lib.ones(4), training=False),
    "instance": lambda lib, t: lib.nn.functional.instance_norm(t),
}


@pytest.mark.parametrize("name", sorted(_NORMS))
def test_norms_of_inf_and_nan_inputs_are_silent_and_match_torch(name):
    import warnings

    x = np.random.default_rng(0).standard_normal((8, 4, 6)).astype(np.float32)
    x[0, 0, 0], x[1, 1, 1] = np.inf, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch gives NaN statistics without a warning
        check(_NORMS[name], x)
