"""embedding: row lookup with a dense gradient (EmbeddingBackward0), padding_idx, max_norm."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import no_grad


class Embedding(Op):
    node_name = "EmbeddingBackward0"

    @staticmethod
    def forward(ctx, weight, indices=None, padding_idx=-1, scale_grad_by_freq=False):
        ctx.indices, ctx.padding_idx, ctx.scale = indices, padding_idx, scale_grad_by_freq
        ctx.num_weights = weight.shape[0]
        return weight[indices]

    @staticmethod
    def backward(ctx, g):
        return EmbeddingDenseBackward.apply(g, indices=ctx.indices, num_weights=ctx.num_weights,
                                            padding_idx=ctx.padding_idx, scale=ctx.scale)


class EmbeddingDenseBackward(Op):
    """Scatter-add of the output gradient into the rows it was gathered from."""

    node_name = "EmbeddingDenseBackwardBackward0"

    @staticmethod
    def forward(ctx, g, indices=None, num_weights=0, padding_idx=-1, scale=False):
        idx = indices.reshape(-1)
        rows = g.reshape(idx.size, -1)
        keep = idx != padding_idx if padding_idx >= 0 else None
        factor = None
        if scale:
            counts = np.bincount(idx, minlength=num_weights)
            factor = (1.0 / counts[idx]).astype(g.dtype)
            rows = rows * factor[:, None]
        if keep is not None:
            rows = rows * keep[:, None].astype(g.dtype)
        ctx.indices, ctx.factor, ctx.keep, ctx.gshape = indices, factor, keep, g.shape
        out = np.zeros((num_weights, rows.shape[1]), dtype=g.dtype)
        np.add.at(out, idx, rows)
        return out

    @staticmethod
    def backward(ctx, gg):
        picked = Embedding.apply(gg, indices=ctx.indices)
        coef = np.ones(ctx.indices.shape, dtype=gg._data.dtype)
        if ctx.factor is not None:
            coef = coef * ctx.factor.reshape(ctx.indices.shape)
        if ctx.keep is not None:
            coef = coef * ctx.keep.reshape(ctx.indices.shape)
        return picked * Tensor._make(coef[..., None])


def _renorm_(weight: Tensor, indices: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Rescale (in place, no grad) the referenced rows whose norm exceeds ``max_norm``."""
    rows = np.unique(indices)
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    w[rows[big]] *= scale[:, None]
    weight._vc[0] += 1


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (any shape)."""
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= n or padding_idx < -n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % n
    else:
        padding_idx = -1
    if input.dtype.is_floating_point or input.dtype.name not in ("int64", "int32"):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type().replace('ember.', 'torch.')} instead (while checking "
                           "arguments for embedding)")
    idx = input._data
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        with no_grad():
            _renorm_(weight, idx, max_norm, norm_type)
    return Embedding.apply(weight, indices=idx, padding_idx=padding_idx,
                           scale_grad_by_freq=scale_grad_by_freq)


__all__ = ["embedding"]
