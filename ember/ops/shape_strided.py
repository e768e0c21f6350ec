"""Strided views: diagonal and unfold share memory with their input, as in torch."""

from __future__ import annotations

import numpy as np

from ember._backend import as_strided as as_array_strided
from ember._backend import xp_of
from ember._creation import zeros
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops._complex_grad import holomorphic


def _diag_view(x: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    """A writeable strided view of a diagonal, appended as the last dim (np.diagonal's view is
    read-only, and writes through torch's diagonal must reach the base)."""
    y = np.moveaxis(x, (d1, d2), (-2, -1))
    n1, n2 = y.shape[-2:]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    if n == 0:
        return np.empty((*y.shape[:-2], 0), x.dtype, like=x)
    start = y[..., 0, offset] if offset >= 0 else y[..., -offset, 0]
    return as_array_strided(start, (*start.shape, n),
                            (*start.strides, y.strides[-2] + y.strides[-1]), writeable=True)


class Diagonal(Op):
    node_name = "DiagonalBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, offset=0, d1=0, d2=1):
        ctx.shape, ctx.args = x.shape, (offset, d1, d2)
        return _diag_view(x, offset, d1, d2)

    @staticmethod
    def backward(ctx, g):
        return DiagonalGrad.apply(g, shape=ctx.shape, args=ctx.args)


class DiagonalGrad(Op):
    """Write a gradient onto the diagonal of zeros (the backward of diagonal)."""

    node_name = "DiagonalBackwardBackward0"

    @staticmethod
    def forward(ctx, g, shape=None, args=None):
        ctx.args = args
        out = np.zeros(shape, g.dtype, like=g)
        _diag_view(out, *args)[...] = g
        return out

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, offset=ctx.args[0], d1=ctx.args[1], d2=ctx.args[2])


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of diagonal ``offset`` of dims (dim1, dim2), appended as the last dim."""
    d1, d2 = _wrap_dim(dim1, x.ndim), _wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(x, offset=int(offset), d1=d1, d2=d2)


class Unfold(Op):
    """``x.unfold(dim, size, step)``: sliding windows along ``dim`` as a strided view."""

    node_name = "UnfoldBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0, size=1, step=1):
        ctx.shape, ctx.args = x.shape, (dim, size, step)
        if x.ndim == 0:
            return x.reshape(1)
        n = (x.shape[dim] - size) // step + 1
        shape = (*x.shape[:dim], n, *x.shape[dim + 1:], size)
        st = x.strides
        strides = (*st[:dim], st[dim] * step, *st[dim + 1:], st[dim])
        return as_array_strided(x, shape, strides, writeable=True)

    @staticmethod
    def backward(ctx, g):
        return UnfoldGrad.apply(g, shape=ctx.shape, args=ctx.args)


class UnfoldGrad(Op):
    """Sum window gradients back onto the input (overlapping windows add up)."""

    node_name = "UnfoldBackwardBackward0"

    @staticmethod
    def forward(ctx, g, shape=None, args=None):
        ctx.args = args
        if not shape:
            return g.reshape(())
        dim, size, step = args
        out = np.zeros(shape, g.dtype, like=g)
        n = g.shape[dim]
        lead = (slice(None),) * dim
        for k in range(size):  # a loop over the window, not over the data
            out[(*lead, slice(k, k + step * (n - 1) + 1, step))] += g[..., k]
        return out

    @staticmethod
    def backward(ctx, gg):
        dim, size, step = ctx.args
        return Unfold.apply(gg, dim=dim, size=size, step=step)


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of windows of ``size`` every ``step`` along ``dimension`` (new last dim)."""
    d = _wrap_dim(dimension, x.ndim)
    length = x._data.shape[d] if x.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return Unfold.apply(x, dim=d, size=int(size), step=int(step))


def region_view(a: np.ndarray, region: tuple) -> np.ndarray:
    """Elements (offset, shape, strides) of the C-ordered ``a``: a view when ``a`` is contiguous
    (the arrays written to), else a view of a contiguous copy (``reshape(-1)`` of an all-0-stride
    array would keep stride 0)."""
    off, shape, strides = region
    flat = xp_of(a).ascontiguousarray(a).reshape(-1)
    return as_array_strided(flat[off:], shape, tuple(s * a.itemsize for s in strides),
                            writeable=True)


def _region_index(region: tuple) -> np.ndarray:
    off, shape, strides = region
    idx = np.asarray(off, dtype=np.int64)
    for k, (n, st) in enumerate(zip(shape, strides)):
        idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(
            (1,) * k + (n,) + (1,) * (len(shape) - k - 1))
    return idx


class AsStrided(Op):
    """A view of ``x`` given by (offset, shape, strides) in elements of ``x``."""

    node_name = "AsStridedBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, region=None):
        ctx.shape, ctx.region = x.shape, region
        return region_view(x, region)

    @staticmethod
    def backward(ctx, g):
        if not g._data.size:  # torch's as_strided_backward: zeros, with no history
            return zeros(ctx.shape, dtype=g.dtype)
        return AsStridedGrad.apply(g, shape=ctx.shape, region=ctx.region)


class AsStridedGrad(Op):
    """Sum a gradient back onto the elements it was read from (windows may overlap)."""

    node_name = "AsStridedBackwardBackward0"

    @staticmethod
    def forward(ctx, g, shape=None, region=None):
        ctx.region = region
        idx = np.broadcast_to(_region_index(region), g.shape).reshape(-1)
        out = np.bincount(idx, weights=g.reshape(-1), minlength=int(np.prod(shape)))
        return out.astype(g.dtype, copy=False).reshape(shape)

    @staticmethod
    def backward(ctx, gg):
        return AsStrided.apply(gg, region=ctx.region)


def as_strided(x: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view of ``x``'s storage with the given sizes and strides (in elements)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    base = x._base if x._base is not None else x
    x_off = x.storage_offset()
    off = x_off if storage_offset is None else int(storage_offset)
    span = 1 + sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else 0
    isz = x._data.itemsize
    if off + span > base._data.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, and "
            f"itemsize {isz} requiring a storage size of {(off + span) * isz} are out of bounds "
            f"for storage of size {base._data.size * isz}")
    rel = off - x_off
    if not x._data.flags.c_contiguous or rel < 0 or rel + span > x._data.size:
        raise NotImplementedError("ember: as_strided needs a contiguous input and a window "
                                  "inside its own elements")
    return AsStrided.apply(x, region=(rel, size, stride))


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Diagonal, DiagonalGrad, Unfold, UnfoldGrad)

METHODS = {"diagonal": diagonal, "unfold": unfold, "as_strided": as_strided}
FUNCTIONS = {"diagonal": diagonal, "as_strided": as_strided}
