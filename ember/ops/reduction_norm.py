"""Vector norms (``linalg.vector_norm``) and ``Tensor.norm`` / ``ember.norm``."""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops.pointwise import where
from ember.ops.reduction import norm_dims, numpy_aliases, unsqueeze_to

INF = math.inf


class LinalgVectorNorm(Op):
    node_name = "LinalgVectorNormBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, ord=2.0, dims=(), keepdim=False):
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        a = np.abs(x)
        if ord == 2:
            return np.sqrt(np.sum(x * x, axis=dims, keepdims=keepdim))
        if ord == INF:
            return np.max(a, axis=dims, keepdims=keepdim)
        if ord == -INF:
            return np.min(a, axis=dims, keepdims=keepdim)
        if ord == 0:
            return np.sum(a != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
        if ord == 1:
            return np.sum(a, axis=dims, keepdims=keepdim)
        p = x.dtype.type(ord)
        with np.errstate(divide="ignore"):
            return np.sum(a ** p, axis=dims, keepdims=keepdim) ** (1 / p)

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        p = ctx.ord
        g = unsqueeze_to(g, x.shape, ctx.dims, ctx.keepdim)
        out = unsqueeze_to(out, x.shape, ctx.dims, ctx.keepdim)
        if p == 0:
            return (g * 0.0).expand(x.shape)
        if p == 2:
            if np.all(out._data != 0):  # the common case: no masking needed
                return x * (g / out)
            return g * where(out == 0, 0.0, x / out)
        sign = Tensor._make(np.sign(x._data))
        if p == 1:
            return g * sign
        if abs(p) == INF:
            hit = np.abs(x._data) == out._data
            share = hit / np.sum(hit, axis=ctx.dims, keepdims=True)
            return g * sign * Tensor._make(share.astype(x._data.dtype))
        absx = x * sign
        if p < 1:
            scaled = where(x == 0, 0.0, sign * absx ** (p - 1))
            return scaled * g * out ** (1 - p)
        scaled = sign * absx ** (p - 1) if p < 2 else x * absx ** (p - 2)
        return scaled * where(out == 0, 0.0, g / out ** (p - 1))


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all elements by default); ord may be +-inf, 0."""
    if not isinstance(ord, int | float) or isinstance(ord, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype.TYPE_NAMES[x.dtype][6:-6]}")
    if dtype is not None:
        from ember.ops._promote import cast

        x = cast(x, _dtype.to_dtype(dtype))
    dims = norm_dims(dim, x.ndim)
    if x._data.size == 0 and ord < 0 or x._data.size == 0 and ord == INF:
        if dim is None or any(x._data.shape[d] == 0 for d in dims):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty "
                               "tensor because the operation does not have an identity")
    return LinalgVectorNorm.apply(x, ord=float(ord), dims=dims, keepdim=keepdim)


def norm(x: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """torch.norm: vector p-norm over ``dim``; 'fro' is the 2-norm, 'nuc' the nuclear norm."""
    if isinstance(p, str):
        if p == "nuc":
            from ember.linalg import matrix_norm

            return matrix_norm(x, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    if p is None:
        p = 2
    return vector_norm(x, p, dim, keepdim, dtype=dtype)


METHODS = numpy_aliases({"norm": norm})
FUNCTIONS = dict(METHODS)
