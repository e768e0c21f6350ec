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


STEPS = [(projected, bias) for projected in (True, False) for bias in (True, False)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("projected,bias", STEPS)
@pytest.mark.parametrize("use", ["h", "c", "both"])
def test_lstm_step(dtype, projected, bias, use):
    from ember.nn.modules._rnn_cells import lstm_step

    rng = np.random.default_rng(1)
    n_in = 16 if projected else 3

    def fn(x, h, c, w_hh, b_hh, w_ih, b_ih):
        h1, c1 = lstm_step(x, h, c, w_hh, b_hh if bias else None,
                           None if projected else w_ih, b_ih if bias else None)
        return {"h": h1, "c": c1, "both": h1 * 2 + c1}[use]

    shapes = [(2, n_in), (2, 4), (2, 4), (16, 4), (16,), (16, 3), (16,)]
    check_plain_equals_graph(fn, *(_arr(rng, *s, dtype=dtype) for s in shapes))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("projected,bias", STEPS)
def test_gru_step(dtype, projected, bias):
    from ember.nn.modules._rnn_cells import gru_step

    rng = np.random.default_rng(2)

    def fn(x, h, w_hh, b_hh, w_ih, b_ih):
        return gru_step(x, h, w_hh, b_hh if bias else None, None if projected else w_ih,
                        b_ih if bias else None)

    shapes = [(2, 12 if projected else 3), (2, 4), (12, 4), (12,), (12, 3), (12,)]
    check_plain_equals_graph(fn, *(_arr(rng, *s, dtype=dtype) for s in shapes))


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
