"""The three FFT primitives torch differentiates (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``),
with torch's backward formulas (derivatives.yaml's fft_*_backward).

Each takes the dims it transforms and ``scale``, the normalisation as a factor that ember
works out once (1, 1/sqrt(n) or 1/n of the signal size): NumPy computes the unscaled sums.
Gradients are in torch's complex convention (ember/ops/_complex_grad.py): every transform
is linear, so the gradient is the adjoint, which is the opposite-direction transform with
the same scale; the one-sided transforms pad or fold the half spectrum as torch does.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op


def _c2c(x: np.ndarray, dims: tuple, forward: bool) -> np.ndarray:
    if forward:
        return np.fft.fftn(x, axes=dims)
    return np.fft.ifftn(x, axes=dims, norm="forward")  # "forward": the inverse unscaled


def _scaled(out: np.ndarray, scale: float, dtype) -> np.ndarray:
    out = out.astype(dtype, copy=False)
    if scale != 1:
        out *= out.real.dtype.type(scale)
    return out


class FftC2C(Op):
    node_name = "FftC2CBackward0"
    complex_grad = "own"

    @staticmethod
    def forward(ctx, x, dims=(), scale=1.0, forward=True):
        ctx.dims, ctx.scale, ctx.forward = dims, scale, forward
        return _scaled(_c2c(x, dims, forward), scale, x.dtype)

    @staticmethod
    def backward(ctx, g):
        return FftC2C.apply(g, dims=ctx.dims, scale=ctx.scale, forward=not ctx.forward)


class FftR2C(Op):
    """Real to complex, forward direction; ``onesided`` keeps the last dim's first n//2+1
    bins (the rest are their conjugates)."""

    node_name = "FftR2CBackward0"
    complex_grad = "own"

    @staticmethod
    def forward(ctx, x, dims=(), scale=1.0, onesided=True):
        ctx.dims, ctx.scale, ctx.onesided = dims, scale, onesided
        ctx.n = x.shape[dims[-1]] if dims else 0
        cdt = np.complex64 if x.dtype == np.float32 else np.complex128
        out = np.fft.rfftn(x, axes=dims) if onesided else np.fft.fftn(x, axes=dims)
        return _scaled(out, scale, cdt)

    @staticmethod
    def backward(ctx, g):
        if ctx.onesided:  # the missing bins get no gradient: zeros, then the full inverse
            last = ctx.dims[-1] % g.ndim
            pads = tuple((0, ctx.n - g.shape[last]) if d == last else (0, 0)
                         for d in range(g.ndim))
            from ember.ops.pool import ConstantPadNd

            g = ConstantPadNd.apply(g, pads=pads, value=0)
        return FftC2C.apply(g, dims=ctx.dims, scale=ctx.scale, forward=False).real


class FftC2R(Op):
    """Complex (a one-sided half spectrum) to real, inverse direction, ``n`` points along the
    last dim."""

    node_name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, x, dims=(), scale=1.0, n=0):
        ctx.dims, ctx.scale = dims, scale
        rdt = np.float32 if x.dtype == np.complex64 else np.float64
        s = [x.shape[d] for d in dims[:-1]] + [n]
        out = np.fft.irfftn(x, s=s, axes=dims, norm="forward")
        return _scaled(out, scale, rdt)

    @staticmethod
    def backward(ctx, g):
        gi = FftR2C.apply(g, dims=ctx.dims, scale=ctx.scale, onesided=True)
        last = ctx.dims[-1] % g.ndim
        double = g.shape[last] - gi.shape[last]  # bins that stand for two in the full spectrum
        if double > 0:
            w = np.ones(gi.shape[last], dtype=g._data.dtype)
            w[1:1 + double] = 2
            gi = gi * Tensor._make(w.reshape((-1,) + (1,) * (g.ndim - 1 - last)))
        return gi
