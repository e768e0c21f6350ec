"""lgamma, digamma and polygamma of float arrays, vectorised in NumPy (no SciPy).

All compute in float64 (a float32 result is rounded once), block by block (``blockwise``).
Arguments below 1/2 go through the reflection formulas, and both the reflections and the main
formula take ``y = max(x, 1 - x) >= 1/2``, so each element pays for one evaluation:

* lgamma: Lanczos (g = 7, 9 terms) in log form, so large y cannot overflow;
  ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)``.
* digamma: ``psi(y) = psi(y + N) - sum_{k<N} 1 / (y + k)``, then the asymptotic series;
  ``psi(x) = psi(1 - x) - pi cot(pi x)``.
* polygamma, n >= 1: ``(-1)^(n+1) n! zeta(n + 1, y)``, the Hurwitz zeta by Euler-Maclaurin after
  a shift of N; ``psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x))``, where
  ``P_0(c) = c`` and ``P_(k+1)(c) = -(1 + c^2) P_k'(c)`` give the n-th derivative of cot.

The shift N is fixed per dtype (the series then has float64's or float32's accuracy), never
taken from the data.
"""

from __future__ import annotations

import math

import numpy as np

from ember.ops._common import blockwise, patch, poly

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B2, B4, ..., B14 for the asymptotic series.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
# digamma's series sum_k B_2k / (2k y^2k) as a polynomial in 1 / y^2, highest power first.
_PSI_SERIES = tuple(b / (2 * k) for k, b in enumerate(_BERNOULLI, start=1))[::-1]
_SHIFT = {np.float64: 10, np.float32: 4}  # series error at y + N: 1e-17 and 1e-11 relative


def _tan_pi(x: np.ndarray) -> np.ndarray:
    """tan(pi (x - round(x))): |sin(pi x)| and cot(pi x) come from it (both have period 1)
    with exact zeros and poles at the integers and without pi x's rounding for large x. (tan:
    NumPy's float64 sin and cos are ~6x slower.)"""
    r = np.round(x)
    np.subtract(x, r, out=r)
    r *= math.pi
    return np.tan(r, out=r)


def _ipow(u: np.ndarray, s: int) -> np.ndarray:
    """u ** s for an integer s >= 1 by repeated squaring (np.power is ~10x slower)."""
    out, base = None, u
    while True:
        if s & 1:
            out = base.copy() if out is None else np.multiply(out, base, out=out)
        s >>= 1
        if not s:
            return out
        base = base * base


def _cot_pi(x: np.ndarray) -> np.ndarray:
    """cot(pi x), exactly 0 at the half-integers (where 1 / tan would leave 6e-17): for
    |r| > 1/4 (r = x - round(x)) as tan(pi (+-1/2 - r))."""
    r = np.round(x)
    np.subtract(x, r, out=r)
    far = np.abs(r) > 0.25
    s = np.where(far, np.copysign(0.5, r) - r, r)  # exact: r and 1/2 - r are both exact
    s *= math.pi
    np.tan(s, out=s)
    return np.where(far, s, 1 / s)


# --- lgamma ----------------------------------------------------------------------------------


def _lgamma_pos(y: np.ndarray) -> np.ndarray:
    """lgamma for y >= 1/2 (NaN through)."""
    z = np.minimum(y, 1e306)  # lgamma overflows past 2.5e305 all the same, and inf - inf is NaN
    z -= 1
    a = np.full_like(z, _LANCZOS[0])
    t = np.empty_like(z)
    for k, c in enumerate(_LANCZOS[1:], start=1):
        np.add(z, k, out=t)
        np.divide(c, t, out=t)
        a += t
    np.log(a, out=a)
    np.add(z, 7.5, out=t)
    z += 0.5
    z *= np.log(t)
    z -= t
    z += a
    z += _HALF_LOG_2PI
    return z


def _lgamma_reflect(x: np.ndarray, lg: np.ndarray) -> np.ndarray:
    """lgamma(x) for x < 1/2 from lg = lgamma(1 - x): log(pi / |sin(pi x)|) - lg, with
    -log|sin| = log1p(t^2) / 2 - log|t| for t = tan(pi x); +inf at the poles (t = 0)."""
    t = _tan_pi(x)
    out = np.log1p(t * t)
    out *= 0.5
    np.abs(t, out=t)
    out -= np.log(t, out=t)
    out += math.log(math.pi)
    out -= lg
    return out


def _lgamma(x: np.ndarray) -> np.ndarray:
    x = np.maximum(x, -2.0**53)  # -inf onto a pole: every float64 below -2^52 is an integer
    y = np.maximum(x, 1 - x)
    out = _lgamma_pos(y)
    out[(y == 1) | (y == 2)] = 0  # exactly, as torch (Lanczos is 4e-16 off there)
    patch(out, x < 0.5, _lgamma_reflect, x, out)
    return out


# --- digamma ---------------------------------------------------------------------------------


def _digamma_pos(y: np.ndarray, shift: int) -> np.ndarray:
    """digamma for y >= 1/2."""
    acc = np.zeros_like(y)
    t = np.empty_like(y)
    for k in range(shift):
        np.add(y, k, out=t)
        np.divide(1, t, out=t)
        acc += t
    big = y + shift
    inv2 = 1 / (big * big)
    series = poly(_PSI_SERIES, inv2)
    series *= inv2
    out = np.log(big)
    np.divide(0.5, big, out=big)
    out -= big
    out -= series
    out -= acc
    return out


def _digamma_reflect(x: np.ndarray, psi: np.ndarray) -> np.ndarray:
    """digamma(x) for x < 1/2 from psi = digamma(1 - x): -inf at +0 and +inf at -0, NaN at
    the negative integers (where tan(pi x) = 0) and at -inf, as torch."""
    t = _tan_pi(np.maximum(x, -2.0**53))
    out = np.divide(-math.pi, t)
    out += psi
    patch(out, t == 0, lambda u: np.where(u == 0, np.copysign(np.inf, -u), np.nan), x)
    return out


def _digamma(x: np.ndarray, shift: int) -> np.ndarray:
    out = _digamma_pos(np.maximum(x, 1 - x), shift)
    patch(out, x < 0.5, _digamma_reflect, x, out)
    return out


# --- polygamma -------------------------------------------------------------------------------


def _hurwitz_zeta(s: int, y: np.ndarray, shift: int) -> np.ndarray:
    """zeta(s, y) = sum_k (y + k)^-s for an integer s >= 2 and y >= 1/2."""
    acc = np.zeros_like(y)
    for k in range(shift):
        acc += _ipow(1 / (y + k), s)
    inv = 1 / (y + shift)  # 1 / big
    # Euler-Maclaurin: big^(1-s) / (s-1) + big^-s / 2 + sum_j B_2j / (2j)! s^(2j-1) big^(-s-2j+1),
    # s^(k) the rising factorial s (s+1) ... (s+k-1); in powers of 1 / big, so y = inf gives 0.
    coef, fact, rising = [], 1.0, float(s)
    for j, b in enumerate(_BERNOULLI, start=1):
        fact *= (2 * j - 1) * (2 * j)
        coef.append(b / fact * rising)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    tail = poly(tuple(coef[::-1]), inv * inv)
    tail *= inv
    tail += 0.5
    tail *= inv
    tail += 1 / (s - 1)
    tail *= _ipow(inv, s - 1)
    return tail + acc


def _cot_derivative(n: int) -> tuple:
    """P_n's coefficients, highest power first: d^n/dx^n cot(x) = P_n(cot x)."""
    p = [0, 1]  # lowest power first: P_0(c) = c
    for _ in range(n):
        d = [k * p[k] for k in range(1, len(p))]  # P'
        q = [0] * (len(d) + 2)
        for k, c in enumerate(d):  # -(1 + c^2) P'
            q[k] -= c
            q[k + 2] -= c
        p = q
    return tuple(float(c) for c in reversed(p))


def _polygamma(n: int, x: np.ndarray, shift: int) -> np.ndarray:
    y = np.maximum(x, 1 - x)
    out = _hurwitz_zeta(n + 1, y, shift)
    out *= (-1.0) ** (n + 1) * math.factorial(n)

    def reflect(u, pos):
        c = _cot_pi(np.maximum(u, -2.0**53))
        res = poly(_cot_derivative(n), c)
        res *= -math.pi ** (n + 1)
        res += (-1.0) ** n * pos
        res[np.isinf(c)] = np.inf if n % 2 else -np.inf  # the poles, and -inf
        return res

    patch(out, x < 0.5, reflect, x, out)
    # torch: trigamma(-inf) is NaN, and so is polygamma(n > 1, +inf)
    patch(out, np.isinf(x), lambda u, o: np.where((u > 0) == (n > 1), np.nan, o), x, out)
    return out


# --- dispatch --------------------------------------------------------------------------------


def _run(x: np.ndarray, make) -> np.ndarray:
    """``make(shift)(x64)`` block by block, rounded once to x's float dtype."""
    dt = x.dtype.type
    kernel = make(_SHIFT.get(dt, _SHIFT[np.float32]))
    if dt is np.float64:
        return blockwise(kernel, x)
    return blockwise(lambda b: kernel(b.astype(np.float64)).astype(dt), x)


def lgamma(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)|: +inf at the poles."""
    return _run(x, lambda shift: _lgamma)


def digamma(x: np.ndarray) -> np.ndarray:
    """-inf at 0, NaN at the negative integers."""
    return _run(x, lambda shift: lambda b: _digamma(b, shift))


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    """The n-th derivative of digamma."""
    if n == 0:
        return digamma(x)
    return _run(x, lambda shift: lambda b: _polygamma(n, b, shift))
