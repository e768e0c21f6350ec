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
        ctx.padding_idx, ctx.scale = padding_idx, scale_grad_by_freq
        ctx.num_weights = weight.shape[0]
        ctx.save_extra(indices)  # as torch
        return weight[indices]

    @staticmethod
    def backward(ctx, g):
        (indices,) = ctx.saved_tensors
        return EmbeddingDenseBackward.apply(g, indices=indices._data, num_weights=ctx.num_weights,
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
        ctx.factor, ctx.keep, ctx.gshape = factor, keep, g.shape
        ctx.save_extra(indices)
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
        indices = ctx.saved_tensors[0]._data
        picked = Embedding.apply(gg, indices=indices)
        coef = np.ones(indices.shape, dtype=gg._data.dtype)
        if ctx.factor is not None:
            coef = coef * ctx.factor.reshape(indices.shape)
        if ctx.keep is not None:
            coef = coef * ctx.keep.reshape(indices.shape)
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
    idx = getattr(idx, "_physical", idx)  # under vmap: every sample's indices at once
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
    if max_norm is not None:
        with no_grad():
            _renorm_(weight, flat, max_norm, norm_type)
    psw = () if per_sample_weights is None else (per_sample_weights,)
    op = EmbeddingBag if not psw else EmbeddingBagWeighted
    return op.apply(weight, *psw, flat=flat, bag=bag, n_bags=n_bags, mode=mode, keep=keep,
                    offsets=None if offsets is None else offsets._data,
                    scale=scale_grad_by_freq)


class EmbeddingBag(Op):
    """Sums, means or maxes of bags of rows of ``weight``: torch's one node, saving what it
    saves (indices, offsets, offset2bag, bag sizes, max indices; with per-sample weights also
    the weight and them). Sum and mean are one GEMM with a (bags x positions) mixing matrix;
    max picks, per bag and feature, the first position attaining it (empty bags give 0)."""

    node_name = "EmbeddingBagBackward0"

    @staticmethod
    def forward(ctx, weight, psw=None, flat=None, bag=None, n_bags=0, mode="mean", keep=None,
                offsets=None, scale=False):
        xp = xp_of(weight)
        rows = weight[flat]
        mix = xp.zeros((n_bags, flat.size), dtype=weight.dtype)
        mix[xp.asarray(bag), xp.arange(flat.size)] = xp.asarray(keep)
        sizes = mix.sum(1).astype(np.int64)
        ctx.mode, ctx.n, ctx.scale, ctx.mix, ctx.first = mode, weight.shape[0], scale, mix, None
        ctx.bag, ctx.keep = bag, keep
        if mode == "max":
            ctx.first = _bag_first_max(rows, bag, keep, n_bags)
            table = np.concatenate([rows, np.zeros((1, rows.shape[1]), rows.dtype)])
            out = np.take_along_axis(table, ctx.first, 0)
        else:
            if mode == "mean":
                mix = np.divide(mix, sizes[:, None].astype(mix.dtype), out=np.zeros_like(mix),
                                where=sizes[:, None] > 0)
                ctx.mix = mix
            out = (mix * psw.reshape(1, -1)) @ rows if psw is not None else mix @ rows
        starts = np.searchsorted(bag, np.arange(n_bags)) if offsets is None else offsets
        # torch's offset2bag is empty for a plain sum.
        o2b = bag if mode != "sum" or psw is not None else bag[:0]
        ctx.save_extra(flat, starts, o2b, sizes, ctx.first if mode == "max" else sizes)
        return out

    @classmethod
    def backward(cls, ctx, g):
        saved = ctx.saved_tensors
        flat = saved[-5]._data
        need = ctx.needs_input_grad
        if ctx.mode == "max":
            rows_g = _scatter_max(g, ctx.first, flat.size)
        else:
            m = Tensor._make(ctx.mix)
            if len(need) > 1:
                m = m * saved[1].reshape(1, -1)
            rows_g = m.t().mm(g)
        gw = EmbeddingDenseBackward.apply(rows_g, indices=flat, num_weights=ctx.n,
                                          scale=ctx.scale) if need[0] else None
        if len(need) == 1:
            return gw
        gp = None
        if need[1]:
            w, psw = saved[0], saved[1]
            picked = Embedding.apply(w, indices=flat)
            keep = Tensor._make(ctx.keep.astype(ctx.mix.dtype))
            gp = ((g[ctx.bag] * picked).sum(1) * keep).reshape(psw.shape)
        return gw, gp


class EmbeddingBagWeighted(EmbeddingBag):
    """``mode='sum'`` with per-sample weights (input 1): saved, and the weight too for their
    gradient."""

    node_name = "EmbeddingBagBackward0"
    saves = (0, 1)
    save_for = ((1,), None)


def _bag_first_max(rows: np.ndarray, bag: np.ndarray, keep: np.ndarray, n_bags: int):
    """Per bag and feature, the first position attaining the maximum (``len(rows)``, a zero
    row, for empty bags)."""
    d = rows.shape[1]
    best = np.full((n_bags, d), -np.inf)
    np.maximum.at(best, bag[keep], rows[keep])
    hit = (rows == best[bag]) & keep[:, None]
    pos = np.where(hit, np.arange(rows.shape[0])[:, None], rows.shape[0])
    first = np.full((n_bags, d), rows.shape[0])
    np.minimum.at(first, bag, pos)
    return first


def _scatter_max(g: Tensor, first: np.ndarray, n: int) -> Tensor:
    """The gradient of the gathered rows: ``g`` at the max positions (differentiable)."""
    from ember.ops.indexing import IndexGrad

    cols = np.broadcast_to(np.arange(first.shape[1]), first.shape)
    return IndexGrad.apply(g, key=((), (first, cols)), shape=(n + 1, first.shape[1]),
                           accumulate=True)[:n]


__all__ = ["embedding", "embedding_bag"]
