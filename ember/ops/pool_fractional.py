"""Fractional max pooling (Graham, 2014): max over ``kernel_size`` windows whose starts step
pseudo-randomly so that ``output_size`` windows span the input; torch's interval rule and
flat per-plane indices. The gradient is the pooling scatter of ``pool.py`` (its backward the
gather), so double backward works."""

from __future__ import annotations

import math

import numpy as np

from ember._backend import on_device_of
from ember.autograd.function import Op
from ember.ops.pool import _gather, _ravel, _scatter_back, _unravel


def intervals(sample: np.ndarray, n: int, o: int, k: int) -> np.ndarray:
    """torch's ``generate_intervals`` for each plane's sample: (..., o) window starts, the
    arithmetic in the samples' dtype, the last window flush with the end."""
    dt = sample.dtype.type
    seq = np.empty(sample.shape + (o,), dtype=np.int64)
    if o > 1:
        alpha = dt(n - k) / dt(o - 1)
        i = np.arange(o - 1).astype(dt)
        s = sample[..., None]
        # static_cast<int> truncates; both products are non-negative
        seq[..., :-1] = ((i + s) * alpha).astype(np.int64) - (s * alpha).astype(np.int64)
    if o > 0:
        seq[..., -1] = n - k
    return seq


class FractionalMaxPool(Op):
    node_name = "FractionalMaxPool{}DBackward0"
    saves = (0,)
    saves_output = (1,)

    @staticmethod
    def forward(ctx, x, ksize=(), osize=(), samples=None):
        n, c, *size = x.shape
        ctx.shape = x.shape
        nd = len(size)
        # the sample of each spatial dim: 2-D reads (W, H), 3-D (T, H, W)
        cols = (1, 0) if nd == 2 else tuple(range(nd))
        starts = [on_device_of(x, intervals(samples[:n, :, col], s, o, k))
                  for col, s, o, k in zip(cols, size, osize, ksize)]
        # dim d's (N, C, o_d, k_d) positions index axes (2 + 2d, 3 + 2d) of the window grid
        lead = (np.arange(n).reshape((n,) + (1,) * (1 + 2 * nd)),
                np.arange(c).reshape((1, c) + (1,) * (2 * nd)))
        grid = [(st[..., None] + np.arange(k)).reshape(
                    (n, c) + (1,) * 2 * d + (o, k) + (1,) * 2 * (nd - 1 - d))
                for d, (st, o, k) in enumerate(zip(starts, osize, ksize))]
        win = x[(*lead, *grid)]
        win = win.transpose(0, 1, *range(2, 2 + 2 * nd, 2), *range(3, 2 + 2 * nd, 2))
        win = win.reshape(n, c, *osize, math.prod(ksize))
        arg = win.argmax(-1)  # the first maximum, as torch's strict ``>``
        nan = np.isnan(win)
        if nan.any():  # torch's ``|| isnan(val)`` keeps the last NaN of a window
            last = win.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
            arg = np.where(nan.any(-1), last, arg)
        coords = [st.reshape((n, c) + (1,) * d + (o,) + (1,) * (nd - 1 - d)) + off
                  for d, (st, o, off) in enumerate(zip(starts, osize, _unravel(arg, ksize)))]
        idx = _ravel(coords, size).astype(np.int64)
        return _gather(x, idx), idx

    @staticmethod
    def backward(ctx, g, _gidx=None):
        return _scatter_back(ctx, g, ctx.saved_tensors[1], False)
