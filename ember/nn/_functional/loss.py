"""Functional losses with torch's argument checks, messages and reductions.

cross_entropy is ``nll_loss(log_softmax(x, 1))``: two fused nodes (NllLossBackward0 over
LogSoftmaxBackward0), exactly torch's graph.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.ops import loss as L
from ember.ops._promote import cast, check_broadcast
from ember.ops.activation import log_softmax
from ember.ops.pointwise import where
from ember.ops.pointwise_binary import xlogy
from ember.ops.shape import expand


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=3)
    return ret


def _check_reduction(reduction: str) -> None:
    if reduction not in L.REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _cname(dt: _dtype.dtype) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "float32": "Float", "float64": "Double",
            "float16": "Half"}.get(dt.name, dt.name)


def _promote_pair(input: Tensor, target: Tensor):
    if input._data.dtype == target._data.dtype:
        return input, target
    dt = _dtype.result_type((input, target))
    return cast(input, dt), cast(target, dt)


def _weight_array(weight: Tensor | None, input: Tensor, n_classes: int):
    if weight is None:
        return None
    if weight.numel() != n_classes:
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    if weight._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected scalar type {_cname(input.dtype)} but found "
                           f"{_cname(weight.dtype)}")
    return weight._data.reshape(-1)


def _check_nll_shapes(input: Tensor, target: Tensor) -> None:
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and (target.ndim == 0 or input.shape[0] != target.shape[0]):
        tb = target.shape[0] if target.ndim else 1
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({tb}).")
    if input.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        return
    expected = (input.shape[0], *input.shape[2:])
    if input.ndim == 4 and target.ndim != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.ndim}")
    if tuple(target.shape) != expected:
        if input.ndim == 4:
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                               f"{list(target.shape)}")
        raise ValueError(f"Expected target size {list(expected)}, got {list(target.shape)}")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices ``target`` under log-probabilities ``input``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_nll_shapes(input, target)
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_cname(target.dtype)}")
    n_classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    w = _weight_array(weight, input, n_classes)
    return L.NllLoss.apply(input, target=target._data.astype(np.int64, copy=False), weight=w,
                           reduction=reduction, ignore_index=ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over the class dim (1, or 0 for unbatched input) followed by nll_loss.

    ``target`` holds class indices, or class probabilities with the input's shape.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")
    class_dim = 0 if input.ndim == 1 else 1
    if input.shape == target.shape and input.ndim > 0:
        return _cross_entropy_probs(input, target, weight, class_dim, reduction,
                                    label_smoothing, ignore_index)
    lsm = log_softmax(input, class_dim)
    nll = nll_loss(lsm, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    # ATen's cross_entropy_loss_label_smoothing, op for op (its graph saves what torch's does).
    n_classes = input.shape[class_dim]
    ignore = Tensor._make(target._data == ignore_index)
    if weight is not None:
        wshape = [1] * input.ndim
        wshape[class_dim] = n_classes
        smooth = -(lsm * weight.view(*wshape)).sum(class_dim)
    else:
        smooth = -lsm.sum(class_dim)
    smooth.masked_fill_(ignore, 0.0)
    if reduction == "mean":
        keep = target._data != ignore_index
        if weight is not None:
            total = weight._data.reshape(-1)[target._data[keep]].sum(dtype=input._data.dtype)
        else:
            total = keep.sum()
        # a NumPy scalar on the CPU, a 0-d CuPy array on the GPU (np.asarray refuses that)
        ret = smooth.sum() / Tensor._make(np.asarray(total) if isinstance(total, np.generic)
                                          else total)
    else:
        ret = smooth.sum() if reduction == "sum" else smooth
    return nll * (1 - label_smoothing) + ret * (label_smoothing / n_classes)


def _cross_entropy_probs(input, target, weight, class_dim, reduction, label_smoothing,
                         ignore_index) -> Tensor:
    if not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {_cname(target.dtype)}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    n_classes = input.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = log_softmax(input, class_dim) * target
    if weight is not None:
        wshape = [1] * input.ndim
        wshape[class_dim] = n_classes
        prod = prod * weight.view(*wshape)
    if reduction == "mean":
        return -prod.sum() / (input.numel() / n_classes) if input.numel() else -prod.sum() * \
            float("nan")
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum(class_dim)


def _size_warning(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _broadcast(input: Tensor, target: Tensor):
    if input.shape == target.shape:
        return input, target
    check_broadcast(tuple(input.shape), tuple(target.shape))
    shape = np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    return expand(input, *shape), expand(target, *shape)


def _weighted(loss: Tensor, weight: Tensor, input: Tensor, reduction: str) -> Tensor:
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return loss.sum() if reduction == "sum" else loss


def _float_pair(input: Tensor, target: Tensor, kernel: str):
    """The promoted pair, refused as torch's kernel is for integers and bool."""
    x, t = _promote_pair(input, target)
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_cname(x.dtype)}\'')
    return _broadcast(x, t)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = _float_pair(input, target, "mse_cpu")
    if weight is not None:
        return _weighted((x - t) ** 2, weight, input, reduction)
    return L.MseLoss.apply(x, t, reduction=reduction)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = _broadcast(input, target)
    if weight is not None:
        return _weighted((x - t).abs(), weight, input, reduction)
    return _reduce((x - t).abs(), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    _size_warning(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    x, t = _float_pair(input, target, "smooth_l1_cpu")
    return L.SmoothL1Loss.apply(x, t, reduction=reduction, beta=beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    _size_warning(input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, t = _float_pair(input, target, "huber_cpu")
    if weight is not None:
        loss = L.HuberLoss.apply(x, t, reduction="none", delta=delta)
        return _weighted(loss, weight, input, reduction)
    return L.HuberLoss.apply(x, t, reduction=reduction, delta=delta)


def _expand_weight(weight: Tensor | None, input: Tensor):
    if weight is None:
        return None
    return np.broadcast_to(weight._data, np.broadcast_shapes(weight._data.shape,
                                                             input._data.shape))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    if target._data.dtype != input._data.dtype:
        raise RuntimeError(f"Found dtype {_cname(target.dtype)} but expected "
                           f"{_cname(input.dtype)}")
    return L.BinaryCrossEntropy.apply(input, target, weight=_expand_weight(weight, input),
                                      reduction=reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    x, t = _promote_pair(input, target)
    dt = x._data.dtype
    w = _expand_weight(weight, x)
    pw = pos_weight._data.astype(dt, copy=False) if pos_weight is not None else None
    return L.BinaryCrossEntropyWithLogits.apply(
        x, t, weight=None if w is None else w.astype(dt, copy=False), pos_weight=pw,
        reduction=reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise ``target * (log(target) - input)``; 'batchmean' divides the sum by the batch."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim != 0 else total
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos - margin)`` where it is -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim not in (1, 2) or input1.shape != input2.shape:
        raise RuntimeError("cosine_embedding_loss: Input1 and Input2 must be 1D or 2D and of the "
                           f"same shape, got {list(input1.shape)} and {list(input2.shape)}")
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos * 0
    t = target._data
    pos = where(Tensor._make(t == 1), 1 - cos, zeros)
    neg = where(Tensor._make(t == -1), (cos - margin).clamp_min(0), zeros)
    return _reduce(pos + neg, reduction)


__all__ = [
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "cosine_embedding_loss",
]
