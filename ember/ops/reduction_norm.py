"""Vector norms (``linalg.vector_norm``) and ``Tensor.norm`` / ``ember.norm``."""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.compiler.traced import capturing
from ember.ops._common import c_order
from ember.ops.pointwise import where
from ember.ops.reduction import norm_dims, numpy_aliases, unsqueeze_to

INF = math.inf


def p_norm(x: np.ndarray, ord: float, dims, keepdim: bool = False) -> np.ndarray:
    """The p-norm of an array over ``dims`` (float32 stays float32)."""
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


class LinalgVectorNorm(Op):
    node_name = "LinalgVectorNormBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, ord=2.0, dims=(), keepdim=False):
        ctx.ord, ctx.dims, ctx.keepdim = ord, dims, keepdim
        return c_order(p_norm(x, ord, dims, keepdim))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        g = unsqueeze_to(g, x.shape, ctx.dims, ctx.keepdim)
        out = unsqueeze_to(out, x.shape, ctx.dims, ctx.keepdim)
        return norm_backward(x, out, g, ctx.ord, ctx.dims)


def norm_backward(x: Tensor, out: Tensor, g: Tensor, p: float, dims: tuple) -> Tensor:
    """d ||x||_p / dx applied to ``g``; ``out`` and ``g`` in keepdim layout (torch's formulas)."""
    if p == 0:
        return (g * 0.0).expand(x.shape)
    if p == 2:
        if not capturing() and np.all(out._data != 0):  # the common case: no masking needed
            return x * (g / out)
        return g * where(out == 0, 0.0, x / out)
    sign = Tensor._make(np.sign(x._data))
    if p == 1:
        return g * sign
    if abs(p) == INF:
        hit = np.abs(x._data) == out._data
        share = hit / np.sum(hit, axis=dims, keepdims=True)
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
    if x._data.dtype.kind == "c":  # the norm of the magnitudes, a real tensor
        return vector_norm(x.abs(), ord, dim, keepdim, dtype=dtype)
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


class Cdist(Op):
    node_name = "CdistBackward0"
    saves = (0, 1)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, x1, x2, p=2.0):
        ctx.p = p
        if p == 2 and (x1.shape[-2] > 25 or x2.shape[-2] > 25):
            # torch's default compute_mode: the matrix-product form for larger inputs.
            sq = (x1 * x1).sum(-1)[..., :, None] + (x2 * x2).sum(-1)[..., None, :]
            sq -= 2 * (x1 @ np.swapaxes(x2, -1, -2))
            return np.sqrt(np.maximum(sq, 0, out=sq))
        return p_norm(x1[..., :, None, :] - x2[..., None, :, :], p, (-1,))

    @staticmethod
    def backward(ctx, g):
        x1, x2, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        if ctx.p == 2:  # no (P, R, M) difference tensor needed
            w = g / out if np.all(out._data != 0) else where(out == 0, 0.0, g / out)
            g1 = w.sum(-1, keepdim=True) * x1 - w.matmul(x2) if need[0] else None
            g2 = w.sum(-2).unsqueeze(-1) * x2 - w.mT.matmul(x1) if need[1] else None
            return g1, g2
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        gd = norm_backward(diff, out.unsqueeze(-1), g.unsqueeze(-1), ctx.p, (-1,))
        return (gd.sum(-2) if need[0] else None), (-gd.sum(-3) if need[1] else None)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    """p-norm distance between each row of ``x1`` and each row of ``x2`` (batched)."""
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype.TYPE_NAMES[t.dtype][6:-6]}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return Cdist.apply(x1, x2, p=float(p))


class Dist(Op):
    node_name = "DistBackward0"
    saves = (0, 1)
    saves_output = True
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, p=2.0):
        ctx.p = p
        d = a - b
        return p_norm(d, p, tuple(range(d.ndim)))

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        diff = a - b
        gd = norm_backward(diff, out, g, ctx.p, tuple(range(diff.ndim)))
        need = ctx.needs_input_grad
        return (gd if need[0] else None), (-gd if need[1] else None)


def dist(a: Tensor, b: Tensor, p: float = 2) -> Tensor:
    """``norm(a - b, p)`` with broadcasting."""
    from ember.ops._promote import binary_args

    a, b = binary_args(a, b)
    return Dist.apply(a, b, p=float(p))


class Pdist(Op):
    """p-norm distances between all pairs of rows ``i < j`` of a 2-D input, in row-major
    order: one node saving the input and the result, as torch's."""

    node_name = "PdistBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, p=2.0):
        ctx.p = p
        i, j = np.triu_indices(x.shape[0], 1)
        return p_norm(x[i] - x[j], p, (1,))

    @staticmethod
    def backward(ctx, g):
        from ember.ops.indexing_ops import index_add

        x, out = ctx.saved_tensors
        i, j = np.triu_indices(x.shape[0], 1)
        gd = norm_backward(x[i] - x[j], out.unsqueeze(1), g.unsqueeze(1), ctx.p, (1,))
        zeros = x.new_zeros(x.shape)
        return index_add(index_add(zeros, 0, Tensor._make(i), gd), 0, Tensor._make(j), -gd)


METHODS = numpy_aliases({"norm": norm, "dist": dist})
FUNCTIONS = dict(METHODS, cdist=cdist)
