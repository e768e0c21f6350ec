"""Normal-distribution and entropy special functions behind ``ember.special``: ndtri,
log_ndtr, erfcx, entr, xlog1py. Each is a primitive with torch's node name, computed in float64
NumPy and returned in the input's dtype."""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.ops._common import elementwise_op, float_unary
from ember.ops._promote import binary_args, float_arg
from ember.ops.pointwise_special import _P, _Q, _R, _S, _poly, erfc_array, erfinv_array

_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def erfcx_array(x: np.ndarray) -> np.ndarray:
    """exp(x^2) erfc(x) without the overflow/underflow of either factor."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        z = np.clip(x64, 1.0, None)
        # For x >= 1, erfc(x) = exp(-x^2) R(x): the scaled value is just the rational part.
        ratio = np.where(z >= 8.0, _poly(_R, np.minimum(z, 1e8)) / _poly(_S, np.minimum(z, 1e8)),
                         _poly(_P, z) / _poly(_Q, z))
        big = x64 > 1e8  # the asymptote 1 / (x sqrt(pi))
        tail = np.where(big, 1.0 / (x64 * math.sqrt(math.pi)), ratio)
        near = np.exp(x64 * x64) * erfc_array(np.minimum(x64, 1.0))
        out = np.where(x64 >= 1.0, tail, near)
    return out.astype(x.dtype, copy=False)


def ndtr_array(x):
    return 0.5 * erfc_array(-x / _SQRT2)


def ndtri_array(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile: erfinv guess, then Newton steps on the lower tail."""
    p64 = p.astype(np.float64)
    with np.errstate(all="ignore"):
        x = _SQRT2 * erfinv_array(2.0 * p64 - 1.0)
        lower = p64 < 0.5
        q = np.where(lower, p64, 1.0 - p64)  # work in the tail that keeps its digits
        y = np.where(lower, x, -x)
        # Where 2q - 1 rounds to -1, start from the tail asymptote instead.
        t = -2.0 * np.log(q)
        y = np.where(np.isfinite(y), y, -np.sqrt(t - np.log(t) - math.log(2 * math.pi)))
        for _ in range(3):
            resid = 0.5 * erfc_array(-y / _SQRT2) - q
            y = y - resid * _SQRT_2PI * np.exp(0.5 * y * y)
        x = np.where(lower, y, -y)
        x = np.where(p64 == 0, -np.inf, np.where(p64 == 1, np.inf, x))
        x = np.where((p64 < 0) | (p64 > 1), np.nan, x)
    return x.astype(p.dtype, copy=False)


def log_ndtr_array(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        direct = np.log(ndtr_array(x64))
        # Far left tail, where erfc underflows:
        # log Phi(x) = -x^2/2 - log(-x) - log sqrt(2 pi) + log(1 - 1/x^2 + 3/x^4 - ...)
        xs = np.minimum(x64, -1.0)
        inv2 = 1.0 / (xs * xs)
        series = np.log1p(inv2 * (-1.0 + inv2 * (3.0 + inv2 * (-15.0 + inv2 * 105.0))))
        asym = -0.5 * xs * xs - np.log(-xs) - _LOG_SQRT_2PI + series
        right = np.log1p(-ndtr_array(-x64))  # keeps the digits when Phi(x) is near 1
        out = np.where(x64 < -35, asym, np.where(x64 > 0, right, direct))
    return out.astype(x.dtype, copy=False)


def _entr_array(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.where(x > 0, -x * np.log(x), np.where(x == 0, 0.0, -np.inf))
        return np.where(np.isnan(x), np.nan, out).astype(x.dtype, copy=False)


def _xlog1py_array(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))
    return out.astype(x.dtype, copy=False)


# torch names these nodes Special<Name>Backward0: they live in torch.special.
Ndtri = elementwise_op("Ndtri", ndtri_array,
                       lambda g, out: g * (out * out * 0.5).exp() * _SQRT_2PI,
                       saves=("result",), node_name="SpecialNdtriBackward0")
LogNdtr = elementwise_op("LogNdtr", log_ndtr_array,
                         lambda g, x, out: g * (-x * x * 0.5 - out).exp() / _SQRT_2PI,
                         saves=("self", "result"), node_name="SpecialLogNdtrBackward0")
Erfcx = elementwise_op("Erfcx", erfcx_array,
                       lambda g, x, out: g * (x * out * 2 - 2 / math.sqrt(math.pi)),
                       saves=("self", "result"), node_name="SpecialErfcxBackward0")
Entr = elementwise_op("Entr", _entr_array, lambda g, x: g * -(x.log() + 1),
                      saves=("self",), node_name="SpecialEntrBackward0")
Xlog1py = elementwise_op("Xlog1py", _xlog1py_array,
                         lambda g, x, y: g * xlog1py((x != 0).to(g.dtype), y),
                         lambda g, x, y: g * x / (y + 1),
                         saves=("self", "other"), node_name="SpecialXlog1PyBackward0")


def ndtr(x: Tensor) -> Tensor:
    """The standard normal CDF."""
    return float_arg(x).mul(-1 / _SQRT2).erfc() * 0.5


ndtri = float_unary(Ndtri, "ndtri", "The standard normal quantile (inverse of ndtr).")
log_ndtr = float_unary(LogNdtr, "log_ndtr",
                       "log of the standard normal CDF, accurate far into both tails.")
erfcx = float_unary(Erfcx, "erfcx", "The scaled complementary error function "
                    "``exp(x**2) * erfc(x)``.")
entr = float_unary(Entr, "entr", "Elementwise entropy ``-x * log(x)`` (0 at 0, -inf below).")


def xlog1py(x, y) -> Tensor:
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN)."""
    if not isinstance(x, Tensor):
        y2, x2 = binary_args(y, x, float_result=True)
        return Xlog1py.apply(x2, y2)
    return Xlog1py.apply(*binary_args(x, y, float_result=True))
