"""BatchNorm / LayerNorm / GroupNorm against torch: outputs, grads, running stats, errors."""

import numpy as np
import pytest
from oracle import arr, check, check_error, fd_check, gradgrad_check, positive

import ember


def F(m):
    return m.nn.functional


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train(shape, affine):
    c = shape[1]
    rm, rv = arr(c), positive(c)
    stats = {}

    def fn(m, x, w, b):
        r = (m.tensor(rm), m.tensor(rv))
        stats[m.__name__] = r
        return F(m).batch_norm(x, *r, w if affine else None, b if affine else None,
                               training=True, momentum=0.3, eps=1e-3)

    check(fn, arr(*shape), arr(c), arr(c), atol=1e-4)
    for e, t in zip(stats["ember"], stats["torch"]):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4, 5)])
def test_batch_norm_eval(shape):
    c = shape[1]
    rm, rv = arr(c), positive(c)
    check(lambda m, x, w, b: F(m).batch_norm(x, m.tensor(rm), m.tensor(rv), w, b),
          arr(*shape), arr(c), arr(c), atol=1e-4)


def test_batch_norm_no_running_stats():
    check(lambda m, x: F(m).batch_norm(x, None, None, training=True), arr(5, 2, 3))


def test_layer_norm():
    check(lambda m, x, w, b: F(m).layer_norm(x, (4,), w, b), arr(2, 3, 4), arr(4), arr(4),
          atol=1e-4)
    check(lambda m, x, w, b: F(m).layer_norm(x, (3, 4), w, b, eps=1e-2), arr(2, 3, 4),
          arr(3, 4), arr(3, 4), atol=1e-4)
    check(lambda m, x: F(m).layer_norm(x, [3, 4]), arr(3, 4), atol=1e-4)
    check(lambda m, x, b: F(m).layer_norm(x, (4,), bias=b), arr(5, 4), arr(4), atol=1e-4)


@pytest.mark.parametrize("shape,g", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4),
                                     ((0, 4, 2), 2)])
def test_group_norm(shape, g):
    check(lambda m, x, w, b: F(m).group_norm(x, g, w, b), arr(*shape), arr(shape[1]),
          arr(shape[1]), atol=1e-4)


def test_norm_grad_fn_names():
    x = ember.tensor(arr(4, 3, 2), requires_grad=True)
    f = ember.nn.functional
    names = [type(o.grad_fn).__name__ for o in (
        f.batch_norm(x, None, None, training=True), f.layer_norm(x, (2,)), f.group_norm(x, 3))]
    assert names == ["NativeBatchNormBackward0", "NativeLayerNormBackward0",
                     "NativeGroupNormBackward0"]


FNS = [
    lambda x, w, b: ember.nn.functional.batch_norm(x, None, None, w, b, training=True),
    lambda x, w, b: ember.nn.functional.batch_norm(
        x, ember.tensor([0.1, -0.2], dtype=ember.float64),
        ember.tensor([0.5, 2.0], dtype=ember.float64), w, b),
    lambda x, w, b: ember.nn.functional.group_norm(x, 1, w, b),
]


@pytest.mark.parametrize("fn", FNS)
def test_norm_fd_gradgrad(fn):
    x, w, b = arr(3, 2, 2), arr(2), arr(2)
    fd_check(fn, x, w, b)
    gradgrad_check(fn, x, w, b)


def test_layer_norm_fd_gradgrad():
    fn = lambda x, w, b: ember.nn.functional.layer_norm(x, (3,), w, b)  # noqa: E731
    fd_check(fn, arr(2, 3), arr(3), arr(3))
    gradgrad_check(fn, arr(2, 3), arr(3), arr(3))


@pytest.mark.parametrize("fn,shape,match", [
    (lambda m, x: F(m).batch_norm(x, None, None), (2, 3), "running_mean must be defined"),
    (lambda m, x: F(m).batch_norm(x, m.zeros(4), m.ones(4)), (2, 3),
     "running_mean should contain 3 elements not 4"),
    (lambda m, x: F(m).batch_norm(x, None, None, training=True), (1, 3),
     "Expected more than 1 value per channel when training, got input size"),
    (lambda m, x: F(m).layer_norm(x, (3,)), (2, 3, 4),
     "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size"),
    (lambda m, x: F(m).group_norm(x, 2), (2, 3, 4),
     "Expected number of channels in input to be divisible by num_groups"),
    (lambda m, x: F(m).layer_norm(x, (4,), m.ones(3)), (2, 3, 4),
     "Expected weight to be of same shape as normalized_shape"),
    (lambda m, x: F(m).group_norm(x, 3, m.ones(2)), (2, 3, 4),
     "Expected weight to be a vector of size equal to the number of channels"),
])
def test_norm_errors(fn, shape, match):
    check_error(fn, arr(*shape), match=match)


# --- layers ----------------------------------------------------------------------------------

NORM_LAYERS = [
    ("BatchNorm2d", (3,), {}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"momentum": None}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"affine": False, "eps": 1e-3}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"bias": False}, (4, 3, 5, 5)),
    ("BatchNorm1d", (3,), {"track_running_stats": False}, (4, 3)),
    ("BatchNorm1d", (3,), {"momentum": 0.5}, (4, 3, 6)),
    ("LayerNorm", (5,), {}, (2, 4, 5)),
    ("LayerNorm", ((4, 5),), {"elementwise_affine": False}, (2, 4, 5)),
    ("LayerNorm", ([5],), {"bias": False, "eps": 1e-3}, (2, 4, 5)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)),
    ("GroupNorm", (4, 4), {"affine": False}, (3, 4, 2, 2)),
]


@pytest.mark.parametrize("name,args,kw,shape", NORM_LAYERS)
def test_norm_layers(name, args, kw, shape):
    from layer_oracle import check_layer

    # Running statistics over several steps, then eval.
    check_layer(name, args, kw, shape, atol=1e-4, steps=3, random_params=True)


def test_batchnorm_buffers_and_errors():
    import torch

    e = ember.nn.BatchNorm2d(3)
    assert list(e.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    assert e.num_batches_tracked.dtype == ember.int64
    e(ember.tensor(arr(2, 3, 2, 2)))
    e(ember.tensor(arr(2, 3, 2, 2)))
    assert e.num_batches_tracked.item() == 2
    e.eval()
    e(ember.tensor(arr(1, 3, 1, 1)))  # one value per channel is fine in eval mode
    assert e.num_batches_tracked.item() == 2
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                             "training, got input size"):
            lib.nn.BatchNorm1d(3)(lib.zeros(1, 3))
        with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
            lib.nn.BatchNorm2d(3)(lib.zeros(2, 3, 4))
        with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by "
                                             r"num_groups \(2\)"):
            lib.nn.GroupNorm(2, 3)


def test_norm_default_init():
    for layer in (ember.nn.BatchNorm2d(5), ember.nn.LayerNorm((2, 5)), ember.nn.GroupNorm(1, 5)):
        assert np.all(layer.weight.detach().numpy() == 1)
        assert np.all(layer.bias.detach().numpy() == 0)
        assert layer.weight.requires_grad and layer.weight.dtype == ember.float32
    bn = ember.nn.BatchNorm1d(4)
    assert np.all(bn.running_mean.numpy() == 0) and np.all(bn.running_var.numpy() == 1)
    bn(ember.tensor(arr(3, 4)))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and np.all(bn.running_var.numpy() == 1)


def test_norm_empty_batch():
    check(lambda m, x: F(m).batch_norm(x, m.zeros(3), m.ones(3), training=True), arr(0, 3, 4))
    check(lambda m, x: F(m).layer_norm(x, (4,)), arr(0, 3, 4))


@pytest.mark.parametrize("name,kw,shape", [
    ("InstanceNorm1d", {}, (2, 3, 5)),
    ("InstanceNorm1d", {"affine": True, "track_running_stats": True}, (2, 3, 5)),
    ("InstanceNorm2d", {"affine": True}, (2, 3, 4, 5)),
    ("InstanceNorm2d", {"track_running_stats": True, "momentum": 0.3}, (2, 3, 4, 5)),
    ("InstanceNorm2d", {"affine": True}, (3, 4, 5)),
])
def test_instance_norm_layers(name, kw, shape):
    from layer_oracle import check_layer

    check_layer(name, (3,), kw, shape, atol=1e-4, steps=2)


def test_instance_norm_functional_and_errors():
    check(lambda m, x, w, b: F(m).instance_norm(x, weight=w, bias=b), arr(2, 3, 4), arr(3),
          arr(3), atol=1e-4)
    check_error(lambda m, x: F(m).instance_norm(x), arr(1, 3, 1),
                match="Expected more than 1 spatial element when training")
    import torch

    for lib in (torch, ember):
        with pytest.raises(ValueError, match="expected input's size at dim=1 to match"):
            lib.nn.InstanceNorm1d(3, affine=True)(lib.zeros(2, 4, 5))
        with pytest.warns(UserWarning, match="does not match num_features"):
            lib.nn.InstanceNorm1d(3)(lib.zeros(2, 4, 5))
