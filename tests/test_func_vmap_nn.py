"""Batching rules of the nn ops (``ember/func/_batching_rules_nn.py``) and of the ops that
compute on arrays outside Op.apply (comparisons, argmax): vmap runs the function once,
batched, and equals torch.vmap and a Python loop; vmap(grad(...)) equals torch.func's."""

import numpy as np
import pytest
import torch
from test_func_vmap import _close, _np, arr, vmapped

import ember
from ember.func import _batching_rules as br

X = arr((4, 3, 5), seed=40)  # a batch of 4 (3, 5) samples
IMG = arr((4, 2, 3, 6, 6), seed=41)  # a batch of 4 (2, 3, 6, 6) image batches
SEQ = arr((4, 2, 4, 5), seed=42)  # a batch of 4 (N=2, C=4, L=5)
W5 = arr((5,), seed=43)
B5 = arr((5,), seed=44)
W4 = arr((4,), seed=45)
RM, RV = arr((4,), seed=46), np.abs(arr((4,), seed=47)) + 0.5
TABLE = arr((7, 3), seed=48)
IDX = np.random.default_rng(49).integers(0, 7, (4, 2, 3)).astype(np.int64)
GIDX = np.random.default_rng(50).integers(0, 5, (4, 3, 2)).astype(np.int64)
M53 = arr((5, 3), seed=54)
MASK = np.random.default_rng(51).random((4, 3, 5)) > 0.5


def F(m):
    return m.nn.functional


OPS = {
    "layer_norm": (lambda m, a: F(m).layer_norm(a, (5,)), 0, (X,)),
    "layer_norm_2d_affine": (lambda m, a, w, b: F(m).layer_norm(a, (3, 5), w, b, eps=1e-3),
                             (0, None, None), (X, arr((3, 5), seed=52), arr((3, 5), seed=53))),
    "group_norm": (lambda m, a, w, b: F(m).group_norm(a, 2, w, b), (0, None, None),
                   (SEQ, W4, W4 + 1)),
    "batch_norm_train": (lambda m, a: F(m).batch_norm(a, None, None, training=True), 0, (SEQ,)),
    "batch_norm_eval": (lambda m, a, rm, rv, w: F(m).batch_norm(a, rm, rv, w), (0, None, None,
                                                                                None),
                        (SEQ, RM, RV, W4)),
    "batch_norm2d_eval": (lambda m, a, rm, rv: F(m).batch_norm(a, rm, rv), (0, None, None),
                          (IMG, RM[:3], RV[:3])),
    "embedding": (lambda m, w, i: F(m).embedding(i, w), (None, 0), (TABLE, IDX)),
    "max_pool2d": (lambda m, a: tuple(F(m).max_pool2d(a, 2, return_indices=True)), 0, (IMG,)),
    "max_pool2d_3d_input": (lambda m, a: F(m).max_pool2d(a[0], 3, stride=2, padding=1), 0,
                            (IMG,)),
    "max_pool1d": (lambda m, a: F(m).max_pool1d(a, 2), 0, (SEQ,)),
    "avg_pool2d": (lambda m, a: F(m).avg_pool2d(a, 3, stride=2, padding=1,
                                                count_include_pad=False), 0, (IMG,)),
    "avg_pool1d": (lambda m, a: F(m).avg_pool1d(a, 2), 0, (SEQ,)),
    "adaptive_pools": (lambda m, a: (F(m).adaptive_avg_pool2d(a, (2, 4)),
                                     F(m).adaptive_max_pool2d(a, 2)), 0, (IMG,)),
    "interpolate": (lambda m, a: (F(m).interpolate(a, scale_factor=2, mode="bilinear"),
                                  F(m).interpolate(a, size=(4, 9), mode="nearest")), 0, (IMG,)),
    "pad": (lambda m, a: (F(m).pad(a, (1, 2)), F(m).pad(a, (1, 1, 2, 0), value=3.0),
                          F(m).pad(a, (2, 1), mode="reflect"),
                          F(m).pad(a, (1, 1), mode="replicate")), 0, (SEQ,)),
    "where_comparison": (lambda m, a, b: m.where(a > b, a, b * 2), (0, None), (X, W5)),
    "comparisons": (lambda m, a, b: ((a >= 0) & (b < 1), a == b, (a != 0).float()), (0, 0),
                    (X, X[::-1].copy())),
    "masked_fill": (lambda m, a, k: (a.masked_fill(k, -1.0), a.masked_fill(k[0], 2.0)),
                    (0, 0), (X, MASK)),
    "masked_fill_unbatched_x": (lambda m, a, k: a.masked_fill(k, 0.0), (None, 0),
                                (X[0], MASK)),
    "gather": (lambda m, a, i: a.gather(1, i), (0, 0), (X, GIDX)),
    "gather_unbatched_index": (lambda m, a, i: a.gather(-1, i), (0, None), (X, GIDX[0])),
    "scatter_add": (lambda m, a, i: m.zeros(3, 5).scatter_add(1, i, a[:, :2]), (0, 0),
                    (X, GIDX)),
    "index_select": (lambda m, a, i: (a.index_select(1, i), a.index_select(0, i[:2] % 3)),
                     (0, None), (X, np.array([4, 0, 2]))),
    "argmax": (lambda m, a: (a.argmax(-1), a.argmin(0, keepdim=True)), 0, (X,)),
    "einsum": (lambda m, a, b: (m.einsum("ij,jk->ik", a, b), m.einsum("ij->j", a),
                                m.einsum("ij,ij->i", a, a)), (0, None), (X, M53)),
    "einsum_both": (lambda m, a, b: m.einsum("ij,kj->ik", a, b), (0, 0), (X, X + 1)),
    "reductions": (lambda m, a: (a.var(-1), a.std(), a.logsumexp(0), a.norm(), a.amax(1),
                                 a.max(), a.min(), m.linalg.vector_norm(a, 1, dim=-1)),
                   0, (X,)),
    "conv2d_batched_weight": (lambda m, x, w, b: F(m).conv2d(x, w, b, padding=1, groups=3),
                              (None, 0, 0), (IMG[0], arr((4, 6, 1, 3, 3), seed=55),
                                             arr((4, 6), seed=56))),
    "conv1d_both_batched": (lambda m, x, w: F(m).conv1d(x, w, stride=2), (0, 0),
                            (SEQ, arr((4, 3, 4, 2), seed=57))),
    "bce": (lambda m, x, t: (F(m).binary_cross_entropy_with_logits(x, t, pos_weight=m.ones(5) * 2),
                             F(m).binary_cross_entropy(x.sigmoid(), t, m.tensor(W5).abs(),
                                                       reduction="sum")),
            (0, 0), (X, MASK.astype(np.float32))),
    "advanced_index": (lambda m, a, i: (a[i], a[:, i], a[i, 1:], a[i[:2], :, None],
                                        a[i[:2], i[1:]], a[..., i], a[1:, i % 3],
                                        a.unsqueeze(1)[i % 3, :, i], a[i % 3, i]), (0, None),
                       (X, np.array([2, 0, 1]))),
    "shape_copies": (lambda m, a: (a.flip(0), a.roll(1, -1), a.diagonal(), a.tril(1),
                                   a.triu(), a.repeat(2, 1, 1), a.unfold(1, 2, 2),
                                   a.t().contiguous()), 0, (X,)),
}


@pytest.mark.parametrize("name", list(OPS))
def test_vmap_of_nn_op_matches_torch_and_a_loop(name):
    fn, in_dims, arrays = OPS[name]
    loops = []
    orig = br._loop
    br._loop = lambda cls, *a: loops.append(cls.__name__) or orig(cls, *a)
    try:
        vmapped(fn, in_dims, *arrays, rtol=1e-4, atol=1e-5)
    finally:
        br._loop = orig
    assert not loops, f"ops without a batching rule ran per sample: {loops}"


def _per_sample_grads(m, fn, x, *params):
    """vmap(grad) over the samples of ``x`` of <fn(x_i, params), r_i> (a random upstream),
    with respect to the sample and the (unbatched) parameters."""
    r = m.tensor(np.random.default_rng(60).standard_normal(
        tuple(fn(m, m.tensor(x[0]), *[m.tensor(p) for p in params]).shape)).astype(np.float32))

    def loss(xi, *ps):
        return (fn(m, xi, *ps) * r).sum()
    argnums = tuple(range(1 + len(params)))
    return m.func.vmap(m.func.grad(loss, argnums=argnums), in_dims=(0,) + (None,) * len(params))(
        m.tensor(x), *[m.tensor(p) for p in params])


GRADS = {
    "layer_norm": (lambda m, a, w, b: F(m).layer_norm(a, (5,), w, b), X, W5, B5),
    "group_norm": (lambda m, a, w: F(m).group_norm(a, 2, w), SEQ, W4),
    "batch_norm_train": (lambda m, a, w, b: F(m).batch_norm(a, None, None, w, b,
                                                            training=True), SEQ, W4, W4 * 0.5),
    "batch_norm_eval": (lambda m, a, w: F(m).batch_norm(a, m.tensor(RM), m.tensor(RV), w),
                        SEQ, W4),
    "pools": (lambda m, a: F(m).max_pool2d(a, 2).sum() + F(m).avg_pool2d(a, 3, 1, 1)
              + F(m).adaptive_avg_pool2d(a, 2).mean(), IMG),
    "interpolate_pad": (lambda m, a: F(m).pad(F(m).interpolate(a, scale_factor=2,
                                                               mode="linear"), (1, 1),
                                              mode="reflect"), SEQ),
    "embedding": (lambda m, a, w: F(m).embedding(m.tensor([[1, 4], [6, 0], [2, 2]]), w) * a[
        :, :2, None], X, TABLE),
    "gather_masked_fill": (lambda m, a: a.gather(1, m.tensor([[0, 4], [2, 2], [1, 3]]))
                           .masked_fill(a[:, :2] > 0, 0.5), X),
    "conv_ensemble": (lambda m, w, x: F(m).conv2d(x, w, padding=1).tanh(), arr((4, 3, 2, 3, 3),
                                                                               seed=62),
                      IMG[0, :, :2]),
    "advanced_index": (lambda m, a: a[:, m.tensor([4, 0, 0])].exp() + a.unsqueeze(1)[
        m.tensor([0, 2, 2]), :, m.tensor([1, 1, 3])], X),
    "einsum_reductions": (lambda m, a, b: m.einsum("ij,jk->ik", a, b).logsumexp(-1)
                          + a.var(-1) + a.norm(dim=-1), X, arr((5, 2), seed=61)),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_vmap_grad_through_nn_rules_matches_torch_func(name):
    fn, x, *params = GRADS[name]
    loops = []
    orig = br._loop
    br._loop = lambda cls, *a: loops.append(cls.__name__) or orig(cls, *a)
    try:
        e = _per_sample_grads(ember, fn, x, *params)
    finally:
        br._loop = orig
    t = _per_sample_grads(torch, fn, x, *params)
    _close(_np(e), _np(t), rtol=1e-4, atol=1e-5)
    assert not loops, f"ops without a batching rule ran per sample: {loops}"


def test_ufunc_on_batched_arrays_aligns_unbatched_operands_of_higher_rank():
    # a (3,)-sample against an unbatched (2, 3): the sample's dims pair with the trailing ones
    vmapped(lambda m, a, b: (a < b, m.where(a > b, a, b)), (0, None), X[:, 0], X[0, :2])
    vmapped(lambda m, a, b: (a < b) & (b > 0), (0, 0), X, X[:, 0])


def test_nested_vmap_of_a_comparison_falls_back_and_matches_torch():
    vmapped(lambda m, a: m.func.vmap(lambda r: m.where(r > 0, r, -r))(a), 0, X, once=False)


@pytest.mark.parametrize("randomness", ["same", "different"])
@pytest.mark.parametrize("kind", ["dropout", "dropout1d"])
def test_dropout_under_randomness_modes_is_batched_and_equals_the_loop(randomness, kind):
    x = ember.tensor(np.abs(SEQ) + 0.1)  # no zeros: a zero in the output is a dropped unit
    drop = getattr(ember.nn.functional, kind)
    calls = []

    def f(a):
        calls.append(1)
        return drop(a, 0.4)
    ember.manual_seed(3)
    got = ember.func.vmap(f, randomness=randomness)(x)
    assert len(calls) == 1
    ember.manual_seed(3)
    state = ember.random.get_rng_state()
    loop = []
    for i in range(4):  # vmap's semantics: "same" replays the draws, "different" goes on
        if randomness == "same":
            ember.random.set_rng_state(state)
        loop.append(f(x[i]))
    np.testing.assert_array_equal(got.numpy(), ember.stack(loop).numpy())
    dropped = got.numpy() == 0
    for i in range(1, 4):
        assert np.array_equal(dropped[i], dropped[0]) == (randomness == "same")
    # torch's masks obey the same rule (its numbers differ: it draws the batch at once)
    t = torch.func.vmap(lambda a: getattr(torch.nn.functional, kind)(a, 0.4),
                        randomness=randomness)(torch.tensor(np.abs(SEQ) + 0.1)).numpy() == 0
    assert all(np.array_equal(t[i], t[0]) == (randomness == "same") for i in range(1, 4))


def test_other_random_ops_under_different_still_run_per_sample():
    calls = []

    def f(a):
        calls.append(1)
        return a + ember.randn(5)
    out = ember.func.vmap(f, randomness="different")(ember.tensor(X))
    assert len(calls) == 5  # the batched try refused the draw; then one call per sample
    assert not np.allclose(out[0].numpy() - X[0], out[1].numpy() - X[1])
