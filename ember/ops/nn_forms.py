"""``torch.<name>`` forms of ``nn.functional`` ops, with ATen's positional signatures:
``torch.dropout(input, p, train)``, ``torch.batch_norm(input, weight, bias, running_mean,
running_var, training, momentum, eps, cudnn_enabled)``, ``torch.embedding(weight, indices)``,
losses taking ``reduction`` as an int (0 none, 1 mean, 2 sum), ...

Each calls the ``nn.functional`` op that torch's own functional calls, so values, RNG draws and
grad_fn names are those already tested there. ``nn.functional`` is imported on first use:
``ember.ops`` is installed before ``ember.nn`` exists.
"""

from __future__ import annotations

import warnings

from ember._tensor import Tensor

_REDUCTION = {0: "none", 1: "mean", 2: "sum"}


def _F():
    import ember.nn.functional as F

    return F


def _reduction(r: int) -> str:
    return _REDUCTION.get(r, "none")  # ATen reduces only for Mean and Sum


def _p(p: float) -> float:
    """ATen's check of a dropout probability (a RuntimeError, where nn.functional's is a
    ValueError), made whether or not the op trains."""
    if not 0 <= p <= 1:
        shown = int(p) if float(p).is_integer() else p  # C++ prints 2, not 2.0
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {shown}")
    return p


def _check_tensor(fn: str, name: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


# --- activations -------------------------------------------------------------------------


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _F().celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _F().celu_(input, alpha)


def selu(input: Tensor) -> Tensor:
    return _F().selu(input)


def selu_(input: Tensor) -> Tensor:
    return _F().selu_(input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator=None) -> Tensor:
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    return _F().rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return _F().threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _F().threshold_(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return _F().hardshrink(input, lambd)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return _F().prelu(input, weight)


# --- dropout -----------------------------------------------------------------------------


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().dropout(input, _p(p), train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().dropout(input, _p(p), train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().alpha_dropout(input, _p(p), train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().alpha_dropout(input, _p(p), train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().feature_alpha_dropout(input, _p(p), train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _F().feature_alpha_dropout(input, _p(p), train, inplace=True)


def _feature_dropout(input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:
    from ember.nn._functional.dropout import _feature_dropout

    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout(input, _p(p), train, inplace, batched=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (dim 1) of an (N, C, ...) input, as dropout2d does."""
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _feature_dropout(input, p, train, True)


# --- normalization and embeddings --------------------------------------------------------


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    return _F().group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    return _F().rms_norm(input, normalized_shape, weight, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight``; note the order (weight first) and that any negative
    ``padding_idx`` means none, as in ATen."""
    _check_tensor("embedding", "weight", 1, weight)
    _check_tensor("embedding", "indices", 2, indices)
    pad = padding_idx if padding_idx >= 0 else None
    return _F().embedding(indices, weight, pad, scale_grad_by_freq=scale_grad_by_freq,
                          sparse=sparse)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    return _F().bilinear(input1, input2, weight, bias)


# --- distances and losses ----------------------------------------------------------------


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    return _F().pdist(input, p)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # F.kl_div's advice about 'mean' is not ATen's
        return _F().kl_div(input, target, reduction=_reduction(reduction),
                           log_target=log_target)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, reduction: int = 1) -> Tensor:
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 1) -> Tensor:
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None,
                                     pos_weight=None, reduction: int = 1) -> Tensor:
    return _F().binary_cross_entropy_with_logits(input, target, weight,
                                                 reduction=_reduction(reduction),
                                                 pos_weight=pos_weight)


# --- pooling and padding -----------------------------------------------------------------


def _stride(stride):
    return None if stride in ((), []) else stride


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False):
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           return_indices=True)


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size):
    """(values, indices), always."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    return _F().pad(input, list(pad), "constant", value)


def convolution(input: Tensor, weight: Tensor, bias, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """ATen's one entry point for every convolution: the spatial rank comes from ``weight``."""
    F = _F()
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D weight for convolution, but got {weight.ndim}D")
    if transposed:
        fn = getattr(F, f"conv_transpose{n}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{n}d")(input, weight, bias, stride, padding, dilation, groups)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """ATen's affine_grid, without nn.functional's checks and warnings."""
    from ember.nn._functional.grid import AffineGridGenerator

    size = tuple(size)
    return AffineGridGenerator.apply(theta, spatial=size[2:], align_corners=align_corners,
                                     dt=theta.dtype)


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """ATen's grid_sample, with the modes as numbers (GRID_SAMPLE_*_MODES)."""
    from ember.nn._functional.grid import (
        GRID_SAMPLE_INTERPOLATION_MODES,
        GRID_SAMPLE_PADDING_MODES,
        grid_sample,
    )

    mode = {v: k for k, v in GRID_SAMPLE_INTERPOLATION_MODES.items()}.get(interpolation_mode)
    pad = {v: k for k, v in GRID_SAMPLE_PADDING_MODES.items()}.get(padding_mode)
    if mode is None or pad is None:
        raise RuntimeError(f"grid_sampler(): unknown interpolation mode {interpolation_mode} or "
                           f"padding mode {padding_mode}")
    return grid_sample(input, grid, mode, pad, bool(align_corners))


METHODS = {"hardshrink": hardshrink, "prelu": prelu}
FUNCTIONS = {name: fn for name, fn in list(globals().items())
             if callable(fn) and getattr(fn, "__module__", None) == __name__
             and not name.startswith("_")}
