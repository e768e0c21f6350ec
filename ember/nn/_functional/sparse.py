"""embedding: row lookup with a dense gradient (EmbeddingBackward0), padding_idx, max_norm."""

from __future__ import annotations

import numpy as np

from ember._backend import add_at, xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import no_grad
from ember.compiler.traced import capturing, check


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
        out = np.zeros((num_weights, rows.shape[1]), dtype=g.dtype, like=g)
        if idx.size and (xp_of(g) is not np or capturing()):
            # CuPy has no reduceat, its scatter-add is fast anyway; ember.compile replays the
            # scatter-add (np.unique's output size depends on the data)
            add_at(out, idx, rows)
        elif idx.size:
            # Sort once and sum each run of equal indices (much faster than np.add.at).
            order = np.argsort(idx, kind="stable")
            uniq, starts = np.unique(idx[order], return_index=True)
            out[uniq] = np.add.reduceat(rows[order], starts, axis=0)
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


def _in_range(idx: np.ndarray, n: int) -> None:
    if idx.min() < 0 or idx.max() >= n:
        raise IndexError("index out of range in self")


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
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype.is_floating_point or input.dtype.name not in ("int64", "int32"):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type().replace('ember.', 'torch.')} instead (while checking "
                           "arguments for embedding)")
    idx = input._data
    if idx.size:
        check(_in_range, idx, n)
    if max_norm is not None:
        with no_grad():
            _renorm_(weight, idx, max_norm, norm_type)
    return Embedding.apply(weight, indices=idx, padding_idx=padding_idx,
                           scale_grad_by_freq=scale_grad_by_freq)


def _bags(input: Tensor, offsets, include_last_offset: bool):
    """Flat indices and each position's bag id (bags from rows of a 2-D input or offsets)."""
    idx = input._data
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences. However, found offsets of "
                             f"type {_typename(offsets)}")
        n_bags, length = idx.shape
        return idx.reshape(-1), np.repeat(np.arange(n_bags), length), n_bags
    if idx.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{idx.ndim}")
    if offsets is None or offsets.ndim != 1:
        got = None if offsets is None else offsets.ndim
        raise ValueError(f"offsets has to be a 1D Tensor but got {got}")
    off = offsets._data.astype(np.int64)
    if off.size and off[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(off[0])}")
    starts = off[:-1] if include_last_offset else off
    ends = np.append(starts[1:], off[-1] if include_last_offset else idx.size)
    lengths = np.maximum(ends - starts, 0)
    bag = np.repeat(np.arange(starts.size), lengths)
    # Bags are consecutive slices from 0; indices past the last offset belong to no bag.
    return idx[:bag.size], bag, starts.size


def _typename(obj) -> str:
    return "<class 'torch.Tensor'>" if isinstance(obj, Tensor) else str(type(obj))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxes of bags of embeddings (bags: rows of 2-D input, or offsets)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    flat, bag, n_bags = _bags(input, offsets, include_last_offset)
    n = weight.shape[0]
    if padding_idx is not None:
        padding_idx = padding_idx % n
    keep = flat != padding_idx if padding_idx is not None else np.ones(flat.shape, bool)
    rows = embedding(Tensor._make(flat), weight, None, max_norm, norm_type, scale_grad_by_freq)
    dt = weight._data.dtype
    if mode == "max":
        return _bag_max(rows, bag, keep, n_bags)
    # Sum and mean as one GEMM with a (bags x positions) matrix of per-position weights.
    mix = np.zeros((n_bags, flat.size), dtype=dt)
    mix[bag, np.arange(flat.size)] = keep
    if mode == "mean":
        counts = mix.sum(1, keepdims=True)
        mix = np.divide(mix, counts, out=np.zeros_like(mix), where=counts > 0)
    m = Tensor._make(mix)
    if per_sample_weights is not None:
        m = m * per_sample_weights.reshape(1, -1)
    return m.mm(rows)


def _bag_max(rows: Tensor, bag: np.ndarray, keep: np.ndarray, n_bags: int) -> Tensor:
    """Per bag and feature, the row holding the maximum (empty bags give zeros)."""
    r = rows._data
    d = r.shape[1]
    best = np.full((n_bags, d), -np.inf)
    np.maximum.at(best, bag[keep], r[keep])
    hit = (r == best[bag]) & keep[:, None]
    # The first position per (bag, feature) that attains the max.
    pos = np.where(hit, np.arange(r.shape[0])[:, None], r.shape[0])
    first = np.full((n_bags, d), r.shape[0])
    np.minimum.at(first, bag, pos)
    empty = first == r.shape[0]
    padded = rows.new_zeros((1, d))
    from ember.ops.joining import cat

    table = cat([rows, padded], 0)
    return table[first, np.broadcast_to(np.arange(d), first.shape)] * \
        Tensor._make((~empty).astype(r.dtype))


__all__ = ["embedding", "embedding_bag"]
