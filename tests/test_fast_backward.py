"""Plain backward (no create_graph) runs some ops' gradient formulas on arrays, skipping graph
ops; it must give exactly what the Tensor formulas (run under create_graph) give, in the same
dtype, and keep what AccumulateGrad steals stealable."""

import numpy as np
import pytest

import ember


def _grads(fn, inputs, seed, create_graph):
    xs = [ember.tensor(a, requires_grad=True) for a in inputs]
    out = fn(*xs)
    g = ember.tensor(np.random.default_rng(seed).standard_normal(out.shape).astype(
        inputs[0].dtype))
    return ember.autograd.grad(out, xs, g, create_graph=create_graph, allow_unused=True)


def check_plain_equals_graph(fn, *inputs, seed=0):
    plain = _grads(fn, inputs, seed, False)
    graph = _grads(fn, inputs, seed, True)
    for p, q in zip(plain, graph):
        assert (p is None) == (q is None)
        if p is not None:
            assert p.dtype == q.dtype and p.shape == q.shape
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-6)


def _arr(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_and_mm(dtype):
    rng = np.random.default_rng(0)
    x, w, b = _arr(rng, 5, 3, dtype=dtype), _arr(rng, 4, 3, dtype=dtype), _arr(rng, 4, dtype=dtype)
    check_plain_equals_graph(ember.nn.functional.linear, x, w, b)
    check_plain_equals_graph(lambda x, w: x.mm(w.t()), x, w)
    check_plain_equals_graph(lambda x, b: x[:, :1] + b, x, b)  # engine's sum back to b's shape
    check_plain_equals_graph(lambda x, b: x[:, :1] * b[None, :, None], _arr(rng, 2, 3, 1), b)


def test_linear_weight_gradient_is_stolen_not_copied():
    lin = ember.nn.Linear(8, 4)
    lin(ember.randn(5, 8)).sum().backward()
    g = lin.weight.grad.numpy()
    assert g.flags.c_contiguous and g.base is not None  # the GEMM's own result, transposed


def _cell(kind: str, bias: bool):
    """``nn.<kind>`` (3 -> 4) with its parameters given as inputs: ``fn(x, h, c, *params)``."""
    def fn(x, h, c, *params):
        cell = getattr(ember.nn, kind)(3, 4, bias=bias, dtype=x.dtype)
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[:len(params)]
        for name, t in zip(names, params):
            delattr(cell, name)
            setattr(cell, name, t)
        if kind == "LSTMCell":
            h1, c1 = cell(x, (h, c))
            return h1 * 2 + c1
        return cell(x, h) + c
    return fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind,gates", [("LSTMCell", 4), ("GRUCell", 3), ("RNNCell", 1)])
def test_cells(dtype, bias, kind, gates):
    rng = np.random.default_rng(1)
    shapes = [(2, 3), (2, 4), (2, 4), (4 * gates, 3), (4 * gates, 4)]
    shapes += [(4 * gates,), (4 * gates,)] if bias else []
    check_plain_equals_graph(_cell(kind, bias), *(_arr(rng, *s, dtype=dtype) for s in shapes))


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers(kind):
    rng = np.random.default_rng(5)
    ember.manual_seed(0)
    layer = getattr(ember.nn, kind)(3, 4, num_layers=2, bidirectional=True)

    def fn(x, h):
        out, _ = layer(x, (h, h * 0.5) if kind == "LSTM" else h)
        return out

    check_plain_equals_graph(fn, _arr(rng, 5, 2, 3), _arr(rng, 4, 2, 4))


def test_gradients_summed_in_the_engine():
    rng = np.random.default_rng(3)
    check_plain_equals_graph(lambda x: x * 2 + x.exp() + x.t().t(), _arr(rng, 3, 4))
    x, y = _arr(rng, 3, 4), _arr(rng, 3, 4, dtype=np.float64)
    check_plain_equals_graph(lambda x, y: (x * 3).double() + x.double() * y, x, y)  # dtypes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["layer", "layer2d", "group", "batch_eval", "instance"])
def test_norms(dtype, kind):
    rng = np.random.default_rng(4)
    F = ember.nn.functional
    x = _arr(rng, 4, 6, 5, dtype=dtype)
    w, b = _arr(rng, 6, dtype=dtype), _arr(rng, 6, dtype=dtype)
    mean, var = _arr(rng, 6, dtype=dtype), np.abs(_arr(rng, 6, dtype=dtype)) + 0.5
    fns = {
        "layer": lambda x, w, b: F.layer_norm(x.transpose(1, 2), (6,), w, b),
        "layer2d": lambda x, w, b: F.layer_norm(x, (6, 5), w[:, None] * ember.ones(6, 5),
                                                b[:, None] * ember.ones(6, 5)),
        "group": lambda x, w, b: F.group_norm(x, 3, w, b),
        "batch_eval": lambda x, w, b: F.batch_norm(x, ember.tensor(mean), ember.tensor(var), w,
                                                   b, training=False),
        "instance": lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
    }
    check_plain_equals_graph(fns[kind], x, w, b)
