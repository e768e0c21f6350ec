"""one_hot, normalize, cosine_similarity, pairwise_distance."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.grad_mode import no_grad
from ember.ops.reduction_norm import Pdist, vector_norm


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim (``num_classes=-1``: max + 1)."""
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._data
    if a.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(np.zeros((*a.shape, num_classes), dtype=np.int64))
    if a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(a.max()) + 1
    elif a.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make((a[..., None] == np.arange(num_classes)).astype(np.int64))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p over dim, eps)``."""
    denom = vector_norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is not None:
        return out.copy_(input / denom)
    return input / denom


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (norms clamped at eps)."""
    from ember.ops.shape import broadcast_tensors

    if x1.shape != x2.shape:
        x1, x2 = broadcast_tensors(x1, x2)
    # ATen's: the norms are clamped in place without recording it (the clamp has no gradient).
    n1 = vector_norm(x1, 2, dim, keepdim=True).clone()
    n2 = vector_norm(x2, 2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim."""
    dim = -1 if max(x1.ndim, x2.ndim) > 0 else None
    return vector_norm(x1 - x2 + eps, p, dim, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """Distances between all pairs of rows ``i < j`` of a 2-D input, in row-major order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    return Pdist.apply(input, p=float(p))


__all__ = ["one_hot", "normalize", "cosine_similarity", "pairwise_distance", "pdist"]
