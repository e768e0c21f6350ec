"""Batched vmap: every rule against torch.vmap and a Python loop, compositions with grad /
jacrev / jvp against torch.func, and the per-sample fallback."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd import function

R = np.random.default_rng(0)


def arr(shape, seed):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


A = arr((4, 3), seed=1)
B3 = arr((4, 3, 5), seed=2)
M = arr((3, 5), seed=3)
V3 = arr((3,), seed=4)
T = R.integers(0, 5, (4, 2)).astype(np.int64)
IMG = arr((2, 2, 3, 6, 6), seed=5)
W = arr((4, 3, 3, 3), seed=6)


def _np(x):
    if isinstance(x, tuple | list):
        return [_np(v) for v in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    return x.detach().numpy() if hasattr(x, "detach") else x


def _close(a, b, rtol=1e-5, atol=1e-6):
    if isinstance(b, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, rtol, atol)
    elif isinstance(b, dict):
        for k in b:
            _close(a[k], b[k], rtol, atol)
    else:
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def vmapped(fn, in_dims, *arrays, out_dims=0, once=True, rtol=1e-5, atol=1e-6):
    """``vmap(fn)`` in ember equals torch.vmap, runs ``fn`` once (batched), and equals a loop."""
    calls = []

    def fe(*a):
        calls.append(1)
        return fn(ember, *a)

    ins = [ember.tensor(a) for a in arrays]
    e = ember.func.vmap(fe, in_dims, out_dims)(*ins)
    t = torch.func.vmap(lambda *a: fn(torch, *a), in_dims, out_dims)(
        *[torch.tensor(a) for a in arrays])
    _close(_np(e), _np(t), rtol, atol)
    assert function.VMAP[0] is None  # the hook is gone after the call
    if once:
        assert len(calls) == 1, "vmap fell back to its per-sample loop"
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(arrays)
    if out_dims == 0 and all(d in (0, None) for d in dims):
        n = next(a.shape[0] for a, d in zip(arrays, dims) if d == 0)
        loop = [fn(ember, *[x[i] if d == 0 else x for x, d in zip(ins, dims)]) for i in range(n)]
        ref = [np.stack([_np(r)[j] for r in loop]) for j in range(len(loop[0]))] \
            if isinstance(loop[0], tuple) else np.stack([_np(r) for r in loop])
        _close(_np(e), _np(ref), rtol, atol)
    return e


OPS = {
    "add_unbatched_higher_rank": (lambda m, a, b: a + b, (0, None), (A, arr((2, 3), seed=7))),
    "mul_both": (lambda m, a, b: a * b, 0, (A, A[::-1].copy())),
    "sub_scalar_pow": (lambda m, a: (a - 2) ** 2, 0, (A,)),
    "div_row_bcast": (lambda m, a, b: a / (b.abs() + 1), (0, 0), (B3, arr((4, 1, 5), seed=8))),
    "unary_chain": (lambda m, a: a.exp().tanh().sigmoid().relu().neg(), 0, (A,)),
    "where": (lambda m, a, b: m.where(b > 0, a, b), (0, None), (A, V3)),
    "clamp_gelu": (lambda m, a: m.nn.functional.gelu(a.clamp(-0.5, 0.5)), 0, (B3,)),
    "sum_all": (lambda m, a: a.sum(), 0, (B3,)),
    "sum_dim_neg": (lambda m, a: a.sum(-1), 0, (B3,)),
    "mean_keepdim": (lambda m, a: a.mean(0, keepdim=True), 0, (B3,)),
    "softmax_logsoftmax": (lambda m, a: (a.softmax(0), a.log_softmax(-1)), 0, (B3,)),
    "cumsum": (lambda m, a: a.cumsum(1), 0, (B3,)),
    "max_dim": (lambda m, a: tuple(a.max(1)), 0, (B3,)),
    "view_flatten": (lambda m, a: (a.view(15), a.flatten(), a.reshape(5, -1)), 0, (B3,)),
    "permute_transpose_t": (lambda m, a: (a.permute(1, 0), a.transpose(0, 1), a.t(), a.T),
                            0, (B3,)),
    "unsqueeze_squeeze": (lambda m, a: a.unsqueeze(-1).unsqueeze(0).squeeze(0).squeeze(),
                          0, (B3,)),
    "expand_new_dims": (lambda m, a: a.expand(2, 3), 0, (A[:, :1].copy(),)),
    "select_slice": (lambda m, a: (a[1], a[:, 1:3], a[-1, ::2]), 0, (B3,)),
    "in_dim_1": (lambda m, a: a.sum(0), 1, (B3,)),
    "matmul_batched_left": (lambda m, a, b: a @ b, (0, None), (B3, arr((5, 2), seed=9))),
    "matmul_batched_right": (lambda m, a, b: a @ b, (None, 0), (M.T.copy(), B3)),
    "matmul_both": (lambda m, a, b: a @ b, (0, 0), (B3, arr((4, 5, 2), seed=10))),
    "matmul_vec": (lambda m, a, b: (a @ b, b @ a.T), (0, None), (B3, arr((5,), seed=11))),
    "dot_mv": (lambda m, a, b: (m.dot(a, b), m.mv(b[None].expand(2, 3), a)), (0, 0),
               (A, A + 1)),
    "linear": (lambda m, a, w, b: m.nn.functional.linear(a, w, b), (0, None, None),
               (B3, arr((2, 5), seed=12), arr((2,), seed=13))),
    "linear_batched_weight": (lambda m, a, w: m.nn.functional.linear(a, w), (None, 0),
                              (arr((3, 5), seed=14), arr((4, 2, 5), seed=15))),
    "addmm_batched_bias": (lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2), (0, None, None),
                           (arr((4, 3, 2), seed=16), M, arr((5, 2), seed=17))),
    "bmm": (lambda m, a, b: m.bmm(a, b), (0, None),
            (arr((4, 2, 3, 5), seed=18), arr((2, 5, 1), seed=19))),
    "stack_cat": (lambda m, a, b: (m.stack([a, b], 1), m.cat([a, b], -1)), (0, None),
                  (B3, M)),
    "cross_entropy": (lambda m, x, t: (m.nn.functional.cross_entropy(x, t),
                                       m.nn.functional.cross_entropy(x, t, reduction="sum")),
                      (0, 0), (arr((4, 2, 5), seed=20), T)),
    "nll_none_ignore": (lambda m, x, t: (m.nn.functional.nll_loss(x, t, reduction="none"),
                                         m.nn.functional.nll_loss(x, t, ignore_index=1)),
                        (0, 0), (arr((4, 2, 5), seed=21), T)),
    "nll_unbatched_target": (lambda m, x, t: m.nn.functional.nll_loss(x, t), (0, None),
                             (arr((4, 2, 5), seed=22), T[0])),
    "mse": (lambda m, a, b: (m.nn.functional.mse_loss(a, b),
                             m.nn.functional.mse_loss(a, b, reduction="none")), (0, None),
            (B3, M)),
    "conv2d": (lambda m, x, w: m.nn.functional.conv2d(x, w, padding=1), (0, None), (IMG, W)),
    "advanced_index": (lambda m, a: a[m.tensor([0, 2])] * 2, 0, (B3,)),
    # ops whose Python side reads the data of a batched index (a range check): batched too
    "layer_norm": (lambda m, a: m.nn.functional.layer_norm(a, (5,)), 0, (B3,)),
    "embedding": (lambda m, w, i: m.nn.functional.embedding(i, w), (None, 0),
                  (M, T % 3)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_vmap_of_op_matches_torch_and_a_loop(name):
    fn, in_dims, arrays = OPS[name]
    vmapped(fn, in_dims, *arrays)


def test_out_dims_and_nested_vmap():
    vmapped(lambda m, a: (a * 2, a.sum()), 0, B3, out_dims=(1, 0))
    vmapped(lambda m, a: m.func.vmap(lambda r: r.sum() * r)(a), 0, B3)
    vmapped(lambda m, a, b: m.func.vmap(lambda r: (r * b).sum(), in_dims=1)(a), (0, None),
            B3, V3)


def test_op_without_rule_loops_per_op_not_per_call():
    # trace has no batching rule: it runs once per sample, inside a single batched call of
    # the function
    vmapped(lambda m, a: m.trace(a).exp() + a[m.tensor([0, 2])].sum(), 0, B3)


@pytest.mark.parametrize("fn", [
    lambda a: a * 2 if a.sum().item() > 0 else a - 1,  # data-dependent Python
    lambda a: a.clone().add_(1),  # in-place on a batched tensor
    lambda a: a[a > 0].sum() * a,  # a boolean mask: a data-dependent shape
])
def test_unbatchable_functions_fall_back_to_the_loop(fn):
    x = ember.tensor(A)
    got = ember.func.vmap(fn)(x)
    np.testing.assert_allclose(got.numpy(), np.stack([fn(r).numpy() for r in x]))
    assert function.VMAP[0] is None


def _mlp(m):
    m.manual_seed(0)
    return m.nn.Sequential(m.nn.Flatten(), m.nn.Linear(6, 5), m.nn.ReLU(), m.nn.Linear(5, 3))


def _per_sample(m, x, y, once=None):
    model = _mlp(m)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        if once is not None:
            once.append(1)
        out = m.func.functional_call(model, p, (xi.unsqueeze(0),))
        return m.nn.functional.cross_entropy(out, yi.unsqueeze(0))
    return m.func.vmap(m.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def test_vmap_grad_per_sample_gradients_match_torch_func():
    x, y = arr((8, 2, 3), seed=30), R.integers(0, 3, 8).astype(np.int64)
    calls = []
    e = _per_sample(ember, ember.tensor(x), ember.tensor(y), calls)
    t = _per_sample(torch, torch.tensor(x), torch.tensor(y))
    _close(_np(e), _np(t))
    assert len(calls) == 1
    # and against ordinary backward, one sample at a time
    model = _mlp(ember)
    for i in range(8):
        model.zero_grad()
        ember.nn.functional.cross_entropy(model(ember.tensor(x[i:i + 1])),
                                          ember.tensor(y[i:i + 1])).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(e[k][i].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def f(x):
    return (x.sin() * x).sum()


@pytest.mark.parametrize("name", ["grad", "jacrev", "jvp", "hessian", "vjp", "grad_argnums"])
def test_transforms_inside_vmap_match_torch(name):
    cases = {
        "grad": lambda m, a: m.func.grad(f)(a),
        "jacrev": lambda m, a: m.func.jacrev(lambda y: y.exp() * y.sum())(a),
        "jvp": lambda m, a: m.func.jvp(lambda y: y.sin() * y, (a,), (a.cos(),))[1],
        "hessian": lambda m, a: m.func.hessian(f)(a),
        "vjp": lambda m, a: m.func.vjp(lambda y: y.tanh() * 2, a)[1](a.exp())[0],
        "grad_argnums": lambda m, a: m.func.grad(lambda u, w: (u * w.exp()).sum(),
                                                 argnums=(0, 1))(a, a * 2),
    }
    vmapped(cases[name], 0, A)


def test_grad_of_vmap_matches_torch():
    def fn(m, a):
        return m.func.grad(lambda y: m.func.vmap(lambda r: (r.sin() * r).sum())(y).sum())(a)
    e = fn(ember, ember.tensor(B3))
    t = fn(torch, torch.tensor(B3))
    _close(_np(e), _np(t))


def test_vmap_results_keep_the_outer_graph():
    xe, xt = ember.tensor(B3, requires_grad=True), torch.tensor(B3, requires_grad=True)
    for m, x in ((ember, xe), (torch, xt)):
        m.func.vmap(lambda a: (a.exp() @ a.T).sum())(x).pow(2).sum().backward()
    _close(_np(xe.grad), _np(xt.grad))


def test_batched_tensor_repr_and_shape_inside_vmap():
    seen = []

    def fn(a):
        seen.append((tuple(a.shape), a.ndim, a.dim(), a.numel(), len(a), a.dtype))
        seen.append(repr(a).split("\n")[0])
        return a
    ember.func.vmap(fn)(ember.ones(4, 3, 2))
    assert seen == [((3, 2), 2, 2, 6, 3, ember.float32), "BatchedTensor(lvl=1, bdim=0, value="]


@pytest.mark.parametrize("name", ["vmap_vmap_grad", "vmap_jacfwd", "grad_closure",
                                  "hessian_in_dim_1"])
def test_nested_compositions_match_torch(name):
    cases = {
        "vmap_vmap_grad": lambda m, a: m.func.vmap(m.func.grad(f))(a),
        "vmap_jacfwd": lambda m, a: m.func.jacfwd(lambda t: t.exp() * t.sum())(a[0]),
        "grad_closure": lambda m, a: m.func.grad(lambda w: (w * a[0]).sin().sum())(a[1]),
        "hessian_in_dim_1": lambda m, a: m.func.vmap(m.func.hessian(f), in_dims=1)(a),
    }
    vmapped(cases[name], 0, B3)


def test_vmap_over_a_vjp_fn_from_outside():
    # the vjp's inputs were made outside the vmap: ember runs it per sample (still one answer)
    for m in (ember, torch):
        x = m.tensor(M)
        _, fn = m.func.vjp(lambda y: y.exp() * y, x)
        out = m.func.vmap(fn)(m.eye(5).expand(3, 5, 5).permute(1, 0, 2).contiguous())[0]
        if m is ember:
            e = out.numpy()
    _close(e, out.numpy())
