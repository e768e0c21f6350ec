"""Pooling over strided windows: max, average and their adaptive forms.

Every primitive works on (N, C, H, W) arrays and loops over kernel positions only (kh * kw
strided steps, each vectorized over batch, channels and pixels). Max pooling is a gather at
argmax indices (torch's flat per-plane indices); its backward is the matching scatter, whose
backward is the gather again, so double backward works. Average pooling and its adjoint are a
pair of primitives in the same way. 1-D pools are 2-D ones with a height of 1.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op


def _out_len(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _padded(x: np.ndarray, pad, osize, ksize, stride, dil, fill) -> np.ndarray:
    """``x`` padded with ``fill``: ``pad`` before, and after as far as the last window reaches."""
    hi = [max((o - 1) * s + d * (k - 1) + 1 - n - p, 0)
          for o, s, d, k, n, p in zip(osize, stride, dil, ksize, x.shape[2:], pad)]
    if not any(pad) and not any(hi):
        return x
    widths = [(0, 0), (0, 0), (pad[0], hi[0]), (pad[1], hi[1])]
    return np.pad(x, widths, constant_values=fill)


def _tap(xp: np.ndarray, i: int, j: int, osize, stride, dil) -> tuple:
    """Index of the strided view of ``xp`` that kernel position (i, j) sees."""
    return (slice(None), slice(None),
            slice(i * dil[0], i * dil[0] + stride[0] * (osize[0] - 1) + 1, stride[0]),
            slice(j * dil[1], j * dil[1] + stride[1] * (osize[1] - 1) + 1, stride[1]))


# --- max pooling ---------------------------------------------------------------------------


def _max_pool(x, ksize, stride, pad, dil, osize):
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _padded(x, pad, osize, ksize, stride, dil, fill)
    best = xp[_tap(xp, 0, 0, osize, stride, dil)].copy()
    arg = np.zeros(best.shape, dtype=np.int8 if ksize[0] * ksize[1] < 128 else np.int64)
    for k in range(1, ksize[0] * ksize[1]):
        v = xp[_tap(xp, k // ksize[1], k % ksize[1], osize, stride, dil)]
        # Strictly greater keeps the first maximum; NaN wins, as in torch.
        m = v > best
        if x.dtype.kind == "f":
            m |= v != v
        np.copyto(best, v, where=m)
        np.copyto(arg, k, where=m)
    rows = np.arange(osize[0]).reshape(-1, 1) * stride[0] - pad[0] + (arg // ksize[1]) * dil[0]
    cols = np.arange(osize[1]) * stride[1] - pad[1] + (arg % ksize[1]) * dil[1]
    return best, rows * x.shape[3] + cols


def _scatter(g: np.ndarray, idx: np.ndarray, shape: tuple, unique: bool) -> np.ndarray:
    n, c, h, w = shape
    out = np.zeros((n * c, h * w), dtype=g.dtype)
    per = idx.shape[2] * idx.shape[3]
    i2, g2 = idx.reshape(n * c, per), g.reshape(n * c, per)
    if unique:
        np.put_along_axis(out, i2, g2, axis=1)
    else:
        np.add.at(out, (np.arange(n * c)[:, None], i2), g2)
    return out.reshape(shape)


def _gather(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    flat = x.reshape(n * c, h * w)
    per = idx.shape[2] * idx.shape[3]
    return np.take_along_axis(flat, idx.reshape(n * c, per), axis=1).reshape(idx.shape)


class MaxPool2d(Op):
    node_name = "MaxPool2DWithIndicesBackward0"

    @staticmethod
    def forward(ctx, x, ksize=(1, 1), stride=(1, 1), pad=(0, 0), dil=(1, 1), osize=(1, 1)):
        out, idx = _max_pool(x, ksize, stride, pad, dil, osize)
        ctx.idx, ctx.shape = idx, x.shape
        ctx.unique = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dil, ksize))
        return out, idx

    @staticmethod
    def backward(ctx, g, _gidx=None):
        return IndexScatter.apply(g, idx=ctx.idx, shape=ctx.shape, unique=ctx.unique)


class IndexScatter(Op):
    """grad_input of max pooling: ``g`` written (summed) at per-plane flat indices."""

    node_name = "MaxPool2DWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, g, idx=None, shape=None, unique=False):
        ctx.idx = idx
        return _scatter(g, idx, shape, unique)

    @staticmethod
    def backward(ctx, gg):
        return IndexGather.apply(gg, idx=ctx.idx)


class MaxUnpool2d(IndexScatter):
    node_name = "MaxUnpool2DBackward0"


class IndexGather(Op):
    node_name = "IndexGatherBackward0"

    @staticmethod
    def forward(ctx, x, idx=None):
        ctx.idx, ctx.shape = idx, x.shape
        return _gather(x, idx)

    @staticmethod
    def backward(ctx, g):
        return IndexScatter.apply(g, idx=ctx.idx, shape=ctx.shape, unique=False)


def _adaptive_bounds(n: int, o: int) -> tuple:
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_index(n: int, o: int) -> np.ndarray:
    """(o, kmax) input positions of each adaptive window, padded by repeating its last one."""
    start, end = _adaptive_bounds(n, o)
    kmax = int((end - start).max()) if o else 0
    return np.minimum(start[:, None] + np.arange(kmax), end[:, None] - 1)


class AdaptiveMaxPool2d(Op):
    node_name = "AdaptiveMaxPool2DBackward0"

    @staticmethod
    def forward(ctx, x, osize=(1, 1)):
        n, c, h, w = x.shape
        ih, iw = _adaptive_index(h, osize[0]), _adaptive_index(w, osize[1])
        win = x[:, :, ih[:, :, None, None], iw[None, None, :, :]]  # (N, C, oh, kh, ow, kw)
        win = win.transpose(0, 1, 2, 4, 3, 5).reshape(n, c, *osize, ih.shape[1] * iw.shape[1])
        arg = win.argmax(-1)  # the first maximum (or NaN) wins
        kw = iw.shape[1]
        rows = ih[np.arange(osize[0])[:, None], arg // kw]
        cols = iw[np.arange(osize[1]), arg % kw]
        idx = rows * w + cols
        ctx.idx, ctx.shape = idx, x.shape
        return _gather(x, idx), idx

    @staticmethod
    def backward(ctx, g, _gidx=None):
        return IndexScatter.apply(g, idx=ctx.idx, shape=ctx.shape, unique=False)


# --- average pooling -----------------------------------------------------------------------


def _avg_divisor(n, o, k, s, p, include_pad) -> np.ndarray:
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    if not include_pad:
        return np.minimum(end, n) - np.maximum(start, 0)
    return end - start


def _avg_scale(geom, shape, dtype) -> np.ndarray:
    ksize, stride, pad, osize, include_pad, divisor = geom
    if divisor:
        return np.asarray(1.0 / divisor, dtype=dtype)
    dh = _avg_divisor(shape[2], osize[0], ksize[0], stride[0], pad[0], include_pad)
    dw = _avg_divisor(shape[3], osize[1], ksize[1], stride[1], pad[1], include_pad)
    return (1.0 / (dh[:, None] * dw)).astype(dtype)


class AvgPool2d(Op):
    node_name = "AvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, geom=None):
        ksize, stride, pad, osize = geom[:4]
        ctx.geom, ctx.shape = geom, x.shape
        xp = _padded(x, pad, osize, ksize, stride, (1, 1), 0)
        out = xp[_tap(xp, 0, 0, osize, stride, (1, 1))].copy()
        for k in range(1, ksize[0] * ksize[1]):
            out += xp[_tap(xp, k // ksize[1], k % ksize[1], osize, stride, (1, 1))]
        out *= _avg_scale(geom, x.shape, x.dtype)
        return out

    @staticmethod
    def backward(ctx, g):
        return AvgPoolAdjoint.apply(g, geom=ctx.geom, shape=ctx.shape)


class AvgPoolAdjoint(Op):
    """grad_input of average pooling: each output's share spread back over its window."""

    node_name = "AvgPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, geom=None, shape=None):
        ksize, stride, pad, osize = geom[:4]
        ctx.geom = geom
        gs = g * _avg_scale(geom, shape, g.dtype)
        xp = _padded(np.zeros(shape, dtype=g.dtype), pad, osize, ksize, stride, (1, 1), 0)
        for k in range(ksize[0] * ksize[1]):
            xp[_tap(xp, k // ksize[1], k % ksize[1], osize, stride, (1, 1))] += gs
        return xp[:, :, pad[0]:pad[0] + shape[2], pad[1]:pad[1] + shape[3]].copy()

    @staticmethod
    def backward(ctx, gg):
        return AvgPool2d.apply(gg, geom=ctx.geom)


def _adaptive_matrix(n: int, o: int, dtype) -> np.ndarray:
    """(o, n) matrix whose rows average each adaptive window."""
    start, end = _adaptive_bounds(n, o)
    pos = np.arange(n)
    m = (pos >= start[:, None]) & (pos < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


class AdaptiveAvgPool2d(Op):
    """Adaptive average pooling is linear and separable: ``A_h @ x @ A_w.T``."""

    node_name = "AdaptiveAvgPool2DBackward0"

    @staticmethod
    def forward(ctx, x, osize=(1, 1)):
        ah = _adaptive_matrix(x.shape[2], osize[0], x.dtype)
        aw = _adaptive_matrix(x.shape[3], osize[1], x.dtype)
        ctx.mats = (ah, aw)
        return np.matmul(ah, np.matmul(x, aw.T))

    @staticmethod
    def backward(ctx, g):
        ah, aw = (Tensor._make(m) for m in ctx.mats)
        return ah.t().matmul(g).matmul(aw)


# --- separable linear resampling: interpolation and non-constant padding -----------------


def _apply_mats(x: np.ndarray, mats: tuple) -> np.ndarray:
    """Multiply each of the trailing ``len(mats)`` dims of ``x`` by its (out, in) matrix."""
    k = len(mats)
    for i, m in enumerate(mats):
        d = x.ndim - k + i
        if m is None:
            continue
        if d == x.ndim - 1:
            x = np.matmul(x, m.T)
        elif d == x.ndim - 2:
            x = np.matmul(m, x)
        else:
            x = np.moveaxis(np.tensordot(m, x, axes=(1, d)), 0, d)
    return np.ascontiguousarray(x)


class Resample(Op):
    """A linear map applied along trailing dims by (out, in) matrices (gathers, blends)."""

    node_name = "ResampleBackward0"

    @staticmethod
    def forward(ctx, x, mats=()):
        ctx.mats = mats
        return _apply_mats(x, tuple(m.astype(x.dtype, copy=False) if m is not None else None
                                    for m in mats))

    @staticmethod
    def backward(ctx, g):
        return ResampleAdjoint.apply(g, mats=tuple(None if m is None else m.T
                                                   for m in ctx.mats))


class ResampleAdjoint(Resample):
    node_name = "ResampleBackwardBackward0"


def resample_op(node_name: str) -> type:
    """The ``Resample`` primitive under torch's node name for one pad / upsample kind."""
    if node_name not in _RESAMPLE:
        _RESAMPLE[node_name] = type(node_name.removesuffix("Backward0"), (Resample,),
                                    {"node_name": node_name, "__module__": __name__})
    return _RESAMPLE[node_name]


_RESAMPLE: dict = {}


def gather_matrix(idx: np.ndarray, n: int) -> np.ndarray:
    """The 0/1 (len(idx), n) matrix that picks ``idx`` out of a length-``n`` dim."""
    m = np.zeros((len(idx), n))
    m[np.arange(len(idx)), idx] = 1.0
    return m


class ConstantPadNd(Op):
    """Constant padding; negative amounts crop. Backward crops (pads by the negation)."""

    node_name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pads=(), value=0):
        ctx.pads = pads
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pads, x.shape))
        grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        x = x[crop]
        if not any(a or b for a, b in grow):
            return x.copy()
        return np.pad(x, grow, constant_values=np.asarray(value, dtype=x.dtype))

    @staticmethod
    def backward(ctx, g):
        return ConstantPadNd.apply(g, pads=tuple((-lo, -hi) for lo, hi in ctx.pads))
