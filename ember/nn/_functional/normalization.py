"""F.batch_norm, F.layer_norm, F.group_norm (the fused primitives are in ember/ops/norm.py)."""

from __future__ import annotations

import math

from ember._tensor import Tensor
from ember.ops.norm import NativeBatchNorm, NativeGroupNorm, NativeLayerNorm, norm_apply


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
    dims = (0, *range(2, input.ndim))
    ashape = (1, c) + (1,) * (input.ndim - 2)
    geom = (None, dims, ashape, dims)
    stats = None
    if not training:
        stats = (running_mean._data.reshape(ashape), running_var._data.reshape(ashape))
    y, mean, var = norm_apply(NativeBatchNorm, input, weight, bias, geom, eps, (c,), stats)
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


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift."""
    if isinstance(normalized_shape, int):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        "ints, not int")
    ns = tuple(normalized_shape)
    k = len(ns)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != ns or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(ns)}")
    nd = input.ndim
    geom = (None, tuple(range(nd - k, nd)), ns, tuple(range(nd - k)))
    return norm_apply(NativeLayerNorm, input, weight, bias, geom, eps, ns)[0]


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


__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm"]
