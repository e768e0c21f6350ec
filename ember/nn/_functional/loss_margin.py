"""Margin and likelihood losses composed from ember ops (as torch composes them in ATen)."""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.nn._functional.loss import _check_reduction, _legacy_reduction, _reduce
from ember.nn._functional.misc import pairwise_distance
from ember.ops.activation import LogSigmoid
from ember.ops.loss import MultiMarginLoss, SoftMarginLoss
from ember.ops.pointwise import where


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``x`` where target is 1, ``max(0, margin - x)`` where it is -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = input * 0
    t = target._data
    out = where(Tensor._make(t != 1), (margin - input).clamp_min(0), zeros) + \
        where(Tensor._make(t != -1), input, zeros)
    return _reduce(out, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return SoftMarginLoss.apply(input, target, reduction=reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Per-class binary logistic loss, averaged over classes."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * LogSigmoid.apply(input) + (1 - target) * LogSigmoid.apply(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Negative log likelihood of a Poisson target (rate given as log-rate by default)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        # ATen's composition: the term is masked after the fact, so a target of 0 gets a NaN
        # gradient (0 / 0 in log's), as in torch; 0 * log(0) is NaN silently there too
        with np.errstate(invalid="ignore"):
            stirling = target * target.log() - target + (target * (2 * math.pi)).log() * 0.5
        loss = loss + stirling.masked_fill(Tensor._make(target._data <= 1), 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """``0.5 * (log(var) + (input - target)^2 / var)`` with var clamped at eps (no grad)."""
    from ember._creation import ones_like

    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = ones_like(input) * var
    elif bool(np.any(var._data < 0)):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # The clamp only changes values, not the graph (torch clamps a clone under no_grad).
    var = var.clone()
    np.maximum(var._data, eps, out=var._data)
    loss = (var.log() + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with pairwise distances."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from ember.ops.pointwise_more import minimum

        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """Triplet loss with any ``distance_function(x, y)`` (pairwise distance by default)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_reduction(reduction)
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        from ember.ops.pointwise_more import minimum

        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per sample."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    n = input.shape[0] if input.ndim > 1 else 1
    t = target._data.reshape(-1)
    if t.shape[0] != n:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the "
                           "number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    _check_reduction(reduction)
    return MultiMarginLoss.apply(input, target=target._data.astype(np.int64, copy=False),
                                 weight=None if weight is None else weight._data, p=p,
                                 margin=margin, reduction=reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-class multi-label hinge: ``sum_{j in y} sum_{i not in y} max(0, 1 - (x[j] - x[i]))
    / C`` per sample, the target classes ``y`` listed up to the first -1."""
    from ember import _dtype
    from ember.nn._functional.loss import _cname
    from ember.ops.loss_multilabel import MultilabelMarginLoss

    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.ndim > 2 or input.ndim == 2 and input.shape[1] == 0 or \
            input.ndim == 1 and input.shape[0] == 0:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if target.dtype != _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {_cname(target.dtype)}")
    t = target._data
    if t.size and (t.min() < -1 or t.max() >= (input.shape[-1] if input.ndim else 1)):
        raise RuntimeError("argument #2 'target' is out of range")
    return MultilabelMarginLoss.apply(input, target=t, reduction=reduction)


__all__ = [
    "multilabel_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "triplet_margin_loss",
]
