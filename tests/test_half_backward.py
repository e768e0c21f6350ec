"""Half-precision backward: the engine's sum of a broadcast gradient (in float32, as torch)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

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
