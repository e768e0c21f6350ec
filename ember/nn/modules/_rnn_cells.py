"""The gate math of one RNN / LSTM / GRU time step (what the layers and cells call).

LSTM and GRU steps are one fused node each: fewer graph nodes per time step is most of an
RNN's speed in Python. Their activations are hidden outputs of the node, so that backward
reads them as torch's composite CPU cell reads its intermediates: saved as torch saves them
(each once per tensor torch's ops save, under the same guards), and differentiable again
through the node (double backward works).
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.nn._functional.linear import linear
from ember.ops.joining import cat


def _rnn_cell(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh, relu: bool) -> Tensor:
    pre = x_proj + linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.tanh(0.5 * x) + 0.5  # overflow-free logistic, same dtype


class LSTMCellFused(Op):
    """The LSTM gate math as one node: (gates, c_prev) -> (h, c), plus the activations
    (sigmoid i, f, o, tanh g, tanh c) as hidden outputs."""

    node_name = "LSTMCellBackward0"
    saves = (1,)
    # outputs: 0 h, 1 c, 2 si, 3 sf, 4 tg, 5 so, 6 tc; saved as torch's sigmoid/tanh nodes
    # (si, sf, tg, so), f * cx (sf for cx, cx for f), i * g, tanh(c), o * tanh(c) save them.
    saves_output = (2, 3, 4, 5, 3, 2, 4, 6, 5, 6)
    save_for = ((0,), (0,), (0,), (0,), (0,), (1,), (0,), (0,), None, None, (0,))

    @staticmethod
    def forward(ctx, gates, c_prev):
        i, f, g, o = np.split(gates, 4, axis=-1)
        si, sf, so, tg = _sigmoid(i), _sigmoid(f), _sigmoid(o), np.tanh(g)
        c = sf * c_prev + si * tg
        tc = np.tanh(c)
        return so * tc, c, si, sf, tg, so, tc

    @staticmethod
    def backward(ctx, gh, gc, gsi, gsf, gtg, gso, gtc):
        c_prev, si, sf, tg, so, sf2, _, _, tc, so2, _ = ctx.saved_tensors
        sf = sf if sf is not None else sf2  # (saved twice, under different guards)
        so = so if so is not None else so2
        if gh is not None:
            gtc, gso = _add(gtc, gh * so), _add(gso, gh * tc)
        dc = _add(gc, _mul(gtc, 1 - tc * tc))
        need = ctx.needs_input_grad
        d_gates = None
        if need[0]:
            grads = (_add(gsi, _mul(dc, tg)), _add(gsf, _mul(dc, c_prev)),
                     _add(gtg, _mul(dc, si)), gso)
            local = (si * (1 - si), sf * (1 - sf), 1 - tg * tg, so * (1 - so))
            d_gates = cat([d * 0 if g is None else g * d for g, d in zip(grads, local)], -1)
        return d_gates, (_mul(dc, sf) if need[1] else None)


def _add(a, b):
    """``a + b`` where either may be None (no gradient)."""
    return b if a is None else a if b is None else a + b


def _mul(a, b):
    return None if a is None else a * b


def _lstm_cell(x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh, w_hr=None):
    h, c = LSTMCellFused.apply(x_proj + linear(h, w_hh, b_hh), c)[:2]
    if w_hr is not None:
        h = linear(h, w_hr)
    return h, c


class GRUCellFused(Op):
    """The GRU gate math as one node: (input projection, hidden projection, h) -> h', plus
    r, z, n and h - n as hidden outputs."""

    node_name = "GRUCellBackward0"
    saves = (1,)
    # outputs: 0 h', 1 r, 2 z, 3 n, 4 h - n; saved as torch's sigmoid (r, z), hn.mul_(r)
    # (hn, i.e. the hidden projection, for r; r for hn), tanh (n), (h - n).mul_(z) save them.
    saves_output = (1, 2, 1, 3, 2, 4)
    save_for = ((0, 1), (0, 1), (0, 1), (1,), (0, 1), None, (0, 1))

    @staticmethod
    def forward(ctx, xp, hp, h):
        xr, xz, xn = np.split(xp, 3, axis=-1)
        hr, hz, hn = np.split(hp, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        hmn = h - n
        return n + z * hmn, r, z, n, hmn  # (1 - z) * n + z * h

    @staticmethod
    def backward(ctx, g, gr, gz, gn, ghmn):
        hp, r, z, r2, n, z2, hmn = ctx.saved_tensors
        r = r if r is not None else r2
        z = z if z is not None else z2
        d_hmn = _add(ghmn, _mul(g, z))
        dz = _add(gz, _mul(g, hmn))
        dn = _add(_add(gn, g), _mul(d_hmn, -1))
        need = ctx.needs_input_grad
        if not (need[0] or need[1]):
            return None, None, d_hmn
        d_an = _mul(dn, 1 - n * n)
        dr = _add(gr, _mul(d_an, hp.chunk(3, -1)[2]))
        zero = r * 0
        d_ar = zero if dr is None else dr * (r * (1 - r))
        d_az = zero if dz is None else dz * (z * (1 - z))
        d_an = zero if d_an is None else d_an
        return (cat([d_ar, d_az, d_an], -1) if need[0] else None,
                cat([d_ar, d_az, d_an * r], -1) if need[1] else None,
                d_hmn if need[2] else None)


def _gru_cell(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh) -> Tensor:
    return GRUCellFused.apply(x_proj, linear(h, w_hh, b_hh), h)[0]
