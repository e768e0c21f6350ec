"""bfloat16 tensors against torch's: ops (values, dtypes, gradients), printing, saving and
loading in torch's format, and the conversions torch refuses."""

from __future__ import annotations

import io

import ml_dtypes
import numpy as np
import pytest
import torch
from oracle import same

import ember


def _bf16(lib, a):
    return lib.tensor(a, dtype=lib.bfloat16)


def _data(seed: int, *shapes, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, s) for s in shapes]


def _F(L):
    return L.nn.functional


# name -> (fn(lib, *tensors), input shapes, grad?) ; inputs are bfloat16 in (-2, 2)
OPS = {
    "add": (lambda L, a, b: a + b, [(3, 4), (4,)], True),
    "mul_scalar": (lambda L, a: a * 2.5 - 1, [(3, 4)], True),
    "div": (lambda L, a, b: a / (b.abs() + 1), [(3, 4), (3, 4)], True),
    "exp_log": (lambda L, a: a.exp() + (a.abs() + 0.1).log(), [(3, 4)], True),
    "tanh_sigmoid": (lambda L, a: a.tanh() * a.sigmoid(), [(3, 4)], True),
    "pow": (lambda L, a: a.abs() ** 1.5, [(3, 4)], True),
    "sqrt_rsqrt": (lambda L, a: (a.abs() + 0.5).sqrt() + (a.abs() + 0.5).rsqrt(), [(3, 4)], True),
    "clamp_where": (lambda L, a: L.where(a > 0, a.clamp(max=1.0), -a), [(3, 4)], True),
    "relu_gelu_silu": (lambda L, a: L.relu(a) + _F(L).gelu(a) + _F(L).silu(a), [(3, 4)], True),
    "softplus_elu": (lambda L, a: _F(L).softplus(a) + _F(L).elu(a), [(3, 4)], True),
    "sum": (lambda L, a: a.sum(), [(40, 50)], True),
    "sum_dim": (lambda L, a: a.sum(0), [(300, 4)], True),
    "sum_f32": (lambda L, a: a.sum(dtype=L.float32), [(300,)], True),
    "mean": (lambda L, a: a.mean(1), [(4, 300)], True),
    "var_std": (lambda L, a: a.var(0) + a.std(0), [(200, 3)], True),
    "prod": (lambda L, a: (a.abs() + 0.5).prod(1), [(3, 6)], True),
    "cumsum": (lambda L, a: a.cumsum(0), [(300, 2)], True),
    "logsumexp": (lambda L, a: a.logsumexp(1), [(3, 200)], True),
    "norm": (lambda L, a: a.norm(dim=1), [(3, 200)], True),
    "max_min": (lambda L, a: a.max(1)[0] + a.min(0)[0].sum() + a.amax(), [(3, 4)], True),
    "argmax_sort": (lambda L, a: (a.argmax(1), a.sort(1)[0], a.topk(2)[0]), [(3, 4)], False),
    "softmax": (lambda L, a: a.softmax(1), [(3, 300)], True),
    "log_softmax": (lambda L, a: _F(L).log_softmax(a, 1), [(3, 300)], True),
    "mm": (lambda L, a, b: a @ b, [(5, 300), (300, 3)], True),
    "bmm_addmm": (lambda L, a, b, c: L.bmm(a[None], b[None])[0] + L.addmm(c, a, b),
                  [(3, 40), (40, 2), (3, 2)], True),
    "einsum": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(3, 40), (40, 2)], True),
    "linear": (lambda L, a, w, b: _F(L).linear(a, w, b), [(4, 30), (5, 30), (5,)], True),
    "conv2d": (lambda L, x, w: _F(L).conv2d(x, w, padding=1), [(2, 3, 6, 6), (4, 3, 3, 3)],
               True),
    "max_pool2d": (lambda L, x: _F(L).max_pool2d(x, 2), [(2, 3, 6, 6)], True),
    "max_pool2d_idx": (lambda L, x: _F(L).max_pool2d(x, 2, return_indices=True),
                       [(2, 3, 6, 6)], False),
    "avg_pool2d": (lambda L, x: _F(L).avg_pool2d(x, 2), [(2, 3, 6, 6)], True),
    "adaptive_avg_pool2d": (lambda L, x: _F(L).adaptive_avg_pool2d(x, 1), [(2, 3, 20, 20)], True),
    "layer_norm": (lambda L, x, w, b: _F(L).layer_norm(x, (50,), w, b), [(4, 50), (50,), (50,)],
                   True),
    "batch_norm": (lambda L, x, w, b: _F(L).batch_norm(x, None, None, w, b, training=True),
                   [(64, 3), (3,), (3,)], True),
    "group_norm": (lambda L, x: _F(L).group_norm(x, 2), [(3, 4, 25)], True),
    "cross_entropy": (lambda L, a: _F(L).cross_entropy(a, L.tensor([0, 1, 2])), [(3, 5)], True),
    "mse_loss": (lambda L, a, b: _F(L).mse_loss(a, b), [(30, 40), (30, 40)], True),
    "cat_stack": (lambda L, a, b: L.cat([a, b]) + L.stack([a, b]).sum(0).repeat(2, 1),
                  [(3, 4), (3, 4)], True),
    "index": (lambda L, a: a[[0, 2], 1:] * 2, [(3, 4)], True),
    "gather_scatter": (lambda L, a: a.gather(1, L.tensor([[0, 1], [2, 0], [1, 1]])).scatter_add(
        1, L.tensor([[1, 1], [0, 0], [1, 0]]), a[:, :2]), [(3, 4)], True),
    "embedding": (lambda L, w: _F(L).embedding(L.tensor([[0, 2], [1, 1]]), w), [(3, 4)], True),
    "interpolate": (lambda L, x: _F(L).interpolate(x, scale_factor=2, mode="bilinear"),
                    [(1, 2, 3, 3)], True),
    "dropout_eval": (lambda L, a: _F(L).dropout(a, 0.5, training=False), [(3, 4)], True),
    "to_float": (lambda L, a: a.float() * 3, [(3, 4)], True),
    "comparisons": (lambda L, a, b: ((a > b) & (a != 0), a.eq(b), L.isclose(a, b)),
                    [(3, 4), (3, 4)], False),
}


def _run(lib, name: str):
    fn, shapes, grad = OPS[name]
    xs = [_bf16(lib, a).requires_grad_(grad) for a in _data(len(name), *shapes)]
    out = fn(lib, *xs)
    outs = list(out) if isinstance(out, tuple) else [out]
    grads = []
    if grad:
        rng = np.random.default_rng(1)
        ups = [lib.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outs]
        lib.autograd.backward(outs, ups)
        grads = [x.grad for x in xs]
    return outs, grads


def _close(e, t, what: str) -> None:
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], f"{what}: dtype"
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape"
    ev = e.detach().double().numpy() if e.is_floating_point() else e.numpy()
    tv = t.detach().double().numpy() if t.is_floating_point() else t.numpy()
    scale = max(1.0, float(np.abs(tv).max(initial=0)))
    np.testing.assert_allclose(ev, tv, rtol=2e-2, atol=1.6e-2 * scale, err_msg=what)


@pytest.mark.parametrize("name", sorted(OPS))
def test_bfloat16_op_matches_torch(name):
    (eo, eg), (to, tg) = _run(ember, name), _run(torch, name)
    for k, (e, t) in enumerate(zip(eo, to)):
        _close(e, t, f"{name} output {k}")
    for k, (e, t) in enumerate(zip(eg, tg)):
        _close(e, t, f"{name} grad {k}")


def test_bfloat16_accumulates_in_float32():
    """A sum of 1000 ones is 1000 (torch accumulates in float); bfloat16 steps would stop at
    256."""
    for f in (lambda L: L.ones(1000, dtype=L.bfloat16).sum(),
              lambda L: L.ones(1000, dtype=L.bfloat16).mean(),
              lambda L: L.ones(1000, dtype=L.bfloat16).cumsum(0)[-1],
              lambda L: L.ones(1, 1000, dtype=L.bfloat16) @ L.ones(1000, 1, dtype=L.bfloat16)):
        same(f)


def test_bfloat16_printing_and_types():
    same(lambda L: L.tensor([1.5, -2.25, 1e-5, 3e38], dtype=L.bfloat16))
    same(lambda L: L.arange(12, dtype=L.bfloat16).reshape(3, 4) / 7)
    same(lambda L: (L.bfloat16, L.bfloat16.is_floating_point, L.bfloat16.itemsize))
    same(lambda L: L.ones(2, dtype=L.bfloat16).type())
    same(lambda L: L.tensor([1.3], dtype=L.bfloat16).item())
    same(lambda L: L.tensor([[1.3, 2.7]], dtype=L.bfloat16).tolist())
    same(lambda L: L.finfo(L.bfloat16))
    same(lambda L: L.promote_types(L.bfloat16, L.float16))
    same(lambda L: L.ones(2, dtype=L.bfloat16).numpy())
    same(lambda L: np.asarray(L.ones(2, dtype=L.bfloat16)))
    same(lambda L: L.from_numpy(np.ones(2, ml_dtypes.bfloat16)))
    same(lambda L: L.tensor(np.ones(2, ml_dtypes.bfloat16)))


def test_bfloat16_checkpoints_round_trip_with_torch(tmp_path):
    t = torch.randn(3, 4).bfloat16()
    torch.save({"w": t, "v": t[1:, ::2], "n": torch.nn.Linear(2, 2).bfloat16().state_dict()},
               tmp_path / "t.pt")
    for weights_only in (True, False):
        e = ember.load(tmp_path / "t.pt", weights_only=weights_only)
        assert e["w"].dtype is ember.bfloat16 and e["n"]["weight"].dtype is ember.bfloat16
        np.testing.assert_array_equal(e["w"].float().numpy(), t.float().numpy())
        np.testing.assert_array_equal(e["v"].float().numpy(), t[1:, ::2].float().numpy())
    ember.save({"w": e["w"], "v": e["v"]}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt")
    assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"], t)
    assert torch.equal(back["v"], t[1:, ::2])
    buf = io.BytesIO()
    ember.save(ember.arange(5, dtype=ember.bfloat16), buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf), torch.arange(5, dtype=torch.bfloat16))


def test_every_float32_math_op_is_installed():
    # a class that moved would silently lose its float32 computation (and its output dtype)
    import sys

    import ember.nn  # noqa: F401 - its classes are on the list
    from ember.ops import _lowp

    for entry in _lowp.FLOAT32_OPS.split():
        mod, _, name = entry.partition(":")[0].rpartition(".")
        cls = getattr(sys.modules.get(f"ember.{mod}"), name, None)
        assert cls is not None and vars(cls).get("_lowp"), entry


def test_bfloat16_refuses_the_gpu_clearly():
    # CuPy has no bfloat16: a move to CUDA says so before CuPy is reached (runs without a GPU)
    from ember._backend import CUDA0, to_device

    assert not ember.cuda.is_bf16_supported()
    with pytest.raises(RuntimeError, match="CuPy has no bfloat16"):
        to_device(ember.ones(2, dtype=ember.bfloat16)._data, CUDA0)
