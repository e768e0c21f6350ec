"""scatter_reduce: sum / prod / mean / amax / amin of ``src`` into ``x`` at ``index``.

The backward follows torch's derivatives.yaml: ties of amax/amin share the gradient evenly,
prod handles zeros (one zero per group) with exclusive products.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.indexing_ops import (
    Gather,
    ScatterAdd,
    ScatterValue,
    _2d,
    _check_index,
    _fit,
    _full_index,
    _same_dtype,
)
from ember.ops.pointwise import where

_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
          "amin": np.minimum}


def _identity(reduce: str, dt: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dt.kind == "f" else np.iinfo(dt).max
    return -big if reduce == "amax" else big


def _scatter_reduce(x: np.ndarray, src: np.ndarray, index: np.ndarray, dim: int, reduce: str,
                    include_self: bool) -> np.ndarray:
    out = x.copy()
    i2 = _2d(index)
    key = _full_index(i2, dim)
    o2 = _2d(out)
    vals = _2d(src)[tuple(slice(0, s) for s in i2.shape)]
    if not include_self:
        o2[key] = _identity(reduce, x.dtype)
    _UFUNC[reduce].at(o2, key, vals)
    if reduce == "mean":
        counts = np.full(o2.shape, int(include_self), dtype=np.int64)
        np.add.at(counts, key, 1)
        safe = np.maximum(counts, 1)
        o2[...] = o2 / safe if x.dtype.kind == "f" else o2 // safe
    return out


class ScatterReduce(Op):
    """Saves self, src, the result and the index, as torch."""

    node_name = "ScatterReduceBackward0"
    saves = (0, 1)
    saves_output = True

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, reduce="sum", include_self=True):
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        ctx.save_extra(index)
        return _scatter_reduce(x, src, index, dim, reduce, include_self)

    @staticmethod
    def backward(ctx, g):
        x, src, result, idx = ctx.saved_tensors
        idx, dim, reduce = idx._data, ctx.dim, ctx.reduce

        def gather(t):
            return Gather.apply(t, index=idx, dim=dim)

        if reduce == "sum":
            gx, gs = g, gather(g)
        elif reduce == "mean":
            ones = Tensor._make(np.ones(idx.shape, g.dtype.np))
            base = Tensor._make(np.full(x.shape, float(ctx.include_self), g.dtype.np))
            n = ScatterAdd.apply(base, ones, index=idx, dim=dim)
            n = n.masked_fill(n == 0, 1)
            gx, gs = g / n, gather(g) / gather(n)
        elif reduce in ("amax", "amin"):
            value = gather(result)
            self_is = (x == result).to(g.dtype)
            src_is = (_fit_src(src, idx) == value).to(g.dtype)
            n = ScatterAdd.apply(self_is, src_is, index=idx, dim=dim)
            dist = g / n
            gx, gs = self_is * dist, src_is * gather(dist)
        else:
            gx, gs = _prod_grads(ctx, idx, g, x, src, result, gather)
        if not ctx.include_self:
            gx = ScatterValue.apply(gx, index=idx, dim=dim, value=0)
        need = ctx.needs_input_grad
        return (gx if need[0] else None), (_fit(gs, src.shape) if need[1] else None)


def _fit_src(src: Tensor, idx: np.ndarray) -> Tensor:
    if tuple(src.shape) == idx.shape:
        return src
    return src[tuple(slice(0, s) for s in idx.shape)]


def _prod_grads(ctx, idx, g, x, src, result, gather):
    """torch's exclusive-product gradients: zeros in ``x`` and single zeros in a src group."""
    dim, inc = ctx.dim, ctx.include_self
    s = _fit_src(src, idx)
    masked_x = x.masked_fill(x == 0, 1)
    masked_x_result = ScatterReduce.apply(masked_x, s, index=idx, dim=dim, reduce="prod",
                                          include_self=inc)
    gx = g * masked_x_result / masked_x
    s_zero = s == 0
    zeros = Tensor._make(np.zeros(x.shape, g.dtype.np))
    n_zero = gather(ScatterAdd.apply(zeros, s_zero.to(g.dtype), index=idx, dim=dim))
    if (n_zero._data > 1).any():
        raise NotImplementedError("ember: scatter_reduce 'prod' backward with more than one zero "
                                  "in a group of src is not supported (nor is it in torch's "
                                  "double backward)")
    single = s_zero & (n_zero == 1)
    masked_src = s.masked_fill(single, 1)
    masked_src_result = ScatterReduce.apply(x, masked_src, index=idx, dim=dim, reduce="prod",
                                            include_self=inc)
    gs = where(single, gather(g * masked_src_result), gather(g * result)
               / s.masked_fill(s_zero, 1))
    return gx, gs


def scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce ``src`` into a copy of ``x`` at ``index`` (sum/prod/mean/amax/amin)."""
    if reduce not in _REDUCES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d, idx = _check_index(x, dim, index, "scatter_reduce", src)
    _same_dtype(x, src, "scatter")
    return ScatterReduce.apply(x, src, index=idx, dim=d, reduce=reduce,
                               include_self=bool(include_self))


def scatter_reduce_(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``."""
    from ember.ops.inplace import apply_inplace

    return apply_inplace(x, scatter_reduce, dim, index, src, reduce, include_self=include_self)


METHODS = {"scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_}
FUNCTIONS = {"scatter_reduce": scatter_reduce}
