"""Fused activation functions: softmax and log_softmax (stable), GELU, ELU family, ...

Each is one node with torch's ``grad_fn`` name. Forward runs on arrays; backward is written with
ember ops (piecewise derivatives as constant masks times Tensors), so it is differentiable again.
"""

from __future__ import annotations

import math

import numpy as np

from ember._backend import xp_of
from ember._creation import zeros_like
from ember._tensor import Tensor, _wrap_dim
from ember._warn import warn_user
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops import _erf
from ember.ops._common import c_order, keep_where, row_max, row_sum, select, variant
from ember.ops._promote import cast, float_arg, scalar
from ember.ops.pointwise import ThresholdBackward, sigmoid, where
from ember.ops.pointwise_special import erf


def _leaky(x: np.ndarray, slope) -> np.ndarray:
    """``x`` where ``x > 0``, else ``slope x``, as max(x, 0) + slope min(x, 0) (one term is 0)."""
    neg = np.minimum(x, 0, out=np.empty_like(x))  # an array even for 0-d x
    neg *= slope if isinstance(slope, np.ndarray) else scalar(slope, x.dtype)
    neg += np.maximum(x, 0)
    return neg


def _const(mask: np.ndarray, like: np.ndarray) -> Tensor:
    """A constant (no-grad) tensor of ``like``'s dtype, e.g. a 0/1 derivative mask."""
    return Tensor._make(xp_of(mask).asarray(mask, dtype=like.dtype))


class MaskedGrad(Op):
    """``g`` times a derivative that is piecewise constant in ``x`` (``slope(x)``, an array),
    +0 where that is 0 (even for a NaN ``g``): torch's leaky_relu_backward, hardtanh_backward,
    ... Linear in ``g``; its gradient for ``x`` is zeros, defined (so a double backward reaches
    ``x``, as in torch). Used under each torch node name through ``_masked``."""

    saves = (1,)

    @staticmethod
    def forward(ctx, g, x, slope=None, twice=None):
        ctx.slope, ctx.twice = slope, twice
        d = xp_of(x).asarray(slope(x), dtype=g.dtype)
        return keep_where(d != 0, g * d)

    @classmethod
    def backward(cls, ctx, gg):
        if ctx.twice is not None:  # torch has no derivative for this backward
            raise RuntimeError(f"derivative for aten::{ctx.twice} is not implemented")
        (x,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (cls.apply(gg, x, slope=ctx.slope) if need[0] else None), \
            (zeros_like(gg) if need[1] else None)


def _masked(g: Tensor, x: Tensor, node_name: str, slope, twice=None) -> Tensor:
    return variant(MaskedGrad, node_name).apply(g, x, slope=slope, twice=twice)


# --- softmax family -------------------------------------------------------------------------


def _stable_shift(x: np.ndarray, dim: int) -> np.ndarray:
    """``x - max(x)`` along ``dim``, as torch's kernels: a row with +inf, or all -inf, gets
    NaN from inf - inf, and so a NaN softmax."""
    with np.errstate(invalid="ignore"):
        return x - row_max(x, dim)


class Softmax(Op):
    node_name = "SoftmaxBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x, dim=-1):
        ctx.dim = dim
        if x.size == 0:
            return x.copy()
        e = c_order(np.exp(_stable_shift(x, dim)))
        with np.errstate(invalid="ignore"):
            e /= row_sum(e, dim)
        return e

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if not STATE.enabled:  # first-order backward: one fused NumPy expression
            gy = g._data * y._data
            gy -= y._data * row_sum(gy, ctx.dim)
            return Tensor._make(gy)
        gy = g * y
        return gy - y * gy.sum(ctx.dim, keepdim=True)


class LogSoftmax(Op):
    node_name = "LogSoftmaxBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x, dim=-1):
        ctx.dim = dim
        if x.size == 0:
            return x.copy()
        s = c_order(_stable_shift(x, dim))
        with np.errstate(invalid="ignore", divide="ignore"):
            s -= np.log(row_sum(np.exp(s), dim))
        return s

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if not STATE.enabled:  # first-order backward: one fused NumPy expression
            gd = g._data
            return Tensor._make(gd - np.exp(y._data) * row_sum(gd, ctx.dim))
        return g - y.exp() * g.sum(ctx.dim, keepdim=True)


def _softmax_dim(name: str, ndim: int) -> int:
    warn_user(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
              "include dim=X as an argument.")
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(x: Tensor, dim, dtype, name: str):
    if dim is None:  # torch.softmax / Tensor.softmax take no implicit dim (F.softmax does)
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    dim = _wrap_dim(dim, x.ndim)
    if dtype is not None:
        from ember import _dtype

        x = cast(x, _dtype.to_dtype(dtype))
    elif not x.dtype.is_floating_point:
        from ember.ops.pointwise_more import not_for

        raise not_for(f"{name}_lastdim_kernel_impl", x.dtype)
    return x, dim


def softmax(x: Tensor, dim: int | None = None, dtype=None, *, _stacklevel: int = 3) -> Tensor:
    """``exp(x) / exp(x).sum(dim)``, computed from ``x - max`` so it never overflows."""
    x, dim = _softmax_input(x, dim, dtype, "softmax")
    if x.ndim == 0:
        return Softmax.apply(x.reshape(1), dim=0).reshape(())
    return Softmax.apply(x, dim=dim)


def log_softmax(x: Tensor, dim: int | None = None, dtype=None, *,
                _stacklevel: int = 3) -> Tensor:
    """``x - logsumexp(x, dim)``: stable, one node."""
    x, dim = _softmax_input(x, dim, dtype, "log_softmax")
    if x.ndim == 0:
        return LogSoftmax.apply(x.reshape(1), dim=0).reshape(())
    return LogSoftmax.apply(x, dim=dim)


# --- GELU ------------------------------------------------------------------------------------

_SQRT1_2 = 1 / math.sqrt(2)
_SQRT_2_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _gelu_cdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) = (1 + erf(x / sqrt(2))) / 2."""
    cdf = _erf.erf(x * _SQRT1_2)
    cdf += 1
    cdf *= 0.5
    return cdf


class Gelu(Op):
    node_name = "GeluBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, approximate="none"):
        ctx.approximate = approximate
        if approximate == "tanh":
            inner = _SQRT_2_PI * (x + 0.044715 * x**3)
            return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype, copy=False)
        # Phi(x) is kept for the first-order backward, which would otherwise compute erf again
        # (half of GELU's time); a double backward recomputes it from the saved input
        ctx.cdf = _gelu_cdf(x)
        return np.multiply(ctx.cdf, x, out=np.empty_like(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * _SQRT_2_PI
            t = inner.tanh()
            dinner = (x * x * (3 * 0.044715) + 1) * _SQRT_2_PI
            return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner)
        if not STATE.enabled:  # first-order backward: Phi(x) + x phi(x) in NumPy, in place
            a = x._data
            pdf = np.multiply(a, a, out=np.empty_like(a))  # an array even for 0-d x
            pdf *= -0.5
            np.exp(pdf, out=pdf)
            pdf *= a
            pdf *= _INV_SQRT_2PI
            pdf += ctx.cdf
            pdf *= g._data
            return Tensor._make(pdf)
        cdf = (erf(x * _SQRT1_2) + 1) * 0.5
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        return g * (cdf + x * pdf)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return Gelu.apply(float_arg(x), approximate=approximate)


# --- piecewise activations ------------------------------------------------------------------


class Elu(Op):
    """ELU / SELU / CELU: ``scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))``."""

    node_name = "EluBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, alpha=1.0, scale=1.0, input_scale=1.0):
        ctx.params = (alpha, scale, input_scale)
        # max(x, 0) scale + expm1(min(x, 0) input_scale) alpha scale: one term is 0 at each
        # element, so the sum is the select without np.where's cost
        neg = np.minimum(x, 0, out=np.empty_like(x))  # an array even for 0-d x
        if input_scale != 1:
            neg *= input_scale
        np.expm1(neg, out=neg)
        neg *= alpha * scale
        pos = np.maximum(x, 0)
        if scale != 1:
            pos *= scale
        neg += pos
        return neg

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.params
        pos = x._data > 0
        neg = (x * input_scale).exp() * (alpha * scale * input_scale)
        return g * where(Tensor._make(pos), scale, neg)


class Celu(Elu):
    node_name = "CeluBackward0"


class LeakyRelu(Op):
    node_name = "LeakyReluBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, negative_slope=0.01):
        ctx.slope = negative_slope
        return _leaky(x, negative_slope)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        slope = ctx.slope
        return _masked(g, x, "LeakyReluBackwardBackward0",
                       lambda a: np.where(a > 0, 1.0, slope))


class Hardtanh(Op):
    node_name = "HardtanhBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, min_val=-1.0, max_val=1.0):
        ctx.bounds = (min_val, max_val)
        return np.clip(x, min_val, max_val).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        return _masked(g, x, "HardtanhBackwardBackward0", lambda a: (a > lo) & (a < hi))


class Hardsigmoid(Op):
    node_name = "HardsigmoidBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return (np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _masked(g, x, "HardsigmoidBackwardBackward0", lambda a: ((a > -3) & (a < 3)) / 6,
                       twice="hardsigmoid_backward")


class Hardswish(Op):
    node_name = "HardswishBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return (x * np.clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        a = x._data
        mid = _const((a >= -3) & (a <= 3), a)
        hi = _const(a > 3, a)
        return g * (mid * (x / 3 + 0.5) + hi)


class Silu(Op):
    node_name = "SiluBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        e = np.negative(x, out=np.empty_like(x))  # x / (1 + exp(-x)), as torch
        with np.errstate(over="ignore"):
            np.exp(e, out=e)
        e += 1
        return np.divide(x, e, out=e)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = sigmoid(x)
        return g * s * (x * (1 - s) + 1)


def _softplus_np(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    """``x`` where ``beta x > threshold``, else ``log1p(exp(beta x)) / beta``, as torch."""
    bx = x * scalar(beta, x.dtype) if beta != 1 else x
    soft = np.minimum(bx, threshold, out=np.empty_like(x))  # exp cannot overflow below it
    np.exp(soft, out=soft)
    np.log1p(soft, out=soft)
    if beta != 1:
        soft /= scalar(beta, x.dtype)
    return select(bx > threshold, x, soft, x.dtype)


class Softplus(Op):
    node_name = "SoftplusBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, beta=1.0, threshold=20.0):
        ctx.params = (beta, threshold)
        return _softplus_np(x, beta, threshold)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        beta, threshold = ctx.params
        big = Tensor._make(x._data * beta > threshold)
        return g * where(big, 1.0, sigmoid(x * beta))


class Mish(Op):
    node_name = "MishBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return (x * np.tanh(_softplus_np(x, 1.0, 20.0))).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = Softplus.apply(x, beta=1.0, threshold=20.0).tanh()
        return g * (t + x * sigmoid(x) * (1 - t * t))


class LogSigmoid(Op):
    """``min(x, 0) - log1p(exp(-|x|))``; saves the input and ``exp(-|x|)`` (torch's buffer),
    from which a first-order backward gets ``sigmoid(-x)``."""

    node_name = "LogSigmoidBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        e = np.exp(-np.abs(x))
        ctx.save_extra(e)
        return np.minimum(x, 0) - np.log1p(e)

    @staticmethod
    def backward(ctx, g):
        x, e = ctx.saved_tensors
        if STATE.enabled:  # create_graph: a formula of x, differentiable again
            return g * sigmoid(-x)
        e = e._data
        return g * Tensor._make(np.where(x._data > 0, e, 1) / (1 + e))


class Threshold(Op):
    node_name = "ThresholdBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, threshold=0.0, value=0.0):
        ctx.threshold = threshold
        return select(x <= threshold, value, x, x.dtype)  # NaN stays, as in torch

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return ThresholdBackward.apply(g, x, threshold=ctx.threshold)


class Hardshrink(Op):
    node_name = "HardshrinkBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, lambd=0.5):
        ctx.lambd = lambd
        return keep_where(np.abs(x) > lambd, x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lambd = ctx.lambd
        return _masked(g, x, type(ctx).__name__[:-1] + "Backward0",
                       lambda a: np.abs(a) > lambd)


class Softshrink(Hardshrink):
    node_name = "SoftshrinkBackward0"

    @staticmethod
    def forward(ctx, x, lambd=0.5):
        ctx.lambd = lambd
        lam = scalar(lambd, x.dtype)
        out = np.clip(x, -lam, lam, out=np.empty_like(x))
        return np.subtract(x, out, out=out)  # x -+ lambd outside, 0 inside


class Glu(Op):
    """``a * sigmoid(b)`` for the two halves of ``x`` along ``dim``."""

    node_name = "GluBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, dim=-1):
        ctx.dim = dim
        a, b = np.split(x, 2, axis=dim)
        e = np.exp(-np.abs(b))
        return (a * np.where(b >= 0, 1 / (1 + e), e / (1 + e))).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        a, b = x.chunk(2, ctx.dim)
        s = sigmoid(b)
        from ember.ops.joining import cat

        return cat([g * s, g * a * s * (1 - s)], ctx.dim)


class RreluWithNoise(Op):
    """Leaky ReLU with a per-element slope ``noise`` for negative inputs (sampled or fixed).
    Saves the input and the noise, as torch's node (its eval-mode formula reads the input's
    sign, which ``noise`` already holds here)."""

    node_name = "RreluWithNoiseBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, noise=None):
        ctx.save_extra(noise)
        return _leaky(x, noise)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.saved_tensors[-1]


class PreluKernel(Op):
    """PReLU with the weight already viewed to broadcast over the channel dim."""

    node_name = "PreluKernelBackward0"
    saves = (0, 1)
    broadcasts = True

    @staticmethod
    def forward(ctx, x, w):
        return np.where(x > 0, x, w * x)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        pos = Tensor._make(x._data > 0)
        need = ctx.needs_input_grad
        gx = g * where(pos, 1.0, w) if need[0] else None
        gw = g * where(pos, 0.0, x) if need[1] else None
        return gx, gw


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    if x._data.dtype != weight._data.dtype:
        from ember.ops.pointwise_more import _CNAME

        raise RuntimeError(f"prelu: Type promoting not supported. Got {_CNAME[x.dtype.name]} and "
                           f"{_CNAME[weight.dtype.name]}")
    n = weight.numel()
    channels = x.shape[1] if x.ndim >= 2 else 1
    if n != 1 and (x.ndim == 0 or n != channels):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    if x.ndim >= 2:
        w = weight.view(*([1, n] + [1] * (x.ndim - 2))) if n != 1 else weight.view(
            *([1] * x.ndim))
    else:
        w = weight.view(*([n] if x.ndim == 1 else []))
    return PreluKernel.apply(x, w)


METHODS = {"softmax": softmax, "log_softmax": log_softmax}
FUNCTIONS = {"softmax": softmax, "log_softmax": log_softmax, "prelu": prelu}
