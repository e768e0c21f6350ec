"""Functional activations: relu, gelu, softmax, ... (``inplace=True`` where torch has it)."""

from __future__ import annotations

from ember._backend import on_device_of
from ember._tensor import Tensor, _wrap_dim
from ember.ops import activation as A
from ember.ops._common import select
from ember.ops.inplace import apply_inplace
from ember.ops.pointwise import sigmoid as _sigmoid
from ember.ops.pointwise import tanh as _tanh
from ember.ops.pointwise_more import abs as _abs
from ember.ops.pointwise_more import not_for

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _floating(x: Tensor, kernel: str) -> None:
    if not x.dtype.is_floating_point:
        raise not_for(kernel, x.dtype)


def _maybe_inplace(x: Tensor, inplace: bool, fn, **kw) -> Tensor:
    if inplace:
        return apply_inplace(x, lambda t: fn(t, **kw))
    return fn(x, **kw)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, inplace, A.Hardtanh.apply, min_val=min_val, max_val=max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    _floating(input, "leaky_relu_cpu")
    return _maybe_inplace(input, inplace, A.LeakyRelu.apply, negative_slope=negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    _floating(input, "elu_cpu")
    return _maybe_inplace(input, inplace, A.Elu.apply, alpha=alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    _floating(input, "elu_cpu")
    return _maybe_inplace(input, inplace, A.Elu.apply, alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    _floating(input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _maybe_inplace(input, inplace, A.Celu.apply, alpha=alpha, input_scale=1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    _floating(input, "GeluKernelImpl")
    return A.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    _floating(input, "silu_cpu")
    return _maybe_inplace(input, inplace, A.Silu.apply)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    _floating(input, "mish_cpu")
    return _maybe_inplace(input, inplace, A.Mish.apply)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    _floating(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, inplace, A.Hardsigmoid.apply)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    _floating(input, "hardswish_cpu")
    return _maybe_inplace(input, inplace, A.Hardswish.apply)


def sigmoid(input: Tensor) -> Tensor:
    return _sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return _tanh(input)


def logsigmoid(input: Tensor) -> Tensor:
    _floating(input, "log_sigmoid_cpu")
    return A.LogSigmoid.apply(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    _floating(input, "softplus_cpu")
    return A.Softplus.apply(input, beta=beta, threshold=threshold)


def softsign(input: Tensor) -> Tensor:
    return input / (_abs(input) + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    return _maybe_inplace(input, inplace, A.Threshold.apply, threshold=threshold, value=value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _maybe_inplace(input, True, A.Threshold.apply, threshold=threshold, value=value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    return A.Hardshrink.apply(input, lambd=lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return A.Softshrink.apply(input, lambd=lambd)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: first half times sigmoid of the second half along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    return A.Glu.apply(input, dim=d)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training
    (and is ``(lower + upper) / 2`` in eval)."""
    import numpy as np

    from ember._random import default_generator

    _floating(input, "rrelu_with_noise_out_cpu")
    x = input._data
    if training:
        # torch's CPU kernel: one U(lower, upper) double per element <= 0, in order, with the
        # bounds first rounded to the input's dtype
        lo, hi = (float(x.dtype.type(v)) for v in (lower, upper))
        neg = x <= 0
        noise = np.ones(x.shape, x.dtype)
        noise[neg] = default_generator._uniform(int(neg.sum()), True) * (hi - lo) + lo
    else:
        noise = select(x > 0, 1.0, (lower + upper) / 2, x.dtype)
    return _maybe_inplace(input, inplace, A.RreluWithNoise.apply, noise=noise)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """Softmax of ``(logits + Gumbel noise) / tau``; ``hard=True`` returns one-hot samples
    whose gradient is the soft sample's (straight-through)."""
    import numpy as np

    from ember._random import double_uniform_sample

    # torch: -empty_like(logits).exponential_().log(), the exponential drawn as -log1p(-u)
    expo = (-np.log1p(-double_uniform_sample(logits._data.shape))).astype(logits._data.dtype)
    noise = on_device_of(logits._data, -np.log(expo))  # drawn on the CPU: torch's stream
    y_soft = A.softmax((logits + Tensor._make(noise)) / tau, dim)
    if not hard:
        return y_soft
    d = _wrap_dim(dim, y_soft.ndim)
    idx = np.expand_dims(y_soft._data.argmax(axis=d), d)
    hard_arr = np.zeros_like(y_soft._data)
    np.put_along_axis(hard_arr, idx, 1.0, axis=d)
    return Tensor._make(hard_arr) - y_soft.detach() + y_soft


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return A.prelu(input, weight)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = A._softmax_dim("softmax", input.ndim)
    return A.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    if dim is None:
        dim = A._softmax_dim("log_softmax", input.ndim)
    return A.log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = A._softmax_dim("softmin", input.ndim)
    return A.softmax(-input if dtype is None else -input.to(dtype), dim)


__all__ = [
    "relu", "relu_", "relu6", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "elu",
    "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "hardsigmoid",
    "hardswish", "sigmoid", "tanh", "logsigmoid", "softplus", "softsign", "tanhshrink",
    "threshold", "threshold_", "prelu", "softmax", "log_softmax", "softmin", "hardshrink",
    "softshrink", "glu", "rrelu", "rrelu_", "gumbel_softmax",
]
