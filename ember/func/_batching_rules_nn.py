"""Batching rules for the neural-network ops: normalization, pooling, padding, resampling,
indexing (gather / scatter / index_select / masked_fill / embedding), einsum, binary cross
entropy and the reductions with ``dims`` that ``_batching_rules`` does not declare.

Same contract as ``_batching_rules``: physical inputs with the batch at dim 0, a physical
result with the batch at dim 0, computed with ember ops (so autograd records it). The
families keyed by a base class (``FAMILY``) serve every subclass ember makes of it per torch
node name (``variant``, ``norm_apply``'s saving classes).
"""

from __future__ import annotations

import numpy as np

from ember.func._batching_rules import (
    FAMILY,
    RULES,
    _dim,
    _loop,
    dim_shift,
    dims_shift,
    pointwise_loss,
)
from ember.ops import (
    einsum,
    indexing_masked,
    indexing_ops,
    loss,
    norm,
    pool,
    reduction,
    reduction_minmax,
    reduction_norm,
    shape_copy,
    shape_strided,
)


def _batched(v, b: bool, size: int):
    return v if b else v.unsqueeze(0).expand(size, *v.shape)


def _batched_array(a, b: bool, size: int):
    return a if b else np.broadcast_to(a, (size, *a.shape))


def normalization(cls, vals, bd, kw, kwb, size):
    """batch / layer / group norm of a batched input with unbatched affine parameters and
    running statistics: the statistics' dims shift past the batch (so each sample keeps its
    own), the flat statistics come back per sample."""
    if not bd[0] or any(bd[1:]) or any(kwb.values()):
        return _loop(cls, vals, bd, kw, kwb, size)
    gshape, sdims, ashape, pdims = kw["geom"]
    geom = (None if gshape is None else (size, *gshape), tuple(d + 1 for d in sdims),
            (1, *ashape), (0, *(d + 1 for d in pdims)))
    stats = kw.get("stats")
    if stats is not None:
        stats = tuple(s.reshape((1, *s.shape)) for s in stats)
    y, mean, var = cls.apply(*vals, **dict(kw, geom=geom, stats=stats))
    if stats is not None:  # eval mode: the running statistics, the same for every sample
        return y, mean.expand(size, *mean.shape), var.expand(size, *var.shape)
    return y, mean.view(size, -1), var.view(size, -1)


def fold_into_n(cls, vals, bd, kw, kwb, size):
    """Ops on (N, C, *spatial) whose samples are independent (pooling): the batch folds into
    N (all outputs, the max-pool indices too, are per plane)."""
    if len(vals) != 1 or any(kwb.values()):
        return _loop(cls, vals, bd, kw, kwb, size)
    x = vals[0]
    out = cls.apply(x.reshape(size * x.shape[1], *x.shape[2:]), **kw)
    if type(out) is tuple:
        return tuple(o.view(size, x.shape[1], *o.shape[1:]) for o in out)
    return out.view(size, x.shape[1], *out.shape[1:])


def trailing(cls, vals, bd, kw, kwb, size):
    """Ops that act on trailing dims only (interpolation, reflection / replication padding,
    tril / triu): the batch is one more leading dim."""
    if len(vals) != 1 or any(kwb.values()):
        return _loop(cls, vals, bd, kw, kwb, size)
    return cls.apply(vals[0], **kw)


def constant_pad(cls, vals, bd, kw, kwb, size):
    return cls.apply(vals[0], **dict(kw, pads=((0, 0), *kw["pads"])))


def whole_extreme(cls, vals, bd, kw, kwb, size):
    """max() / min() of each sample: amax / amin over its dims (the same gradient: ties share
    it evenly)."""
    op = reduction_minmax.Amax if cls.__name__.startswith("Max") else reduction_minmax.Amin
    x = vals[0]
    return op.apply(x.reshape(size, -1), dims=(1,), keepdim=False)


def shifted(**names):
    """Ops whose keyword arguments name dims of input 0 (ints or tuples of ints)."""
    def rule(cls, vals, bd, kw, kwb, size):
        if not bd[0] or any(bd[1:]) or any(kwb.values()) or vals[0].ndim < 2:
            return _loop(cls, vals, bd, kw, kwb, size)
        nd, kw = vals[0].ndim - 1, dict(kw)
        for n in names:
            d = kw[n]
            if isinstance(d, tuple) and not d:
                return _loop(cls, vals, bd, kw, kwb, size)  # () means "flattened"
            kw[n] = tuple(_dim(i, nd) for i in d) if isinstance(d, tuple) else _dim(d, nd)
        return cls.apply(*vals, **kw)
    return rule


def repeat(cls, vals, bd, kw, kwb, size):
    x, reps = vals[0], tuple(kw["reps"])
    lead = len(reps) - (x.ndim - 1)
    x = x.reshape((size,) + (1,) * lead + tuple(x.shape[1:]))
    return cls.apply(x, reps=(1, *reps))


def masked_fill(cls, vals, bd, kw, kwb, size):
    """``x`` filled where ``mask``: a batched mask gets its logical dims aligned with ``x``'s
    (and an unbatched ``x`` expanded); an unbatched one broadcasts as it is."""
    if len(vals) != 1:
        return _loop(cls, vals, bd, kw, kwb, size)
    x, mask = vals[0], kw["mask"]
    if kwb["mask"]:
        x = _batched(x, bd[0], size)
        k = x.ndim - mask.ndim
        mask = mask.reshape((size,) + (1,) * k + mask.shape[1:]) if k > 0 else mask
    return cls.apply(x, **dict(kw, mask=mask))


def gather(cls, vals, bd, kw, kwb, size):
    """gather / scatter_add along ``dim``: every tensor batched (unbatched ones expanded),
    ``dim`` shifted; the index has the input's rank, as torch asks."""
    index = _batched_array(kw["index"], kwb["index"], size)
    vals = [_batched(v, b, size) for v, b in zip(vals, bd)]
    return cls.apply(*vals, **dict(kw, index=index, dim=_dim(kw["dim"], vals[0].ndim - 1)))


def embedding(cls, vals, bd, kw, kwb, size):
    """Unbatched weight, batched indices: the rows of the whole batch in one lookup."""
    if bd[0]:
        return _loop(cls, vals, bd, kw, kwb, size)
    return cls.apply(vals[0], **kw)


def einsum_rule(cls, vals, bd, kw, kwb, size):
    """A fresh letter for the batch, on the batched operands and the output."""
    used = set("".join(kw["subs"]) + kw["out"])
    b = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used)
    subs = tuple(b + s if isb else s for s, isb in zip(kw["subs"], bd))
    return cls.apply(*vals, **dict(kw, subs=subs, out=b + kw["out"]))


def index(cls, vals, bd, kw, kwb, size):
    """``x[key]`` with an unbatched key: the basic steps' dims shift past the batch and the
    advanced part gains a leading ``:``; where NumPy puts the indexed dims first (arrays
    apart), the batch dim moves back to the front."""
    key = kw["key"]
    steps, adv = key[0], key[1]
    items = () if adv is None else adv
    if not bd[0] or any(k == 3 for k, _, _ in steps) or not all(
            isinstance(i, slice) or type(i) is np.ndarray and i.dtype.kind in "iu"
            for i in items):
        return _loop(cls, vals, bd, kw, kwb, size)
    steps = tuple((k, d + 1, a) for k, d, a in steps)
    key = (steps, None if adv is None else (slice(None), *adv), *key[2:])
    out = cls.apply(vals[0], **dict(kw, key=key))
    dims = [d for d, i in enumerate(items) if not isinstance(i, slice)]
    if dims and dims != list(range(dims[0], dims[-1] + 1)):
        lead = len(np.broadcast_shapes(*(items[d].shape for d in dims)))
        out = out.movedim(lead, 0)
    return out


def _declare() -> None:
    FAMILY[norm._Norm] = normalization
    for c in (pool.MaxPool, pool.AvgPool, pool.AdaptiveAvgPool, pool.AdaptiveMaxPool):
        FAMILY[c] = fold_into_n
    FAMILY[pool.Resample] = trailing
    for c in (shape_copy.Tril, shape_copy.Triu):
        RULES[c] = trailing
    RULES[pool.ConstantPadNd] = constant_pad
    for c in (reduction.Var, reduction.Std, reduction.Logsumexp, reduction_norm.LinalgVectorNorm,
              reduction_minmax.Amax, reduction_minmax.Amin):
        RULES[c] = dims_shift
    RULES[reduction_minmax.Max] = RULES[reduction_minmax.Min] = whole_extreme
    RULES[indexing_ops.IndexSelect] = dim_shift("dim")
    RULES[shape_copy.Flip] = shifted(dims=())
    RULES[shape_copy.Roll] = shifted(dims=())
    RULES[shape_strided.Diagonal] = RULES[shape_copy.DiagonalCopy] = shifted(d1=0, d2=0)
    RULES[shape_strided.Unfold] = shifted(dim=0)
    RULES[shape_copy.Repeat] = repeat
    RULES[indexing_masked.MaskedFill] = masked_fill
    RULES[indexing_ops.Gather] = RULES[indexing_ops.ScatterAdd] = gather
    for c in (loss.BinaryCrossEntropy, loss.BinaryCrossEntropyWithLogits):
        RULES[c] = pointwise_loss  # unbatched weights broadcast against the logical dims
    from ember.ops import indexing

    RULES[indexing.Index] = index
    RULES[einsum.Einsum] = RULES[einsum.EinsumPair] = einsum_rule
    from ember.nn._functional.sparse import Embedding

    RULES[Embedding] = embedding


_declare()
