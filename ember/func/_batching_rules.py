"""Batching rules: each op on physical tensors whose dim 0 is the vmap batch.

A rule gets the op class, the physical inputs ``vals`` (batched ones have the batch at dim 0,
``bd`` says which), the keyword arguments (tensor ones unwrapped the same way, ``kwb``) and the
batch size, and returns the physical result with the batch at dim 0. It computes with ordinary
ember ops, so autograd records the physical computation. Most rules are declared generically
by op family (elementwise, broadcasting, ``dim``-shifting, views); matmul, addmm, nll_loss, the
pointwise losses and convolution have their own; ``_batching_rules_nn`` adds normalization,
pooling, padding, indexing and einsum. An op with no rule runs once per sample
(``_loop``), so vmap works for every op and batching only ever makes it faster.
"""

from __future__ import annotations

import numpy as np

from ember.func._batched import Unbatchable
from ember.ops import (
    activation,
    conv,
    indexing,
    joining,
    linalg,
    loss,
    pointwise,
    pointwise_binary,
    pointwise_math,
    pointwise_more,
    pointwise_pow,
    pointwise_special,
    reduction,
    reduction_cum,
    reduction_minmax,
    shape,
    sorting,
)

RULES: dict = {}  # op class -> rule(cls, vals, bd, kw, kwb, size)
FAMILY: dict = {}  # base op class -> the rule of every subclass (ember's per-node variants)


def apply_rule(cls, vals: list, bd: list, kw: dict, kwb: dict, size: int):
    rule = RULES.get(cls)
    if rule is None:
        rule = next((FAMILY[b] for b in cls.__mro__ if b in FAMILY), None)
        if rule is not None:
            RULES[cls] = rule
    if rule is None:
        if "Inplace" in cls.__name__ or cls.__module__.endswith((".inplace", "_setitem")):
            raise Unbatchable(f"in-place {cls.__name__} on a BatchedTensor")
        rule = _loop
    return rule(cls, vals, bd, kw, kwb, size)


def _loop(cls, vals, bd, kw, kwb, size):
    """No rule: the op once per sample, the results stacked (the generic fallback)."""
    from ember import stack

    outs = []
    for i in range(size):
        args = [v.select(0, i) if b else v for v, b in zip(vals, bd)]
        kwi = {k: (v.select(0, i) if _is_tensor(v) else v[i]) if kwb[k] else v
               for k, v in kw.items()}
        outs.append(cls.apply(*args, **kwi))
    if type(outs[0]) is tuple:
        return tuple(stack([o[j] for o in outs]) for j in range(len(outs[0])))
    return stack(outs)


def _logical_ndim(v, b: bool) -> int:
    return v.ndim - 1 if b else v.ndim


def _align(vals: list, bd: list, rank: int) -> list:
    """Batched inputs get size-1 dims after the batch so that NumPy's right-aligned
    broadcasting pairs their logical dims with the unbatched inputs'."""
    out = []
    for v, b in zip(vals, bd):
        k = rank - _logical_ndim(v, b) if b else 0
        out.append(v.reshape((v.shape[0],) + (1,) * k + tuple(v.shape[1:])) if k > 0 else v)
    return out


def elementwise(cls, vals, bd, kw, kwb, size):
    """Elementwise and broadcasting ops (tensor keyword operands too, e.g. where's cond)."""
    keys = [k for k in kw if kwb[k] or _is_tensor(kw[k])]
    allv = vals + [kw[k] for k in keys]
    allb = bd + [kwb[k] for k in keys]
    rank = max(_logical_ndim(v, b) for v, b in zip(allv, allb))
    allv = _align(allv, allb, rank)
    kw = dict(kw, **dict(zip(keys, allv[len(vals):])))
    return cls.apply(*allv[:len(vals)], **kw)


def _is_tensor(x) -> bool:
    from ember._tensor import Tensor

    return isinstance(x, Tensor)


def same_shape(cls, vals, bd, kw, kwb, size):
    """Elementwise ops whose inputs must have equal shapes: unbatched ones are expanded."""
    vals = [v if b else v.unsqueeze(0).expand(size, *v.shape) for v, b in zip(vals, bd)]
    return cls.apply(*vals, **kw)


def _dim(d: int, nd: int) -> int:
    return d % nd + 1


def _first_batched_only(vals, bd, kwb) -> bool:
    """Only input 0 batched, and not a logical scalar (whose dims have no physical twin)."""
    return bd[0] and not any(bd[1:]) and not any(kwb.values()) and vals[0].ndim > 1


def dim_shift(*names):
    """Ops with int ``dim``-like keyword arguments of input 0: shift them past the batch."""
    def rule(cls, vals, bd, kw, kwb, size):
        if not _first_batched_only(vals, bd, kwb):
            return _loop(cls, vals, bd, kw, kwb, size)
        nd = vals[0].ndim - 1
        kw = dict(kw)
        for n in names:
            if n in kw and kw[n] is not None:
                kw[n] = _dim(kw[n], nd)
        return cls.apply(*vals, **kw)
    return rule


def dims_shift(cls, vals, bd, kw, kwb, size):
    """Reductions over ``dims`` (None: every logical dim)."""
    if not _first_batched_only(vals, bd, kwb):
        return _loop(cls, vals, bd, kw, kwb, size)
    nd = vals[0].ndim - 1
    dims = kw.get("dims")
    dims = tuple(range(1, nd + 1)) if dims is None else tuple(_dim(d, nd) for d in dims)
    return cls.apply(*vals, **dict(kw, dims=dims))


def unsqueeze(cls, vals, bd, kw, kwb, size):
    return cls.apply(vals[0], dim=kw.get("dim", 0) % vals[0].ndim + 1)


def permute(cls, vals, bd, kw, kwb, size):
    nd = vals[0].ndim - 1
    return cls.apply(vals[0], dims=(0, *(d % nd + 1 for d in kw["dims"])))


def transpose_2d(cls, vals, bd, kw, kwb, size):
    v = vals[0]
    return shape.Transpose.apply(v, d0=1, d1=2) if v.ndim == 3 else shape.Alias.apply(v)


def view(cls, vals, bd, kw, kwb, size):
    return cls.apply(vals[0], shape=(size, *kw["shape"]))


def expand(cls, vals, bd, kw, kwb, size):
    v, target = vals[0], tuple(kw["shape"])
    lead = len(target) - (v.ndim - 1)
    if lead > 0:
        v = v.reshape((size,) + (1,) * lead + tuple(v.shape[1:]))
    return cls.apply(v, shape=(size, *target))


def squeeze(cls, vals, bd, kw, kwb, size):
    v, dims = vals[0], kw.get("dims")
    if dims is None:
        dims = tuple(d for d in range(1, v.ndim) if v.shape[d] == 1)
    else:
        dims = tuple(d % (v.ndim - 1) + 1 for d in dims) if v.ndim > 1 else ()
    return cls.apply(v, dims=dims)


def joined(cls, vals, bd, kw, kwb, size):
    """stack / cat: every input batched (unbatched ones expanded), ``dim`` shifted."""
    if kw.get("skip") is not None:
        return _loop(cls, vals, bd, kw, kwb, size)
    vals = [v if b else v.unsqueeze(0).expand(size, *v.shape) for v, b in zip(vals, bd)]
    nd = vals[0].ndim - (0 if cls is joining.Stack else 1)
    return cls.apply(*vals, **dict(kw, dim=kw["dim"] % nd + 1))


def _bmatmul(a, b):
    """The product of logical matrices batched on either side or both: ember's matmul folds
    a batch on the left into the rows of one GEMM, and broadcasts otherwise."""
    from ember import matmul

    return matmul(a, b)


def mm(cls, vals, bd, kw, kwb, size):
    return _bmatmul(vals[0], vals[1])


def mv(cls, vals, bd, kw, kwb, size):
    return _bmatmul(vals[0], vals[1].unsqueeze(-1)).squeeze(-1)


def dot(cls, vals, bd, kw, kwb, size):
    return (vals[0] * vals[1]).sum(-1)


def addmm(cls, vals, bd, kw, kwb, size):
    """``beta * c + alpha * (a @ b)``: only ``a`` batched (nn.Linear on a batch of inputs)
    folds the batch into the rows of one Addmm; otherwise a batched matmul plus ``c``."""
    (c, a, b), (cb, ab, bb) = vals, bd
    beta, alpha = kw.get("beta", 1), kw.get("alpha", 1)
    if ab and not bb and not cb:
        n = a.shape[1]
        out = cls.apply(c, a.reshape(size * n, a.shape[2]), b, beta=beta, alpha=alpha)
        return out.view(size, n, out.shape[1])
    prod = _bmatmul(a, b)
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod if ab or bb else prod.unsqueeze(0).expand(size, *prod.shape)
    (prod, c) = _align([prod, c], [ab or bb, cb], 2)
    return prod + c if beta == 1 else prod + c * beta


def bmm(cls, vals, bd, kw, kwb, size):
    from ember import matmul

    return matmul(vals[0], vals[1])


def nll_loss(cls, vals, bd, kw, kwb, size):
    """Per-sample nll_loss: the unreduced loss of the batch's rows, then each sample's sum or
    (weighted) mean. ``target`` (and ``weight``) are arrays, as the functional passes them."""
    from ember._tensor import Tensor

    x, t, w = vals[0], kw["target"], kw.get("weight")
    logical = x.ndim - bd[0]
    if logical > 2 or kwb.get("weight"):
        return _loop(cls, vals, bd, kw, kwb, size)
    x = x if bd[0] else x.unsqueeze(0).expand(size, *x.shape)
    t = t if kwb["target"] else np.broadcast_to(t, (size, *t.shape))
    if logical == 1:  # one sample of shape (C,): one row
        x, t = x.unsqueeze(1), t[:, None]
    n, c = x.shape[1], x.shape[2]
    red, ignore = kw.get("reduction", "mean"), kw.get("ignore_index", -100)
    rows = cls.apply(x.reshape(size * n, c), target=t.reshape(size * n), weight=w,
                     reduction="none", ignore_index=ignore).view(size, n)
    if red == "none":
        return rows if logical == 2 else rows.squeeze(1)
    total = rows.sum(1)
    if red == "sum":
        return total
    valid = t != ignore
    wt = valid if w is None else np.where(valid, w[np.where(valid, t, 0)], 0)
    return total / Tensor._make(wt.sum(1, dtype=x.dtype.np))


def pointwise_loss(cls, vals, bd, kw, kwb, size):
    """mse / huber / smooth-l1 / soft-margin: unreduced on the batch, reduced per sample."""
    if any(kwb.values()) or any(_is_tensor(v) for v in kw.values()):
        return _loop(cls, vals, bd, kw, kwb, size)
    vals = [v if b else v.unsqueeze(0).expand(size, *v.shape) for v, b in zip(vals, bd)]
    out = cls.apply(*vals, **dict(kw, reduction="none"))
    red = kw.get("reduction", "mean")
    if red == "none" or out.ndim == 1:
        return out
    dims = tuple(range(1, out.ndim))
    return out.sum(dims) if red == "sum" else out.mean(dims)


def convolution(cls, vals, bd, kw, kwb, size):
    """A batch of (N, C, ...) inputs against unbatched weights: fold the batch into N."""
    if any(bd[1:]):
        return _batched_weight_conv(cls, vals, bd, kw, kwb, size)
    if vals[0].ndim < 4:
        return _loop(cls, vals, bd, kw, kwb, size)
    x = vals[0]
    out = cls.apply(x.reshape(size * x.shape[1], *x.shape[2:]), *vals[1:], **kw)
    return out.view(size, x.shape[1], *out.shape[1:])


def _batched_weight_conv(cls, vals, bd, kw, kwb, size):
    """Per-sample weights (an ensemble): the batch folds into the channels, one group of
    groups per sample, so the whole batch is one convolution."""
    x, w = vals[0], vals[1]
    nd_w = w.ndim - bd[1]
    if x.ndim - bd[0] != nd_w or not bd[1]:
        return _loop(cls, vals, bd, kw, kwb, size)
    if bd[0]:  # (B, N, C, *S) -> (N, B * C, *S)
        n = x.shape[1]
        x = x.movedim(0, 1).reshape(n, size * x.shape[2], *x.shape[3:])
    else:
        n = x.shape[0]
        x = x.unsqueeze(1).expand(n, size, *x.shape[1:]).reshape(n, size * x.shape[1],
                                                                  *x.shape[2:])
    o = w.shape[1]
    args = [x, w.reshape(size * o, *w.shape[2:])]
    if len(vals) > 2 and vals[2] is not None:
        b = vals[2] if bd[2] else vals[2].unsqueeze(0).expand(size, o)
        args.append(b.reshape(size * o))
    out = cls.apply(*args, **dict(kw, groups=kw["groups"] * size))
    return out.view(n, size, o, *out.shape[2:]).movedim(1, 0)


def _declare() -> None:
    unary = [c for m in (pointwise, pointwise_math, pointwise_more, pointwise_special,
                         pointwise_binary, activation, pointwise_pow)
             for c in vars(m).values()
             if isinstance(c, type) and "elementwise_op" in getattr(
                 getattr(c, "forward", None), "__qualname__", "")]
    unary += [activation.Celu, activation.Elu, activation.Gelu, activation.Hardshrink,
              activation.Hardsigmoid, activation.Hardswish, activation.Hardtanh,
              activation.LeakyRelu, activation.LogSigmoid, activation.Mish, activation.Silu,
              activation.Softplus, activation.Softshrink, activation.Threshold, pointwise.Clone,
              pointwise.DivScalar, pointwise.ToCopy, pointwise.RsubScalar,
              pointwise_binary.XlogyScalarOther, pointwise_binary.XlogyScalarSelf,
              pointwise_math.Logit, pointwise_more.Clamp, pointwise_more.ClampMax,
              pointwise_more.ClampMin, pointwise_more.FmodScalar,
              pointwise_more.RemainderScalar, pointwise_pow.PowScalar, pointwise_pow.RPowScalar,
              pointwise_special.Digamma, pointwise_special.Erf, pointwise_special.Erfc,
              pointwise_special.Erfinv, pointwise_special.Lgamma, pointwise_special.Polygamma]
    broadcasting = [c for m in (pointwise, pointwise_binary, pointwise_more, pointwise_pow)
                    for c in vars(m).values()
                    if isinstance(c, type) and getattr(c, "broadcasts", False)
                    and c.__module__ == m.__name__ and not c.__name__.startswith("_")]
    for c in unary + broadcasting:
        if "Inplace" not in c.__name__:
            RULES[c] = elementwise
    RULES[pointwise.ThresholdBackward] = same_shape
    for c in (reduction.Sum, reduction.SumDim, reduction.Mean, reduction.MeanDim,
              reduction.Nansum, reduction.Prod, reduction.ProdDim):
        RULES[c] = dims_shift
    for c in (activation.LogSoftmax, activation.Softmax, activation.Glu, reduction_cum.Cumsum,
              reduction_cum.Cumprod, reduction_cum.Logcumsumexp, reduction_cum.Cummax,
              reduction_cum.Cummin, reduction_minmax.MaxDim, reduction_minmax.MinDim,
              sorting.Sort, sorting.SortStable, sorting.Topk, sorting.Kthvalue,
              indexing.Select, indexing.Slice, joining.Unbind, joining.Split,
              joining.SplitWithSizes):
        RULES[c] = dim_shift("dim")
    RULES[shape.Transpose] = dim_shift("d0", "d1")
    RULES[shape.Unsqueeze] = unsqueeze
    RULES[shape.Permute] = permute
    RULES[shape.T] = transpose_2d
    RULES[shape.View] = RULES[shape.UnsafeView] = view
    RULES[shape.Expand] = expand
    for c in (shape.Squeeze, shape.SqueezeDim, shape.SqueezeDims, linalg._SqueezeInplace):
        RULES[c] = squeeze
    RULES[shape.Alias] = RULES[pointwise.Clone]
    RULES[joining.Stack] = RULES[joining.Cat] = joined
    RULES[linalg.Mm] = mm
    RULES[linalg.Mv] = mv
    RULES[linalg.Dot] = RULES[linalg.Vdot] = dot
    RULES[linalg.Addmm] = addmm
    RULES[linalg.Bmm] = bmm
    RULES[loss.NllLoss] = nll_loss
    for c in (loss.MseLoss, loss.HuberLoss, loss.SmoothL1Loss, loss.SoftMarginLoss):
        RULES[c] = pointwise_loss
    RULES[conv.Convolution] = convolution


_declare()
from ember.func import _batching_rules_nn  # noqa: E402, F401 - the nn ops' rules register
