"""F.pad and F.interpolate against torch: values, grads, node names, errors."""

import numpy as np
import pytest
from oracle import arr, check, check_error, fd_check

import ember


def F(m):
    return m.nn.functional


@pytest.mark.parametrize("shape,pad,kw", [
    ((2, 3), (1, 2), {}),
    ((2, 3, 4), (1, 0, 2, 1, 1, 1), {"value": 1.5}),
    ((2, 3, 4), (-1, 2), {}),
    ((2, 3, 4, 5), (1, 1, 2, 0), {"mode": "reflect"}),
    ((3, 4, 5), (2, 3), {"mode": "reflect"}),
    ((2, 3, 4, 5), (1, 2, 3, 0), {"mode": "replicate"}),
    ((2, 3, 4), (4, 1), {"mode": "replicate"}),
    ((2, 3, 4, 5), (1, 2, 3, 0), {"mode": "circular"}),
    ((1, 2, 3, 3, 4), (1, 1, 1, 1, 1, 1), {"mode": "reflect"}),
    ((1, 2, 3, 3, 4), (1, 0, 2, 1, 1, 0), {"mode": "replicate"}),
])
def test_pad(shape, pad, kw):
    check(lambda m, x: F(m).pad(x, pad, **kw), arr(*shape))


def test_pad_names_and_double_backward():
    x = ember.tensor(arr(1, 2, 4, 4), requires_grad=True)
    f = ember.nn.functional
    names = [type(f.pad(x, (1, 1, 1, 1), mode=m).grad_fn).__name__
             for m in ("constant", "reflect", "replicate")]
    assert names == ["ConstantPadNdBackward0", "ReflectionPad2DBackward0",
                     "ReplicationPad2DBackward0"]
    for mode in ("constant", "reflect", "circular"):
        u = arr(1, 2, 6, 7)

        def double(m, x, u, mode=mode):
            x = x.detach().requires_grad_()
            out = F(m).pad(x, (1, 2, 1, 1), mode=mode)
            return m.autograd.grad(out, x, u, create_graph=True)[0]

        check(double, arr(1, 2, 4, 4), u, grad_inputs=(1,))


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 4, 5), {"scale_factor": 2}),
    ((2, 3, 4, 5), {"size": (7, 3)}),
    ((2, 3, 5), {"scale_factor": 1.7}),
    ((2, 3, 4, 5), {"size": (9, 11), "mode": "bilinear"}),
    ((2, 3, 4, 5), {"size": (9, 2), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 4, 5), {"scale_factor": 2.5, "mode": "bilinear"}),
    ((2, 3, 6, 6), {"scale_factor": 0.5, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 3, 7), {"size": 12, "mode": "linear"}),
    ((2, 3, 7), {"size": 5, "mode": "linear", "align_corners": True}),
    ((2, 3, 4, 5), {"size": (7, 3), "mode": "nearest-exact"}),
    ((2, 3, 8, 9), {"size": (3, 4), "mode": "area"}),
    ((2, 3, 8), {"scale_factor": 0.5, "mode": "area"}),
])
def test_interpolate(shape, kw):
    check(lambda m, x: F(m).interpolate(x, **kw), arr(*shape))


def test_interpolate_fd_and_name():
    fd_check(lambda x: ember.nn.functional.interpolate(x, size=(3, 5), mode="bilinear"),
             arr(1, 1, 2, 3))
    x = ember.tensor(arr(1, 1, 2, 3), requires_grad=True)
    out = ember.nn.functional.interpolate(x, scale_factor=2)
    assert type(out.grad_fn).__name__ == "UpsampleNearest2DBackward0"
    assert out.dtype == ember.float32
    assert np.all(out.detach().numpy()[0, 0, ::2, ::2] == x.detach().numpy()[0, 0])


@pytest.mark.parametrize("fn,shape,match,", [
    (lambda m, x: F(m).pad(x, (3, 3), mode="reflect"), (1, 2, 3), "Padding size should be less"),
    (lambda m, x: F(m).pad(x, (1,)), (1, 2, 3), "Padding length must be divisible by 2"),
    (lambda m, x: F(m).pad(x, (1,) * 8), (1, 2, 3), "Padding length should be less than"),
    (lambda m, x: F(m).pad(x, (1, 1), mode="foo"), (1, 2, 3), "Unrecognised padding mode foo"),
    (lambda m, x: F(m).pad(x, (1, 1), mode="reflect"), (1, 2, 3, 4),
     "Padding size 2 is not supported for 4D input tensor"),
    (lambda m, x: F(m).pad(x, (4, 4), mode="circular"), (1, 2, 3), "wrapping around"),
    (lambda m, x: F(m).pad(x, (1, 1), mode="replicate", value=1.0), (1, 2, 3),
     "doesn't take in value argument"),
    (lambda m, x: F(m).interpolate(x, size=4, mode="bilinear"), (1, 2, 3),
     "bilinear mode needs 4D input"),
    (lambda m, x: F(m).interpolate(x), (1, 2, 3), "either size or scale_factor"),
    (lambda m, x: F(m).interpolate(x, size=4, scale_factor=2), (1, 2, 3), "only one of size"),
    (lambda m, x: F(m).interpolate(x, size=4, align_corners=True), (1, 2, 3),
     "align_corners option can only be set"),
])
def test_pad_interp_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


# --- layers ----------------------------------------------------------------------------------

PAD_LAYERS = [
    ("ZeroPad2d", (2,), (2, 3, 4, 4)),
    ("ZeroPad1d", ((1, 2),), (2, 3, 4)),
    ("ConstantPad1d", ((1, 2), 3.5), (2, 3, 4)),
    ("ConstantPad2d", (1, -1.0), (2, 3, 4, 4)),
    ("ConstantPad3d", (1, 0.5), (1, 2, 3, 4, 4)),
    ("ReflectionPad1d", (2,), (2, 3, 4)),
    ("ReflectionPad2d", ((1, 2, 0, 3),), (2, 3, 4, 4)),
    ("ReflectionPad3d", (1,), (1, 2, 3, 4, 4)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 4)),
    ("ReplicationPad2d", (2,), (2, 3, 4, 4)),
    ("CircularPad1d", (2,), (2, 3, 4)),
    ("CircularPad2d", ((1, 2, 0, 3),), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("name,args,shape", PAD_LAYERS)
def test_pad_layers(name, args, shape):
    import torch
    from layer_oracle import assert_same_structure, compare_layer

    e, t = getattr(ember.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert_same_structure(e, t)
    compare_layer(e, t, arr(*shape))


@pytest.mark.parametrize("name,kw,shape", [
    ("Upsample", {"scale_factor": 2}, (2, 3, 4, 4)),
    ("Upsample", {"scale_factor": (2, 3)}, (2, 3, 4, 4)),
    ("Upsample", {"size": (5, 7), "mode": "bilinear"}, (2, 3, 4, 4)),
    ("Upsample", {"size": 9, "mode": "linear", "align_corners": True}, (2, 3, 4)),
    ("UpsamplingNearest2d", {"scale_factor": 2}, (2, 3, 4, 4)),
    ("UpsamplingBilinear2d", {"size": (6, 5)}, (2, 3, 4, 4)),
])
def test_upsample_layers(name, kw, shape):
    import torch
    from layer_oracle import assert_same_structure, compare_layer

    e, t = getattr(ember.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert_same_structure(e, t)
    compare_layer(e, t, arr(*shape))
