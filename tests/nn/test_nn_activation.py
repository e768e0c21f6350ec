"""Activation functions and layers vs torch: values, grads, grad_fn names, reprs, fd checks."""

import numpy as np
import pytest
import torch
from layer_oracle import assert_same_structure, compare_layer
from oracle import arr, check, check_error, fd_check, gradgrad_check, negstride, noncontig

import ember

FUNCS = [
    ("relu", lambda F, x: F.relu(x)),
    ("relu6", lambda F, x: F.relu6(x * 4)),
    ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.2)),
    ("elu", lambda F, x: F.elu(x, 0.7)),
    ("selu", lambda F, x: F.selu(x)),
    ("celu", lambda F, x: F.celu(x, 1.3)),
    ("gelu", lambda F, x: F.gelu(x)),
    ("gelu_tanh", lambda F, x: F.gelu(x, approximate="tanh")),
    ("silu", lambda F, x: F.silu(x)),
    ("mish", lambda F, x: F.mish(x)),
    ("sigmoid", lambda F, x: F.sigmoid(x)),
    ("tanh", lambda F, x: F.tanh(x)),
    ("hardtanh", lambda F, x: F.hardtanh(x, -0.5, 1.5)),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x * 3)),
    ("hardswish", lambda F, x: F.hardswish(x * 3)),
    ("logsigmoid", lambda F, x: F.logsigmoid(x * 10)),
    ("softplus", lambda F, x: F.softplus(x, beta=2.0, threshold=3.0)),
    ("softsign", lambda F, x: F.softsign(x)),
    ("tanhshrink", lambda F, x: F.tanhshrink(x)),
    ("threshold", lambda F, x: F.threshold(x, 0.1, -2.0)),
    ("softmax", lambda F, x: F.softmax(x, dim=-1)),
    ("softmax0", lambda F, x: F.softmax(x, 0)),
    ("log_softmax", lambda F, x: F.log_softmax(x, dim=1)),
    ("softmin", lambda F, x: F.softmin(x, dim=1)),
    ("softmax_dtype", lambda F, x: F.softmax(x, 1, dtype=F_dtype(F))),
    ("hardshrink", lambda F, x: F.hardshrink(x, 0.3)),
    ("softshrink", lambda F, x: F.softshrink(x)),
    ("glu", lambda F, x: F.glu(x[:, :4], 1)),
    ("glu0", lambda F, x: F.glu(x[:2], 0)),
]


def F_dtype(F):
    return torch.float64 if F is torch.nn.functional else ember.float64


def _F(m):
    return m.nn.functional


@pytest.mark.parametrize("name,fn", FUNCS, ids=[n for n, _ in FUNCS])
def test_functional_matches_torch(name, fn):
    def run(m, x):
        y = fn(_F(m), x)
        return y, y.grad_fn.name()
    check(run, arr(4, 6))


@pytest.mark.parametrize("name,fn", FUNCS, ids=[n for n, _ in FUNCS])
def test_functional_layouts(name, fn):
    check(lambda m, x: fn(_F(m), x), noncontig(3, 5))
    check(lambda m, x: fn(_F(m), x), negstride(3, 5))


@pytest.mark.parametrize("name,fn", FUNCS, ids=[n for n, _ in FUNCS])
def test_functional_fd(name, fn):
    # Keep away from kinks (relu at 0, hardtanh at its bounds) for central differences.
    x = arr(3, 4, rng=np.random.default_rng(1))
    x[np.abs(x) < 0.05] = 0.7
    fd_check(lambda t: fn(ember.nn.functional, t), x)


@pytest.mark.parametrize("name", ["glu", "elu", "silu", "mish", "softmax", "log_softmax",
                                  "softplus", "logsigmoid", "gelu_tanh", "selu"])
def test_functional_gradgrad(name):
    fn = dict(FUNCS)[name]
    gradgrad_check(lambda t: fn(ember.nn.functional, t), arr(2, 4, rng=np.random.default_rng(2)))


def test_softmax_stable_for_huge_logits():
    x = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0]], dtype=np.float32)
    check(lambda m, t: m.nn.functional.softmax(t, 1), x, grad=False)
    check(lambda m, t: m.nn.functional.log_softmax(t, 1), x[:1], grad=True)


def test_softmax_edge_shapes_and_methods():
    check(lambda m, x: m.softmax(x, 0), arr())
    check(lambda m, x: x.softmax(-1), arr(0, 3), grad=False)
    check(lambda m, x: x.log_softmax(dim=0), arr(5))
    check(lambda m, x: m.log_softmax(x, 2), arr(2, 3, 4))


def test_softmax_implicit_dim_warns():
    x = ember.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = ember.nn.functional.softmax(x)
    np.testing.assert_allclose(y.sum(1).numpy(), 1.0, rtol=1e-6)


def test_prelu_functional_and_errors():
    check(lambda m, x, w: m.nn.functional.prelu(x, w), arr(2, 3, 4), arr(3))
    check(lambda m, x, w: m.nn.functional.prelu(x, w), arr(2, 3), arr(1))
    check_error(lambda m, x, w: m.nn.functional.prelu(x, w), arr(2, 3, 4), arr(2),
                match="Mismatch of parameter numbers")


def test_inplace_variants_match_torch():
    for name in ["relu", "elu", "leaky_relu", "hardtanh", "silu", "selu", "relu6"]:
        def run(m, x, name=name):
            y = x * 1
            out = getattr(m.nn.functional, name)(y, inplace=True)
            assert out is y
            return out
        check(run, arr(3, 4))


def test_glu_softmax2d_errors():
    check_error(lambda m, x: m.nn.functional.glu(x, 1), arr(2, 3),
                match="Halving dimension must be even, but dimension 1 is size 3")
    check_error(lambda m, x: m.nn.Softmax2d()(x), arr(3),
                match="Softmax2d: expected input to be 3D or 4D, got 1D instead")
    check_error(lambda m, x: m.nn.functional.softshrink(x, -1.0), arr(3))


def test_hardtanh_bad_bounds():
    check_error(lambda m, x: m.nn.functional.hardtanh(x, 2.0, 1.0), arr(3))
    with pytest.raises(AssertionError):
        ember.nn.Hardtanh(1.0, 0.0)


LAYERS = [
    ("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {}), ("LeakyReLU", (0.2,), {}),
    ("LeakyReLU", (0.1, True), {}), ("ELU", (), {}), ("ELU", (0.5, True), {}), ("SELU", (), {}),
    ("CELU", (), {"alpha": 2.0}), ("GELU", (), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}),
    ("SiLU", (True,), {}), ("Mish", (), {}), ("Sigmoid", (), {}), ("Tanh", (), {}),
    ("Softplus", (), {}), ("Softplus", (2.0, 5.0), {}), ("Hardtanh", (), {}),
    ("Hardtanh", (-2, 2, True), {}), ("Hardsigmoid", (), {}), ("Hardswish", (True,), {}),
    ("LogSigmoid", (), {}), ("Softmax", (1,), {}), ("Softmax", (), {"dim": -1}),
    ("LogSoftmax", (), {"dim": 1}), ("Softmin", (0,), {}), ("Softsign", (), {}),
    ("Threshold", (0.1, 20), {}), ("Tanhshrink", (), {}), ("PReLU", (), {}),
    ("PReLU", (3,), {}), ("PReLU", (), {"init": 0.1}), ("Hardshrink", (0.3,), {}),
    ("Softshrink", (), {}), ("GLU", (), {}), ("Softmax2d", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", LAYERS)
def test_activation_layers(name, args, kwargs):
    e = getattr(ember.nn, name)(*args, **kwargs)
    t = getattr(torch.nn, name)(*args, **kwargs)
    assert_same_structure(e, t)
    x = arr(2, 3, 4)
    if getattr(t, "inplace", False):
        # In-place layers need a non-leaf input.
        def fwd(layer, a):
            return layer(a * 1)
        compare_layer(e, t, x, forward=fwd)
    else:
        for train in (True, False):
            compare_layer(e, t, x, train=train)


def test_prelu_default_init_and_double():
    e = ember.nn.PReLU(4).double()
    assert e.weight.dtype == ember.float64
    np.testing.assert_array_equal(e.weight.detach().numpy(), 0.25)


INT_FUNCS = ["leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "hardsigmoid",
             "hardswish", "logsigmoid", "softplus"]


@pytest.mark.parametrize("name", INT_FUNCS)
def test_integer_input_errors(name):
    check_error(lambda m, x: getattr(m.nn.functional, name)(x), arr(2, 3, dtype="int64"),
                match="not implemented for 'Long'")


def test_integer_input_errors_softmax_prelu():
    check_error(lambda m, x: m.nn.functional.softmax(x, 1), arr(2, 3, dtype="int64"),
                match='"softmax_lastdim_kernel_impl" not implemented for \'Long\'')
    check_error(lambda m, x: m.nn.functional.log_softmax(x, 1), arr(2, 3, dtype="int64"))
    check_error(lambda m, x, w: m.nn.functional.prelu(x, w), arr(2, 3, dtype="int64"), arr(1),
                match="prelu: Type promoting not supported. Got Long and Float")
    check_error(lambda m, x: m.nn.functional.gelu(x, approximate="foo"), arr(2),
                match="approximate argument must be either none or tanh.")
    check_error(lambda m, x: m.nn.functional.log_softmax(x, 2), arr(2, 3))


@pytest.mark.parametrize("fn", [lambda L, x: L.relu(x), lambda L, x: L.nn.functional.relu(x),
                                lambda L, x: L.nn.functional.threshold(x, 0.5, 3.0)],
                         ids=["relu", "F.relu", "threshold"])
def test_relu_threshold_backward_selects_like_torch(fn):
    """torch's threshold_backward selects: a NaN upstream gradient is dropped where the input
    was cut off; the gradient's own node is ThresholdBackwardBackward0, linear in its input."""
    out = {}
    for L in (torch, ember):
        x = L.tensor([-1.0, 0.0, 0.5, 2.0], requires_grad=True, dtype=L.float64)
        u = L.tensor([float("nan"), 1.0, float("inf"), 2.0], requires_grad=True,
                     dtype=L.float64)
        g = L.autograd.grad(fn(L, x), x, u, create_graph=True)[0]
        v = L.tensor([3.0, float("nan"), 4.0, 5.0], dtype=L.float64)
        (gu,) = L.autograd.grad(g, u, v)
        out[L.__name__] = (g.detach().numpy(), type(g.grad_fn).__name__, gu.numpy())
    e, t = out["ember"], out["torch"]
    np.testing.assert_array_equal(e[0], t[0])
    assert e[1] == t[1]
    np.testing.assert_array_equal(e[2], t[2])


@pytest.mark.parametrize("row", [[-np.inf, np.inf], [np.inf, np.inf], [-np.inf, -np.inf],
                                 [np.nan, 1.0], [np.inf, 1.0], [-np.inf, 1.0]])
def test_softmax_of_infinite_rows(row):
    # torch's kernels subtract the row's max: inf - inf is NaN, for the whole row
    a = np.array([row, [0.5, 1.0]], np.float32)
    check(lambda m, x: x.softmax(1), a, grad=False)
    check(lambda m, x: x.log_softmax(1), a, grad=False)
