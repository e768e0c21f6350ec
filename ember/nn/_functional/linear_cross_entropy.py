"""F.linear_cross_entropy: ``cross_entropy(linear(input, linear_weight, linear_bias), target)``.

``linear_weight`` may have extra dims ``(C, d_1, ..., d_K, in_features)`` for a K-dimensional
loss. ``options`` (torch's chunked path, a memory saving with the same result up to rounding) is
validated as torch does; ember computes the reference path.
"""

from __future__ import annotations

import math
import warnings

from ember import _dtype
from ember._tensor import Tensor
from ember.nn._functional.linear import linear
from ember.nn._functional.loss import cross_entropy


def _check_shapes(input: Tensor, linear_weight: Tensor, linear_bias: Tensor | None) -> None:
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    expected = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != expected:
        raise RuntimeError(f"expected linear_bias shape {expected}, got "
                           f"{tuple(linear_bias.shape)}")
    if len(expected) > 1 and input.ndim == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{input.shape[-1]}), got unbatched input with shape "
                           f"{tuple(input.shape)}")


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """Cross entropy of the logits ``linear(input, linear_weight, linear_bias)``; an
    ``ignore_index`` of None means -100 (and is the only choice for probability targets)."""
    _check_shapes(input, linear_weight, linear_bias)
    num_classes, *out_features = linear_weight.shape[:-1]
    logits_shape = (*input.shape[:-1], num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    if options is not None:
        _check_options(options, input, num_classes, target, out_features, reduction,
                       label_smoothing, linear_bias)
    if out_features:
        rows = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(rows, input.shape[-1])
        linear_bias = None if linear_bias is None else linear_bias.reshape(rows)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


def _check_options(options, input: Tensor, num_classes: int, target: Tensor,
                   out_features: list, reduction: str, label_smoothing: float,
                   linear_bias: Tensor | None) -> None:
    """torch's warning for options its chunked path cannot take, and its chunk-size check
    for those it can."""
    if (out_features or reduction not in {"mean", "sum", "none"} or label_smoothing != 0.0
            or target.dtype != _dtype.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs "
                      "reduction in {'mean','sum','none'}, label_smoothing == 0, target.dtype"
                      " == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                      f"target.dtype={target.dtype}, out_features={tuple(out_features)}"
                      ", tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=3)
        return
    batches = input.shape[0] if input.ndim == 2 else 1
    options._check_chunking(batches, input.shape[-1], num_classes)


__all__ = ["linear_cross_entropy"]
