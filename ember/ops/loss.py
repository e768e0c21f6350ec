"""Fused loss primitives: nll_loss (behind cross entropy), mse, smooth L1, Huber, BCE.

Each is one node with torch's ``grad_fn`` name; ``reduction`` ('none' | 'mean' | 'sum') is applied
inside. Class weights, targets of nll and pos_weight are constants (torch gives them no grad).
Each saves what torch's node saves (input, target, the weights given, nll's total weight).
"""

from __future__ import annotations

import numpy as np

from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.compiler.traced import capturing, check
from ember.ops._promote import scalar
from ember.ops.activation import LogSigmoid
from ember.ops.pointwise import sigmoid, where

REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum(dtype=loss.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return loss.mean(dtype=loss.dtype) if loss.size else scalar(np.nan, loss.dtype)


def _scaled(g: Tensor, ctx) -> Tensor:
    """The upstream gradient of a reduced loss, scaled for 'mean'."""
    return g / ctx.n if ctx.reduction == "mean" else g


def _targets_in_range(t: np.ndarray, n: int) -> None:
    if t.min() < 0 or t.max() >= n:
        raise IndexError(f"Target {int(t[(t < 0) | (t >= n)].flat[0])} is out of bounds.")


class NllLoss(Op):
    """``-w[t] * x[n, t]`` picked along the class dim 1; mean divides by the total weight."""

    node_name = "NllLossBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, target=None, weight=None, reduction="mean", ignore_index=-100):
        xa = x if x.ndim > 1 else x[None]
        t = target if x.ndim > 1 else target.reshape(1)
        valid = t != ignore_index
        # (under ember.compile's capture the general path: a replay cannot branch on data)
        all_valid = not capturing() and bool(valid.all())
        tc = t if all_valid else np.where(valid, t, 0)
        if tc.size:
            check(_targets_in_range, tc, xa.shape[1])
        rows = np.arange(tc.shape[0], like=tc) if xa.ndim == 2 else None
        picked = xa[rows, tc] if rows is not None else \
            np.take_along_axis(xa, tc[:, None], axis=1)[:, 0]
        # Per-element weights; None means all ones (the common, fast case).
        if weight is not None:
            w = weight[tc].astype(x.dtype, copy=False)
            w = w if all_valid else w * valid
        else:
            w = None if all_valid else valid.astype(x.dtype)
        loss = -picked if w is None else -picked * w
        denom = scalar(tc.size, x.dtype) if w is None else w.sum(dtype=x.dtype)
        ctx.save_extra(target, *(() if weight is None else (weight,)), denom)
        if reduction == "mean":
            neg = -w if w is not None else scalar(-1, x.dtype)
            # torch gives a zero gradient (and a nan loss) when every target is ignored.
            with np.errstate(invalid="ignore", divide="ignore"):
                coef = np.where(denom != 0, neg / denom, 0).astype(x.dtype, copy=False)
                out = loss.sum(dtype=x.dtype) / denom
        elif reduction == "sum":
            coef, out = (-w if w is not None else scalar(-1, x.dtype)), loss.sum(dtype=x.dtype)
        else:
            coef = -w if w is not None else scalar(-1, x.dtype)
            out = loss if x.ndim > 1 else loss.reshape(target.shape)
        ctx.tc, ctx.rows, ctx.coef, ctx.xshape = tc, rows, coef, x.shape
        ctx.reduction = reduction
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        tc, coef = ctx.tc, ctx.coef
        xshape = ctx.xshape if len(ctx.xshape) > 1 else (1, *ctx.xshape)
        m = np.zeros(xshape, dtype=coef.dtype, like=tc)
        if ctx.rows is not None:
            m[ctx.rows, tc] = coef
        else:
            np.put_along_axis(m, tc[:, None], np.broadcast_to(coef, tc.shape)[:, None], axis=1)
        m = m.reshape(ctx.xshape)
        per_element = ctx.reduction == "none" and len(ctx.xshape) > 1
        if not STATE.enabled:  # first-order backward: scale the mask in place
            m *= g._data[:, None] if per_element else g._data
            return Tensor._make(m)
        return (g.unsqueeze(1) if per_element else g) * Tensor._make(m)


class MseLoss(Op):
    node_name = "MseLossBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, reduction="mean"):
        ctx.reduction, ctx.n = reduction, x.size
        d = x - t
        return _reduce(d * d, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        gx = (x - t) * _scaled(g, ctx) * 2
        need = ctx.needs_input_grad
        return (gx if need[0] else None), (-gx if need[1] else None)


class SmoothL1Loss(Op):
    node_name = "SmoothL1LossBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, reduction="mean", beta=1.0):
        ctx.reduction, ctx.n, ctx.beta = reduction, x.size, beta
        z = np.abs(x - t)
        if beta == 0:
            return _reduce(z, reduction)
        loss = np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta).astype(x.dtype, copy=False)
        return _reduce(loss, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        d = x - t
        a, beta = d._data, ctx.beta
        sign = Tensor._make(np.sign(a))
        inside = Tensor._make(np.abs(a) < beta)
        gx = where(inside, d / beta, sign) * _scaled(g, ctx) if beta else \
            sign * _scaled(g, ctx)
        need = ctx.needs_input_grad
        return (gx if need[0] else None), (-gx if need[1] else None)


class HuberLoss(Op):
    node_name = "HuberLossBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, reduction="mean", delta=1.0):
        ctx.reduction, ctx.n, ctx.delta = reduction, x.size, delta
        z = np.abs(x - t)
        loss = np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))
        return _reduce(loss.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        d = x - t
        a, delta = d._data, ctx.delta
        clipped = Tensor._make(np.sign(a) * scalar(delta, a.dtype))
        gx = where(Tensor._make(np.abs(a) < delta), d, clipped) * _scaled(g, ctx)
        need = ctx.needs_input_grad
        return (gx if need[0] else None), (-gx if need[1] else None)


class BinaryCrossEntropy(Op):
    """``-w * (t * log(x) + (1 - t) * log(1 - x))`` with both logs clamped at -100."""

    node_name = "BinaryCrossEntropyBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, weight=None, reduction="mean"):
        # Written so that NaN fails too, as torch's check does.
        if not ((x >= 0) & (x <= 1)).all():
            raise RuntimeError("all elements of input should be between 0 and 1")
        if not ((t >= 0) & (t <= 1)).all():
            raise RuntimeError("all elements of target should be between 0 and 1")
        ctx.reduction, ctx.n, ctx.weight = reduction, x.size, weight
        if weight is not None:
            ctx.save_extra(weight)
        with np.errstate(divide="ignore"):
            loss = (t - 1) * np.maximum(np.log1p(-x), -100) - t * np.maximum(np.log(x), -100)
        if weight is not None:
            loss = loss * weight
        return _reduce(loss.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors[:2]
        g = _scaled(g, ctx)
        if ctx.weight is not None:
            g = g * Tensor._make(ctx.weight)
        need = ctx.needs_input_grad
        gx = gt = None
        if need[0]:
            gx = g * (x - t) / ((1 - x) * x).clamp_min(1e-12)
        if need[1]:
            gt = g * ((-x).log1p().clamp_min(-100) - x.log().clamp_min(-100))
        return gx, gt


class BinaryCrossEntropyWithLogits(Op):
    """BCE on logits: ``(1 - t) * x + lw * softplus(-x)``, ``lw = 1 + (pos_weight - 1) * t``."""

    node_name = "BinaryCrossEntropyWithLogitsBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, weight=None, pos_weight=None, reduction="mean"):
        ctx.reduction, ctx.n, ctx.weight, ctx.pos_weight = reduction, x.size, weight, pos_weight
        ctx.save_extra(*(a for a in (weight, pos_weight) if a is not None))
        sp = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # softplus(-x), stable
        if pos_weight is not None:
            loss = (1 - t) * x + (1 + (pos_weight - 1) * t) * sp
        else:
            loss = (1 - t) * x + sp
        if weight is not None:
            loss = loss * weight
        return _reduce(loss.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors[:2]
        g = _scaled(g, ctx)
        if ctx.weight is not None:
            g = g * Tensor._make(ctx.weight)
        pw = Tensor._make(ctx.pos_weight) if ctx.pos_weight is not None else None
        need = ctx.needs_input_grad
        gx = gt = None
        if need[0]:
            s = sigmoid(x)
            gx = g * ((pw * t - t + 1) * s - pw * t if pw is not None else s - t)
        if need[1]:
            gt = g * (-x if pw is None else (1 - pw) * LogSigmoid.apply(x) - x)
        return gx, gt


class SoftMarginLoss(Op):
    """``log(1 + exp(-t * x))``; both inputs have a gradient, as in torch."""

    node_name = "SoftMarginLossBackward0"
    saves = (0, 1)

    @staticmethod
    def forward(ctx, x, t, reduction="mean"):
        ctx.reduction, ctx.n = reduction, x.size
        with np.errstate(over="ignore"):
            return _reduce(np.log1p(np.exp(-t * x)), reduction)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        g = _scaled(g, ctx)
        z = (-t * x).exp()
        s = g * z / (z + 1)
        need = ctx.needs_input_grad
        return (-t * s if need[0] else None), (-x * s if need[1] else None)


def _margin_coef(x, n: int, c: int, t, weight):
    """Per-(sample, class) weights of multi-margin terms, on ``x``'s device: the sample's
    class weight, 0 at the target class itself, divided by the number of classes."""
    xp = xp_of(x)
    t = xp.asarray(t)
    off = xp.full((n, c), 1.0 / c, dtype=x.dtype)
    off[xp.arange(n), t] = 0
    if weight is None:
        return off
    return off * xp.asarray(weight)[t][:, None].astype(x.dtype, copy=False)


class MultiMarginLoss(Op):
    """Multi-class hinge ``sum_{i != y} w[y] * max(0, margin - x[y] + x[i])^p / C`` per sample
    (rows of a 2-D input, or a 1-D input as one sample)."""

    node_name = "MultiMarginLossBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, target=None, weight=None, p=1, margin=1.0, reduction="mean"):
        ctx.p, ctx.margin, ctx.reduction = p, margin, reduction
        ctx.save_extra(target, *(() if weight is None else (weight,)))
        x2 = x if x.ndim > 1 else x[None]
        n, c = x2.shape
        t = xp_of(x).asarray(target.reshape(-1))
        z = np.maximum(x2 - x2[xp_of(x).arange(n), t][:, None] + scalar(margin, x.dtype), 0)
        loss = ((z * z if p == 2 else z) * _margin_coef(x, n, c, t, weight)).sum(1)
        ctx.n = n
        return _reduce(loss.reshape(target.shape) if x.ndim == 1 else loss, reduction)

    @staticmethod
    def backward(ctx, g):
        x, target, *w = ctx.saved_tensors
        x2 = x if x.ndim > 1 else x.unsqueeze(0)
        n, c = x2.shape
        t = target._data.reshape(-1)
        rows = np.arange(n)
        h = x2 - x2[rows, t].unsqueeze(1) + ctx.margin
        coef = _margin_coef(x._data, n, c, t, w[0]._data if w else None)
        coef = Tensor._make(coef * (h._data > 0))
        if ctx.p == 2:
            coef = coef * h * 2
        g = _scaled(g, ctx)
        terms = coef * (g.reshape(n, 1) if ctx.reduction == "none" else g)
        xp = xp_of(x._data)
        onehot = xp.zeros((n, c), dtype=x._data.dtype)
        onehot[xp.arange(n), xp.asarray(t)] = 1
        gx = terms - Tensor._make(onehot) * terms.sum(1, keepdim=True)
        return gx.reshape(x.shape)
