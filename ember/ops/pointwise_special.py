"""Special functions in vectorised NumPy (no SciPy): erf, erfc, erfinv, lgamma, digamma,
polygamma.

erf, erfc and erfinv are computed in ``ember.ops._erf``. lgamma uses the Lanczos approximation
(g=7), digamma and polygamma shift the argument up and use asymptotic (Euler-Maclaurin) series,
with reflection for negative arguments.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops import _erf
from ember.ops._promote import float_arg

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)


class Erf(Op):
    node_name = "ErfBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return _erf.erf(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x * x).exp() * _TWO_OVER_SQRT_PI


class Erfc(Op):
    node_name = "ErfcBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return _erf.erfc(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x * x).exp() * -_TWO_OVER_SQRT_PI


class Erfinv(Op):
    node_name = "ErfinvBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, y):
        return _erf.erfinv(y)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out * out).exp() * _HALF_SQRT_PI


def erf(x: Tensor) -> Tensor:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``."""
    return Erf.apply(float_arg(x))


def erfc(x: Tensor) -> Tensor:
    """``1 - erf(x)``, accurate for large x."""
    return Erfc.apply(float_arg(x))


def erfinv(x: Tensor) -> Tensor:
    """The inverse of erf on (-1, 1); ±inf at ±1, NaN outside."""
    return Erfinv.apply(float_arg(x))


# --- gamma family -----------------------------------------------------------------------

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B2, B4, ..., B14 for the asymptotic series.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10


def _lgamma_pos(x):
    """lgamma for x >= 0.5 (Lanczos, in log form so large x cannot overflow)."""
    z = x - 1.0
    a = np.full_like(z, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + k)
    t = z + 7.5
    return _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(a)


def lgamma_array(x: np.ndarray) -> np.ndarray:
    """log|Gamma(x)| of a float array; +inf at the poles."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refl = x64 < 0.5
        pos = _lgamma_pos(np.where(refl, 1.0 - x64, x64))
        # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); poles give +inf.
        sin = np.abs(np.sin(math.pi * np.where(refl, x64, 0.5)))
        out = np.where(refl, np.log(math.pi / sin) - pos, pos)
        out = np.where(refl & (x64 == np.floor(x64)), np.inf, out)
        out = np.where(np.isposinf(x64) | np.isneginf(x64), np.inf, out)
    return out.astype(x.dtype, copy=False)


def _digamma_pos(x):
    """digamma for x > 0: shift to x + 10, then the asymptotic series."""
    acc = np.zeros_like(x)
    for k in range(_SHIFT):
        acc = acc + 1.0 / (x + k)
    y = x + _SHIFT
    y2 = 1.0 / (y * y)
    series = np.zeros_like(y)
    for k in range(len(_BERNOULLI) - 1, -1, -1):
        series = (series + _BERNOULLI[k] / (2 * k + 2)) * y2
    return np.log(y) - 0.5 / y - series - acc


def digamma_array(x: np.ndarray) -> np.ndarray:
    """digamma of a float array."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        refl = x64 < 0.5
        pos = _digamma_pos(np.where(refl, 1.0 - x64, x64))
        # Reflection: psi(x) = psi(1 - x) - pi / tan(pi x).
        out = np.where(refl, pos - math.pi / np.tan(math.pi * np.where(refl, x64, 0.25)), pos)
        out = np.where(x64 == 0, -np.inf, out)
        out = np.where((x64 < 0) & (x64 == np.floor(x64)), np.nan, out)
    return out.astype(x.dtype, copy=False)


def _hurwitz_zeta(s: int, x):
    """zeta(s, x) = sum_k (x + k)^-s for integer s >= 2 (Euler-Maclaurin after shifting)."""
    shift = _SHIFT + int(max(0.0, math.ceil(-float(np.nanmin(x))))) if x.size else _SHIFT
    acc = np.zeros_like(x)
    for k in range(shift):
        acc = acc + (x + k) ** -s
    y = x + shift
    tail = y ** (1 - s) / (s - 1) + 0.5 * y ** -s
    fact, rising = 1.0, float(s)  # (2j)! and s (s+1) ... (s+2j-2)
    for j, b in enumerate(_BERNOULLI, start=1):
        fact *= (2 * j - 1) * (2 * j)
        tail = tail + b / fact * rising * y ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return acc + tail


def polygamma_array(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma of a float array."""
    if n == 0:
        return digamma_array(x)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        out = (-1.0) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x64)
        out = np.where((x64 <= 0) & (x64 == np.floor(x64)), np.inf if n % 2 else -np.inf, out)
    return out.astype(x.dtype, copy=False)


class Lgamma(Op):
    node_name = "LgammaBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return lgamma_array(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * digamma(x)


class Digamma(Op):
    node_name = "DigammaBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return digamma_array(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * polygamma(1, x)


class Polygamma(Op):
    node_name = "PolygammaBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, n=1):
        ctx.n = n
        return polygamma_array(n, x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * polygamma(ctx.n + 1, x)


def lgamma(x: Tensor) -> Tensor:
    """log |Gamma(x)|."""
    return Lgamma.apply(float_arg(x))


def digamma(x: Tensor) -> Tensor:
    """The logarithmic derivative of Gamma: -inf at 0, NaN at negative integers."""
    return Digamma.apply(float_arg(x))


def polygamma(n: int, x: Tensor) -> Tensor:
    """The n-th derivative of digamma."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return Polygamma.apply(float_arg(x), n=int(n))


def _polygamma_method(x: Tensor, n: int) -> Tensor:
    return polygamma(n, x)


def mvlgamma(x: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma of dimension ``p`` (composed from lgamma)."""
    if not bool((x._data > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 (p={p})")
    from ember._creation import arange

    j = arange(p, dtype=x.dtype if x.dtype.is_floating_point else None, device=x.device) / 2
    return lgamma(x.unsqueeze(-1) - j).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


_NAMES = {"erf": erf, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma, "digamma": digamma,
          "polygamma": polygamma, "mvlgamma": mvlgamma}
METHODS = dict(_NAMES, polygamma=_polygamma_method)
FUNCTIONS = dict(_NAMES)
