"""Special functions in vectorised NumPy (no SciPy): erf, erfc, erfinv, lgamma, digamma,
polygamma.

erf and erfc use Cephes' rational approximations (W. J. Cody's form; relative error ~1e-16 in
float64); erfinv refines a rational first guess with two Newton steps on erf. lgamma uses the
Lanczos approximation (g=7), digamma and polygamma shift the argument up and use asymptotic
(Euler-Maclaurin) series, with reflection for negative arguments.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import float_arg

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)

# erf(x) = x T(x^2) / U(x^2) for |x| < 1 (U monic).
_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
      7.00332514112805075473e3, 5.55923013010394962768e4)
_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
      2.26290000613890934246e4, 4.92673942608635921086e4)
# erfc(x) = exp(-x^2) P(x) / Q(x) for 1 <= x < 8, and R(x) / S(x) beyond.
_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
      4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
      9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
      9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
      1.65666309194161350182e3, 5.57535340817727675546e2)
_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
      6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
      1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)


def _poly(coef, x):
    """Horner's rule, highest power first."""
    r = np.full_like(x, coef[0])
    for c in coef[1:]:
        r = r * x + c
    return r


def _erfc_tail(z):
    """erfc(z) for z >= 1 (float64)."""
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        zc = np.minimum(z, 30.0)  # erfc underflows to 0 long before; keeps inf out of P/Q
        big = zc >= 8.0
        ratio = np.where(big, _poly(_R, zc) / _poly(_S, zc), _poly(_P, zc) / _poly(_Q, zc))
        return np.exp(-z * z) * ratio


def erf_array(x: np.ndarray) -> np.ndarray:
    """erf of a float array, computed in float64 and returned in the input's dtype."""
    x64 = x.astype(np.float64)
    z = np.abs(x64)
    small = z < 1.0
    zs = np.where(small, z, 0.0)
    near = x64 * _poly(_T, zs * zs) / _poly(_U, zs * zs)
    far = np.copysign(1.0 - _erfc_tail(np.where(small, 1.0, z)), x64)
    return np.where(small, near, far).astype(x.dtype, copy=False)


def erfc_array(x: np.ndarray) -> np.ndarray:
    """erfc without the cancellation of ``1 - erf`` for large positive x."""
    x64 = x.astype(np.float64)
    z = np.abs(x64)
    small = z < 1.0
    zs = np.where(small, z, 0.0)
    near = 1.0 - zs * _poly(_T, zs * zs) / _poly(_U, zs * zs) * np.sign(x64)
    tail = _erfc_tail(np.where(small, 1.0, z))
    far = np.where(x64 < 0, 2.0 - tail, tail)
    return np.where(small, near, far).astype(x.dtype, copy=False)


# Rational first guess for erfinv (central |y| <= 0.7, and tails), good to ~1e-6.
_A = (-0.14110320437680104, 0.92661860147244357, -1.6601283962374516, 0.88622692374517353)
_B = (0.01197270616590528, -0.33198239813321595, 1.46060340345661088, -2.13505380615258078,
      1.0)
_C = (1.82365845766309853, 3.60874665878559364, -1.87267416351196, -1.994216456587148)
_D = (1.81848952562894617, 3.74146294065960872, 1.0)


def erfinv_array(y: np.ndarray) -> np.ndarray:
    """erfinv of a float array (float64 math, input dtype out)."""
    y64 = y.astype(np.float64)
    a = np.abs(y64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        central = a <= 0.7
        ac = np.where(central, a, 0.0)
        at = np.where(central, 0.9, a)
        x_c = ac * _poly(_A, ac * ac) / _poly(_B, ac * ac)
        t = np.sqrt(-np.log((1.0 - at) / 2.0))
        x_t = _poly(_C, t) / _poly(_D, t)
        x = np.where(central, x_c, x_t)
        for _ in range(2):  # Newton on erf(x) = a doubles the correct digits each step
            # In the tails, erfc(x) = 1 - a keeps the digits that erf(x) - a would cancel.
            resid = np.where(central, erf_array(x) - a, (1.0 - a) - erfc_array(x))
            x = x - resid / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
        x = np.where(a == 1.0, np.inf, np.where(a > 1.0, np.nan, x))
    return np.copysign(x, y64).astype(y.dtype, copy=False)


class Erf(Op):
    node_name = "ErfBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return erf_array(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x * x).exp() * _TWO_OVER_SQRT_PI


class Erfc(Op):
    node_name = "ErfcBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return erfc_array(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (-x * x).exp() * -_TWO_OVER_SQRT_PI


class Erfinv(Op):
    node_name = "ErfinvBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, y):
        return erfinv_array(y)

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
