"""Forward-mode AD and torch.func against torch: dual tensors, tangents of every op family,
forward-over-reverse, grad/vjp/jvp/jacrev/jacfwd/hessian/vmap/functional_call."""

import numpy as np
import pytest
import torch
from oracle import arr

import ember

OPS = {
    "pointwise": lambda m, x, y: (x * y + x.exp() - y.sin() / (1 + x.abs())).tanh(),
    "broadcast": lambda m, x, y: x + y[0] * 2.5 - x.pow(2),
    "matmul": lambda m, x, y: x @ y.t(),
    "reductions": lambda m, x, y: (x.sum(1), x.mean(), x.var(0), x.amax(1), x.logsumexp(1),
                                   x.norm(), x.prod(0)),
    "views": lambda m, x, y: (x.t().reshape(-1)[::2], x[1:, :2].flatten(), x.unsqueeze(0) * 1),
    "indexing": lambda m, x, y: (x[m.tensor([2, 0, 1])], x.gather(1, m.tensor([[0, 1, 1, 3]] * 3))),
    "joining": lambda m, x, y: (m.cat([x, y]), m.stack([x, y], 1)),
    "nn": lambda m, x, y: (m.nn.functional.softmax(x, 1), m.nn.functional.gelu(x),
                           m.nn.functional.layer_norm(x, (4,)), m.relu(x),
                           m.nn.functional.cross_entropy(x, m.tensor([0, 3, 1]))),
    "conv": lambda m, x, y: m.nn.functional.conv2d(x.reshape(1, 1, 3, 4),
                                                   y[:, :3].reshape(1, 1, 3, 3), padding=1),
    "inplace": lambda m, x, y: _inplace(x, y),
}


def _inplace(x, y):
    z = x * 1
    z.mul_(y)
    z.add_(1)
    return z


def _jvp(lib, fn, xs, vs):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(x, v) for x, v in zip(xs, vs)]
        out = fn(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        res = []
        for o in outs:
            p, t = fw.unpack_dual(o)
            res.append((p.detach().numpy().copy(), None if t is None else t.numpy().copy()))
    return res


@pytest.mark.parametrize("name", OPS)
def test_tangents_match_torch(name):
    a, b, u, w = arr(3, 4), arr(3, 4), arr(3, 4), arr(3, 4)
    e = _jvp(ember, OPS[name], [ember.tensor(a), ember.tensor(b)],
             [ember.tensor(u), ember.tensor(w)])
    t = _jvp(torch, OPS[name], [torch.tensor(a), torch.tensor(b)],
             [torch.tensor(u), torch.tensor(w)])
    assert len(e) == len(t)
    for (ep, et), (tp, tt) in zip(e, t):
        np.testing.assert_allclose(ep, tp, rtol=1e-5, atol=1e-6)
        assert (et is None) == (tt is None)
        if tt is not None:
            np.testing.assert_allclose(et, tt, rtol=1e-4, atol=1e-5)


def test_dual_tensor_api_and_errors_match_torch():
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        x, v = lib.tensor([1.0, 2.0]), lib.tensor([0.5, -1.0])
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, v)
        with fw.dual_level():
            d = fw.make_dual(x, v)
            assert "tangent=tensor([ 0.5000, -1.0000])" in repr(d)
            assert fw.unpack_dual(d).tangent is v and not d.requires_grad
            assert fw.unpack_dual(x).tangent is None
            with pytest.raises(RuntimeError, match="different size"):
                fw.make_dual(x, lib.ones(3))
            with pytest.raises(ValueError, match="floating point"):
                fw.make_dual(lib.ones(2, dtype=lib.int64), v)
            with pytest.raises(RuntimeError, match="Nested forward mode AD"):
                with fw.dual_level():
                    pass
            d2 = fw.make_dual(x.clone(), v)
            d2.mul_(2)  # tangents are updated in place, as torch does
            np.testing.assert_allclose(v.numpy(), [1.0, -2.0])
        assert fw.unpack_dual(d).tangent is None  # dropped when the level exits


def test_forward_over_reverse_hessian_vector_product():
    a, v = arr(5, dtype="float64"), arr(5, dtype="float64")
    res = {}
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        x = lib.tensor(a, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, lib.tensor(v))
            (g,) = lib.autograd.grad((d.sin() * d * d).sum(), d, create_graph=True)
            res[lib.__name__] = fw.unpack_dual(g).tangent.detach().numpy()
    np.testing.assert_allclose(res["ember"], res["torch"], rtol=1e-10)


def test_custom_function_jvp():
    for lib in (ember, torch):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        class WithJvp(Double):
            @staticmethod
            def jvp(ctx, t):
                return t * 2

        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(lib.ones(2), lib.tensor([1.0, 3.0]))
            assert fw.unpack_dual(WithJvp.apply(d)).tangent.tolist() == [2.0, 6.0]
            with pytest.raises(NotImplementedError, match="implement the jvp function"):
                Double.apply(d)


@pytest.mark.parametrize("fn", [lambda x: (x.sin() * x).cumsum(0), lambda x: x.softmax(0),
                                lambda x: (x @ x.t()).tanh()])
def test_gradcheck_forward_ad(fn):
    x = ember.tensor(arr(3, 3, dtype="float64"), requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,), check_forward_ad=True)


def test_jacobian_forward_mode():
    from ember.autograd.functional import jacobian

    a, b = arr(3), arr(2)
    for strategy in ("forward-mode", "reverse-mode"):
        e = jacobian(lambda x, y: (x * y.sum(), x.exp()), (ember.tensor(a), ember.tensor(b)),
                     vectorize=True, strategy=strategy)
        t = torch.autograd.functional.jacobian(
            lambda x, y: (x * y.sum(), x.exp()), (torch.tensor(a), torch.tensor(b)),
            vectorize=True, strategy=strategy)
        for er, tr in zip(e, t):
            for ej, tj in zip(er, tr):
                np.testing.assert_allclose(ej.numpy(), tj.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        jacobian(lambda x: x, ember.ones(2), strategy="forward-mode")
