"""Fused normalization: batch norm, layer norm, group norm.

One forward on arrays computes the statistics and the affine output; backward is written with
ember ops. With ``create_graph`` the statistics are recomputed from the saved input with ember
ops so second derivatives see their dependence on the input; a plain backward uses the saved
statistics as constants (fewer passes over the data).

Geometry kwargs (all on the input's shape): ``gshape`` reshapes the input so that ``sdims`` are
the dims each statistic runs over (group norm views (N, G, -1)); ``ashape`` is the affine
parameters' broadcast shape; ``pdims`` the dims their gradients sum over.
"""

from __future__ import annotations

import math

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops._common import row_sum, short_rows
from ember.ops._promote import scalar


def _stats(xg: np.ndarray, sdims: tuple, eps: float):
    if xg.size == 0:  # empty batch: statistics are NaN, the (empty) output is unaffected
        shape = tuple(1 if i in sdims else n for i, n in enumerate(xg.shape))
        nan = xp_of(xg).full(shape, np.nan, dtype=xg.dtype)
        return xg.copy(), nan, nan, nan
    if len(sdims) == 1 and short_rows(xg, sdims[0], 1024):
        # layer norm over one short last dim: row sums through BLAS (NumPy's reduction loops
        # once per row)
        n = xg.shape[-1]
        mean = row_sum(xg, sdims[0]) / n
        xc = xg - mean
        var = row_sum(np.square(xc), sdims[0]) / n
    else:
        mean = xg.mean(axis=sdims, keepdims=True)
        xc = xg - mean
        var = np.mean(np.square(xc), axis=sdims, keepdims=True)
    invstd = 1.0 / np.sqrt(var + scalar(eps, xg.dtype))
    return xc, mean, var, invstd


def _per_channel(geom: tuple, x: np.ndarray) -> bool:
    """Batch norm's statistics: over every dim but the channels (dim 1), of a non-empty x."""
    return geom[0] is None and geom[1] == geom[3] == (0, *range(2, x.ndim)) and x.size > 0


def channel_sum(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Per-channel sums of ``a`` (or of ``a * b``) over every dim but dim 1, shape (C,).
    Matrix products against ones (or row-by-row dot products) read the data once, ~3x
    faster than NumPy's reduction over the non-adjacent dims (0, 2, ...)."""
    a3 = a.reshape(a.shape[0], a.shape[1], -1)
    if b is None:
        return np.matmul(a3, xp_of(a).ones(a3.shape[2], dtype=a.dtype)).sum(0)
    b3 = b.reshape(a3.shape)
    return np.matmul(a3[:, :, None, :], b3[:, :, :, None]).sum(0).reshape(-1)


def _channel_stats(x: np.ndarray, ashape: tuple, eps: float):
    """``_stats`` of batch norm: mean, then the variance of the centred values (two passes
    over the data, as torch's), each shaped ``ashape``."""
    count = x.size // x.shape[1]
    mean = (channel_sum(x) / count).reshape(ashape)
    xc = x - mean
    var = (channel_sum(xc, xc) / count).reshape(ashape)
    invstd = 1.0 / np.sqrt(var + scalar(eps, x.dtype))
    return xc, mean, var, invstd


def _psum(t: Tensor, dims: tuple) -> Tensor:
    return t.sum(dims) if dims else t


class _Norm(Op):
    """Shared forward/backward; subclasses carry torch's node names and what it saves.

    Saved, as torch: the input, the affine parameters the caller gave (``saves``, set per call
    by ``norm_apply``: batch and group norm save the weight, layer norm the bias too), the
    running statistics if given (``running``), then the batch mean and inverse std (empty in
    eval mode, where backward derives them from the running statistics)."""

    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, w, b, geom=None, eps=1e-5, stats=None, running=None):
        gshape, sdims, ashape, _ = geom
        xg = x.reshape(gshape) if gshape else x
        # an inf in x makes inf - inf (NaN statistics, as in torch, which does not warn)
        with np.errstate(invalid="ignore"):
            if stats is None and _per_channel(geom, x):
                y, mean, var, invstd = _channel_stats(x, ashape, eps)
            elif stats is None:
                y, mean, var, invstd = _stats(xg, sdims, eps)  # y: x - mean, scaled below
            else:  # batch norm in eval mode: the running statistics are constants
                mean, var = stats
                invstd = 1.0 / np.sqrt(var + scalar(eps, x.dtype))
                y = xg - mean
        if gshape is None and sdims == geom[3]:
            # Per-channel affine (batch norm): fold invstd into the scale, two passes.
            y *= invstd * w.reshape(ashape)
        else:
            y *= invstd
            y = y.reshape(x.shape)
            y *= w.reshape(ashape)
        y += b.reshape(ashape)
        ctx.geom, ctx.eps, ctx.fixed, ctx.pshape = geom, eps, stats is not None, w.shape
        if stats is None:
            ctx.save_extra(*running or (), mean, invstd)
        else:
            empty = x[:0].reshape(0)
            ctx.save_extra(*running, empty, empty)
        return y, mean.reshape(-1), var.reshape(-1)

    @classmethod
    def backward(cls, ctx, g, _gm=None, _gv=None):
        saved = ctx.saved_tensors
        x, w = saved[0], saved[1] if 1 in cls.saves else None
        need = ctx.needs_input_grad
        gshape, sdims, ashape, pdims = ctx.geom
        xg = x.reshape(gshape) if gshape else x
        if ctx.fixed:
            mean = saved[-4]._data.reshape(ashape)
            invstd = 1.0 / np.sqrt(saved[-3]._data.reshape(ashape) + scalar(ctx.eps, x._data.dtype))
        else:
            mean, invstd = saved[-2]._data, saved[-1]._data
        if not STATE.enabled:
            if not ctx.fixed and gshape is None and sdims == pdims:
                return _batch_norm_backward_fast(ctx, g, x, w, mean, invstd, need)
            return _norm_backward_arrays(ctx, g, x, w, mean, invstd, need)
        if STATE.enabled and not ctx.fixed:
            mean = xg.mean(sdims, keepdim=True)
            xc = xg - mean
            invstd = ((xc * xc).mean(sdims, keepdim=True) + ctx.eps) ** -0.5
        else:
            mean, invstd = Tensor._make(mean), Tensor._make(invstd)
            xc = xg - mean
        xhat = (xc * invstd).reshape(x.shape)
        gw = _psum(g * xhat, pdims).reshape(ctx.pshape) if need[1] else None
        gb = _psum(g, pdims).reshape(ctx.pshape) if need[2] else None
        gx = None
        if need[0]:
            gh = g * w.reshape(ashape) if w is not None else g
            if ctx.fixed:
                gx = gh * invstd.reshape(ashape)
            else:
                gh = gh.reshape(gshape) if gshape else gh
                xh = xhat.reshape(gshape) if gshape else xhat
                gx = invstd * (gh - gh.mean(sdims, keepdim=True)
                               - xh * (gh * xh).mean(sdims, keepdim=True))
                gx = gx.reshape(x.shape)
        return gx, gw, gb


def _norm_backward_arrays(ctx, g: Tensor, x: Tensor, w: Tensor | None, mean, invstd,
                          need) -> tuple:
    """The plain backward of the general formulas above (layer and group norm, batch norm in
    eval mode): the same expressions in the same order, on arrays, without a graph op each."""
    gshape, sdims, ashape, pdims = ctx.geom
    gd, xd = g._data, x._data
    xhat = (((xd.reshape(gshape) if gshape else xd) - mean) * invstd).reshape(xd.shape)
    gw = _asum(gd * xhat, pdims).reshape(ctx.pshape) if need[1] else None
    gb = _asum(gd, pdims).reshape(ctx.pshape) if need[2] else None
    gx = None
    if need[0]:
        gh = gd * w._data.reshape(ashape) if w is not None else gd
        if ctx.fixed:
            gx = gh * invstd.reshape(ashape)
        else:
            gh = gh.reshape(gshape) if gshape else gh
            xh = xhat.reshape(gshape) if gshape else xhat
            gx = invstd * (gh - _amean(gh, sdims) - xh * _amean(gh * xh, sdims))
            gx = gx.reshape(xd.shape)
    return tuple(None if a is None else Tensor._make(a) for a in (gx, gw, gb))


def _asum(a: np.ndarray, dims: tuple) -> np.ndarray:
    """``_psum`` on arrays (ember's sum: in the array's dtype)."""
    return a.sum(axis=dims, dtype=a.dtype) if dims else a


def _amean(a: np.ndarray, dims: tuple) -> np.ndarray:
    """ember's ``mean(dims, keepdim=True)`` on arrays: the sum in a's dtype, then / count."""
    n = math.prod(a.shape[d] for d in dims)
    out = row_sum(a, dims[0], a.dtype) if len(dims) == 1 else \
        a.sum(axis=dims, dtype=a.dtype, keepdims=True)
    return out / n if n else xp_of(a).full_like(out, np.nan)


def _batch_norm_backward_fast(ctx, g: Tensor, x: Tensor, w: Tensor | None, mean, invstd,
                              need) -> tuple:
    """First-order batch-norm backward with per-channel coefficients (fewer passes):
    ``gx = a * (g + k * (x - mean) + c)``. Only used without create_graph (statistics are
    constants), so it runs on arrays, in one full-size buffer (the centred input)."""
    ashape = ctx.geom[2]
    gd, xd = g._data, x._data
    m = max(xd.size // invstd.size, 1)
    sum_g = channel_sum(gd).reshape(ashape)
    buf = xd - mean
    sum_gxhat = channel_sum(buf, gd).reshape(ashape) * invstd
    gx = None
    if need[0]:
        buf *= invstd * sum_gxhat * (-1.0 / m)
        buf += sum_g * (-1.0 / m)
        buf += gd
        buf *= w._data.reshape(ashape) * invstd if w is not None else invstd
        gx = Tensor._make(buf)
    gw = Tensor._make(sum_gxhat.reshape(ctx.pshape)) if need[1] else None
    gb = Tensor._make(sum_g.reshape(ctx.pshape)) if need[2] else None
    return gx, gw, gb


class NativeBatchNorm(_Norm):
    node_name = "NativeBatchNormBackward0"
    saves_bias = False


class NativeLayerNorm(_Norm):
    node_name = "NativeLayerNormBackward0"
    saves_bias = True


class NativeGroupNorm(_Norm):
    node_name = "NativeGroupNormBackward0"
    saves_bias = False


def norm_apply(op, x: Tensor, weight, bias, geom: tuple, eps: float, pshape: tuple,
               stats=None, running=None):
    """Call a norm primitive; missing affine parameters (of shape ``pshape``) act as ones and
    zeros, and are not saved. ``running``: the running statistics' arrays, if any (saved for
    backward, as torch). Returns (y, mean, biased var), the statistics flat."""
    shape = tuple(pshape)
    saves = (0,) + ((1,) if weight is not None else ()) + \
        ((2,) if bias is not None and op.saves_bias else ())
    if weight is None:
        weight = Tensor._make(xp_of(x._data).ones(shape, dtype=x._data.dtype))
    if bias is None:
        bias = Tensor._make(xp_of(x._data).zeros(shape, dtype=x._data.dtype))
    return _saving(op, saves).apply(x, weight, bias, geom=geom, eps=eps, stats=stats,
                                    running=running)


def _saving(op: type, saves: tuple) -> type:
    """``op`` saving the inputs ``saves`` (the affine parameters the caller gave)."""
    key = (op, saves)
    if key not in _SAVING:
        _SAVING[key] = type(op.__name__, (op,), {"saves": saves, "node_name": op.node_name,
                                                 "__module__": op.__module__})
    return _SAVING[key]


_SAVING: dict = {}
