"""Reductions: sum, mean, ... over all elements or over ``dim`` (int or tuple), ``keepdim``."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op


def norm_dims(dim, ndim: int) -> tuple:
    """``dim`` (None, int, or sequence) as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        return (_wrap_dim(dim, ndim),)
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


def unsqueeze_to(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Put back reduced dims (as size 1) so ``g`` broadcasts against the input."""
    if keepdim or not dims or g.ndim == len(shape):
        return g
    kept = list(g.shape)
    for d in dims:
        kept.insert(d, 1)
    return g.reshape(kept)


def _sum_dtype(x: Tensor, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return _dtype.int64 if x.dtype._kind < 2 else x.dtype


class Sum(Op):
    node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype.np)

    @staticmethod
    def backward(ctx, g):
        return unsqueeze_to(g, ctx.shape, ctx.dims, ctx.keepdim).expand(ctx.shape)


class SumDim(Sum):
    node_name = "SumBackward1"


def sum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dt = _sum_dtype(x, dtype)
    if dim is None:
        return Sum.apply(x, dims=None, keepdim=False, dtype=dt)
    dims = norm_dims(dim, x.ndim)
    return SumDim.apply(x, dims=dims, keepdim=keepdim, dtype=dt)


class Mean(Op):
    node_name = "MeanBackward0"

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = int(np.prod([x.shape[d] for d in dims])) if dims is not None else x.size
        ctx.n = n
        out = np.sum(x, axis=dims, keepdims=keepdim, dtype=dtype.np)
        return np.true_divide(out, n, dtype=dtype.np) if n else np.full_like(out, np.nan)

    @staticmethod
    def backward(ctx, g):
        return unsqueeze_to(g / ctx.n, ctx.shape, ctx.dims, ctx.keepdim).expand(ctx.shape)


class MeanDim(Mean):
    node_name = "MeanBackward1"


def mean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else x.dtype
    if not dt.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {x.dtype.name.capitalize()}")
    if dim is None:
        return Mean.apply(x, dims=None, keepdim=False, dtype=dt)
    return MeanDim.apply(x, dims=norm_dims(dim, x.ndim), keepdim=keepdim, dtype=dt)


METHODS = {"sum": sum, "mean": mean}
FUNCTIONS = dict(METHODS)
