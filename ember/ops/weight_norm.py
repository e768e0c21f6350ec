"""Weight normalisation, ``w = g * v / ||v||``, as torch's ``_weight_norm`` computes it.

Over dim 0 or the last dim torch runs one fused kernel (``WeightNormInterfaceBackward0``,
saving ``v``, ``g`` and the norms); over any other dim, or over the whole tensor (dim=-1 from
``dim=None``), it composes ``v * (g / norm_except_dim(v))`` from ordinary ops.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op


def _bcast_shape(v_shape: tuple, dim: int) -> tuple:
    return tuple(n if i == dim else 1 for i, n in enumerate(v_shape))


class _WeightNormInterface(Op):
    node_name = "WeightNormInterfaceBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, v, g, dim=0):
        axes = tuple(i for i in range(v.ndim) if i != dim)
        norms = np.sqrt(np.sum(np.square(v), axis=axes, keepdims=True))
        ctx.dim = dim
        ctx.save_extra(norms)
        return v * (g.reshape(norms.shape) / norms)

    @staticmethod
    def backward(ctx, grad):
        v, g, norms = ctx.saved_tensors
        axes = tuple(i for i in range(v.ndim) if i != ctx.dim)
        sums = grad * v  # torch's per_dim_sums (a 1-d v has one weight per norm)
        if axes:
            sums = sums.sum(axes, keepdim=True)
        gb = g.reshape(norms.shape)
        grad_v = (gb / norms) * (grad - v * (sums / (norms * norms)))
        grad_g = (sums / norms).reshape(g.shape)
        return grad_v, grad_g


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept as size-1 dims); over the
    whole tensor when ``dim == -1``."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.shape[0], -1).norm(pow, 1).view(
            _bcast_shape(v.shape, 0))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.shape[-1]).norm(pow, 0).view(
            _bcast_shape(v.shape, dim))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v * (g / norm_except_dim(v, 2, dim))``, fused over dim 0 or the last dim."""
    if dim == 0 or dim == v.dim() - 1:
        return _WeightNormInterface.apply(v.contiguous(), g.contiguous(), dim=dim)
    return v * (g / norm_except_dim(v, 2, dim))


FUNCTIONS = {"norm_except_dim": norm_except_dim, "_weight_norm": _weight_norm}
