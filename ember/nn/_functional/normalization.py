"""F.batch_norm, F.instance_norm, F.layer_norm, F.group_norm, F.rms_norm,
F.local_response_norm (the fused primitives are in ember/ops/norm.py)."""

from __future__ import annotations

import math

from ember._dtype import finfo
from ember._tensor import Tensor
from ember.nn._functional.pooling import avg_pool2d, avg_pool3d
from ember.nn._functional.vision import pad
from ember.ops.norm import NativeBatchNorm, NativeGroupNorm, NativeLayerNorm, norm_apply
from ember.ops.pointwise_more import not_for


def _check_vec(t, name: str, c: int) -> None:
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float | None = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) by batch statistics (training) or running ones (eval).

    In training, given running statistics are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` with the unbiased batch variance.
    """
    if input.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
    c = input.shape[1]
    if training:
        n = input.numel() // max(c, 1)
        if n == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {input.size()}")
    elif running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    for t, name in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):
        _check_vec(t, name, c)
    if input.numel() == 0:  # torch's shortcut: no batch_norm node, the chain kept by a clone
        out = input.clone()
        out = out * weight[0] if weight is not None else out
        return out + bias[0] if bias is not None else out
    dims = (0, *range(2, input.ndim))
    ashape = (1, c) + (1,) * (input.ndim - 2)
    geom = (None, dims, ashape, dims)
    stats = running = None
    if running_mean is not None and running_var is not None:
        running = (running_mean._data, running_var._data)
    if not training:
        stats = (running_mean._data.reshape(ashape), running_var._data.reshape(ashape))
    y, mean, var = norm_apply(NativeBatchNorm, input, weight, bias, geom, eps, (c,), stats,
                              running)
    if training and running_mean is not None and input.numel():
        m = 0.0 if momentum is None else momentum
        n = input.numel() // c
        _blend(running_mean, mean._data, m)
        _blend(running_var, var._data * (n / (n - 1)), m)
    return y


def _blend(running: Tensor, batch, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * batch``, in place (version bump)."""
    r = running._data
    r *= 1.0 - momentum
    r += (momentum * batch).astype(r.dtype, copy=False)
    running._vc[0] += 1


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) plane; torch's way: batch norm over (1, N * C, ...).

    Running statistics (if given) move by the batch average of the per-instance statistics.
    """
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{input.size()}")
    b, c = input.shape[:2]

    def rep(t):
        return None if t is None else t.repeat(b)

    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(input.reshape(1, b * c, *input.shape[2:]), rm, rv, rep(weight), rep(bias),
                     use_input_stats, momentum, eps)
    for run, rep_stat in ((running_mean, rm), (running_var, rv)):
        if run is not None and use_input_stats:
            run._data[...] = rep_stat._data.reshape(b, c).mean(0)
            run._vc[0] += 1
    return out.view(input.shape)


def _normalized_dims(input: Tensor, normalized_shape, weight, bias, name: str) -> tuple:
    """Check ``normalized_shape`` (the trailing dims of ``input``) and the affine parameters'
    shapes torch's way; return the dims to normalize over."""
    if isinstance(normalized_shape, int):
        raise TypeError(f"{name}(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    ns = tuple(normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != ns:
        sep = ", " if name == "layer_norm" else ""  # torch prints [*, 3] and [*3]
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{sep}{', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    for t, what in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but got "
                               f"{what} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(ns)}")
    return tuple(range(input.ndim - k, input.ndim))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    dims = _normalized_dims(input, normalized_shape, weight, bias, "layer_norm")
    geom = (None, dims, tuple(normalized_shape), tuple(range(dims[0])))
    return norm_apply(NativeLayerNorm, input, weight, bias, geom, eps, tuple(normalized_shape))[0]


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale
    by ``weight``. ``eps=None`` is the machine epsilon of the input's dtype."""
    dims = _normalized_dims(input, normalized_shape, weight, None, "rms_norm")
    if not input.dtype.is_floating_point:
        raise not_for("rms_norm", input.dtype)
    if eps is None:
        eps = finfo(input.dtype).eps
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.to(input.dtype)  # the result keeps the input's dtype, whatever the weight's


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divide each value by ``(k + alpha * mean of squares) ** beta``, the mean taken over
    ``size`` neighbouring channels (dim 1; zeros past the edges count)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    # torch's composition (its graph, and what it saves): the window of channel c is
    # [c - size // 2, c + (size - 1) // 2], averaged by a pooling over the channel dim.
    div = input.mul(input)
    if input.ndim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize each group of ``C / num_groups`` channels per sample, then scale per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    per = math.prod(input.shape[1:]) // num_groups
    geom = ((n, num_groups, per), (2,), (1, c) + (1,) * (input.ndim - 2),
            (0, *range(2, input.ndim)))
    return norm_apply(NativeGroupNorm, input, weight, bias, geom, eps, (c,))[0]


__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm",
           "rms_norm"]
