"""Half-precision backward: the engine's sum of a broadcast gradient (in float32, as torch), a
matrix product's gradient upcast once for both input gradients (the same bits as one upcast per
product), and the plain backward's casts around the float32-math ops (the same bits as the
graph's casts of a double backward)."""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember.ops import _lowp

RNG = np.random.default_rng(0)
ULP = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10}  # relative spacing at 1


def _np(t) -> np.ndarray:
    return t.detach().float().numpy()


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_broadcast_gradient_sums_in_float32_as_torch(dt):
    """The bias of an autocast linear and the broadcast operand of a half-precision add: a
    plain backward sums the rows in float32 and rounds once, as the graph's ``sum`` and torch's
    sum_to do (adding in the half type would drift by several units in the last place)."""
    x = RNG.standard_normal((1024, 16)).astype(np.float32)
    w = (RNG.standard_normal((8, 16)) * 0.1).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    g = RNG.standard_normal((1024, 8)).astype(np.float32)

    def run(L, create_graph=False):
        hd = getattr(L, dt)
        wt, bt = L.tensor(w, requires_grad=True), L.tensor(b, requires_grad=True)
        with L.autocast("cpu", dtype=hd):
            y = L.nn.functional.linear(L.tensor(x), wt, bt)
        r = L.tensor(b).to(hd).requires_grad_()
        z = L.tensor(x[:, :8]).to(hd) + r  # r broadcast over the rows
        grads = L.autograd.grad((y, z), (bt, r), (L.tensor(g).to(hd),) * 2,
                                create_graph=create_graph)
        return [_np(t) for t in grads]

    plain, graph, ref = run(ember), run(ember, True), run(torch)
    for p, q, t in zip(plain, graph, ref):
        np.testing.assert_array_equal(p, q)
        np.testing.assert_allclose(p, t, rtol=ULP[dt], atol=0)


def _product_grads(kind: str, a: np.ndarray, b: np.ndarray, g: np.ndarray, dt: str) -> list:
    """Gradients of a half-precision product for the upstream gradient ``g`` (raw bits)."""
    hd = getattr(ember, dt)
    at = ember.tensor(a).to(hd).requires_grad_()
    bt = ember.tensor(b).to(hd).requires_grad_()
    if kind == "linear":  # weight b (out, in): the weight's side is column-major
        y = ember.nn.functional.linear(at, bt)
    elif kind == "mm":
        y = at.mm(bt)
    else:  # "mm_t": the product's gradient comes in transposed (F-contiguous)
        y = at.mm(bt).t()
        g = g.T.copy()
    y.backward(ember.tensor(g).to(hd))
    return [t.grad._data.view(np.uint16).copy() for t in (at, bt)]


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("kind", ["linear", "mm", "mm_t"])
@pytest.mark.parametrize("n,k,m", [(64, 48, 32), (1, 8, 5), (7, 1, 3), (5, 6, 1), (2, 2, 2)])
def test_gradient_upcast_once_gives_the_bits_of_two_upcasts(monkeypatch, dt, kind, n, k, m):
    """Both input gradients of mm / linear multiply the output's gradient: it is upcast once
    and the copy (or its transpose) feeds both GEMMs, which must see what upcasting each
    operand gave (same values, same layout, so the same BLAS call): equal bits."""
    a = RNG.standard_normal((n, k)).astype(np.float32)
    b = RNG.standard_normal((m, k) if kind == "linear" else (k, m)).astype(np.float32)
    g = RNG.standard_normal((n, m)).astype(np.float32)
    shared = []
    upcast = _lowp.upcast

    def spy(x):
        out = upcast(x)
        shared.append(any(out is c or out.base is c for _, c in _lowp._SHARED.values()))
        return out

    monkeypatch.setattr(_lowp, "upcast", spy)
    once = _product_grads(kind, a, b, g, dt)
    # (TBackward hands mm_t's product a view: not shared; nor a gradient with a length-1 dim)
    assert sum(shared) == (2 if kind != "mm_t" and min(n, m) > 1 else 0)
    monkeypatch.setattr(_lowp, "upcast_once", lambda x: contextlib.nullcontext())
    twice = _product_grads(kind, a, b, g, dt)
    for p, q in zip(once, twice):
        np.testing.assert_array_equal(p, q)


def test_gradient_upcast_once_skips_views_and_restores():
    """A gradient that is a view of other memory is not shared (its transpose's base is not
    it); the copy is dropped when the block ends, also on an error."""
    g = np.zeros((4, 6), ml_dtypes.bfloat16)
    with _lowp.upcast_once(g[:, :3]):
        assert not _lowp._SHARED
    with pytest.raises(ValueError), _lowp.upcast_once(g):
        assert _lowp.upcast(g.T).base is _lowp._SHARED[id(g)][1]
        raise ValueError
    assert not _lowp._SHARED


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", ["relu", "tanh", "sigmoid", "softmax", "sum"])
def test_plain_backward_casts_give_the_graph_bits(dt, op):
    """The float32-math ops' backward upcasts its gradients and rounds its results: a plain
    backward casts the arrays, create_graph runs the cast ops; the bits agree, and match torch
    up to rounding."""
    x = RNG.standard_normal((6, 10)).astype(np.float32)
    g = RNG.standard_normal((6, 10)).astype(np.float32)

    def run(L, create_graph=False):
        xt = L.tensor(x).to(getattr(L, dt)).requires_grad_()
        f = {"relu": L.relu, "tanh": L.tanh, "sigmoid": L.sigmoid,
             "softmax": lambda t: L.softmax(t, 1), "sum": lambda t: t.sum(1, keepdim=True)}[op]
        y = f(xt)
        gy = L.tensor(g[:, :y.shape[1]]).to(y.dtype)
        (gx,) = L.autograd.grad(y, xt, gy, create_graph=create_graph)
        return gx

    plain, graph = run(ember), run(ember, True)
    assert plain.dtype == graph.dtype == getattr(ember, dt)
    np.testing.assert_array_equal(plain._data.view(np.uint16), graph._data.view(np.uint16))
    t = run(torch)
    np.testing.assert_allclose(_np(plain), _np(t), rtol=2 * ULP[dt], atol=2 * ULP[dt])
