"""Modified Bessel functions of the first kind: ``i0`` (``torch.i0``, ``special.i0``),
``special.i0e``, ``special.i1``, ``special.i1e`` and the non-differentiable
``special.modified_bessel_i0/i1``.

Computed in float64 and rounded to the input's dtype: the power series
``I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k+nu)!)`` (all terms positive, so no cancellation)
for |x| <= 25, and Hankel's asymptotic expansion ``e^x / sqrt(2 pi x) sum_k (-1)^k a_k(nu) /
x^k`` above, where 26 terms are accurate to ~1e-19. Both are Horner passes over blocks of the
array that fit in cache; the series stops at the term that no longer changes the block's largest
element.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import float_arg
from ember.ops.pointwise import where

_SPLIT = 25.0
_BANDS = (2.0, 8.0, _SPLIT)
_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 26
_CHUNK = 1 << 16


def _series_coefficients(nu: int) -> np.ndarray:
    return np.array([1.0 / (math.factorial(k) * math.factorial(k + nu))
                     for k in range(_SERIES_TERMS)])


def _asymptotic_coefficients(nu: int) -> np.ndarray:
    """(-1)^k a_k(nu), a_k = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k)."""
    out, a = [1.0], 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        a *= (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        out.append((-1) ** k * a)
    return np.array(out)


_SERIES = {nu: _series_coefficients(nu) for nu in (0, 1)}
_ASYMPTOTIC = {nu: _asymptotic_coefficients(nu) for nu in (0, 1)}


def _horner(coef: np.ndarray, z: np.ndarray) -> np.ndarray:
    s = np.full_like(z, coef[-1])
    for c in coef[-2::-1]:
        s *= z
        s += c
    return s


def _series_terms(nu: int, t_max: float, tol: float) -> int:
    """How many series terms change the sum at t = x^2/4 = t_max by more than ``tol``
    (relative)."""
    coef, term, total = _SERIES[nu], 1.0, 0.0
    for k in range(_SERIES_TERMS):
        term = coef[k] * t_max ** k
        total += term
        if term < tol * total:
            return k + 1
    return _SERIES_TERMS


def _bessel(x: np.ndarray, nu: int, scaled: bool) -> np.ndarray:
    """I_nu(x) (times e^-|x| if ``scaled``) in float64, for nu in (0, 1), a block of _CHUNK
    elements at a time: the passes over float64 temporaries then stay in cache (and reuse
    memory rather than fault in fresh pages), ~2x faster than over a large array. A float32 or
    float16 result needs the series only to ~1e-10."""
    tol = 1e-17 if x.dtype == np.float64 else 1e-10
    flat = x.reshape(-1)
    if x.size <= _CHUNK:
        return _bessel_block(flat, nu, scaled, tol).reshape(x.shape)
    out = np.empty(flat.shape, np.float64)
    for start in range(0, flat.size, _CHUNK):
        out[start:start + _CHUNK] = _bessel_block(flat[start:start + _CHUNK], nu, scaled, tol)
    return out.reshape(x.shape)


def _bessel_block(x: np.ndarray, nu: int, scaled: bool, tol: float) -> np.ndarray:
    """The series with the terms the first band needs, over every element (most arguments lie
    there, and no copy in and out of the band is needed); then the elements beyond it, band by
    band, over their indices; above _SPLIT (and NaN), the asymptotic expansion."""
    a = np.absolute(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # large |x|: overwritten below
        out = _series(a, nu, scaled, min(float(a.max(initial=0.0)), _BANDS[0]), tol)
    rest = np.flatnonzero(~(a <= _BANDS[0]))
    for hi in _BANDS[1:]:
        if not rest.size:
            break
        s = a[rest]
        inside = s <= hi
        if inside.any():
            s = s[inside]
            out[rest[inside]] = _series(s, nu, scaled, float(s.max()), tol)
            rest = rest[~inside]
    if rest.size:
        s = a[rest]
        with np.errstate(over="ignore", invalid="ignore"):
            v = _horner(_ASYMPTOTIC[nu], 1.0 / s) / np.sqrt(2 * np.pi * s)
            if not scaled:
                v *= np.exp(s)  # inf beyond ~709, as torch
            v[np.isinf(s)] = 0.0 if scaled else np.nan  # torch's values at +-inf
        out[rest] = v
    if nu:
        np.copysign(out, x, out=out)  # I1 is odd
    return out


def _series(s: np.ndarray, nu: int, scaled: bool, s_max: float, tol: float) -> np.ndarray:
    """The power series at ``s`` (>= 0, at most ``s_max``)."""
    t = s * s
    t *= 0.25
    v = _horner(_SERIES[nu][:_series_terms(nu, s_max * s_max * 0.25, tol)], t)
    if nu:
        t = np.multiply(s, 0.5, out=t)
        v *= t
    if scaled:
        v *= np.exp(np.negative(s, out=t))
    return v


def _in_dtype(fn):
    def forward(ctx, x):
        with np.errstate(over="ignore"):  # values beyond float32's range round to inf
            return fn(x).astype(x.dtype, copy=False)
    return staticmethod(forward)


class I0(Op):
    node_name = "I0Backward0"
    saves = (0,)
    forward = _in_dtype(lambda x: _bessel(x, 0, False))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * i1(x)


class I0e(Op):
    node_name = "SpecialI0EBackward0"
    saves = (0,)
    saves_output = True
    forward = _in_dtype(lambda x: _bessel(x, 0, True))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return g * (i1e(x) - x.sgn() * out)


def _safe(x: Tensor):
    """torch's guard for the removable singularity of I1(x)/x at 0: (|x| > eps, x or eps)."""
    eps = float(np.finfo(x._data.dtype).eps)
    far = x.abs() > eps
    return far, where(far, x, x.new_full((), eps))


class I1(Op):
    node_name = "SpecialI1Backward0"
    saves = (0,)
    saves_output = True
    forward = _in_dtype(lambda x: _bessel(x, 1, False))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        far, safe = _safe(x)
        return g * where(far, i0(safe) - out * safe.reciprocal(), x.new_full((), 0.5))


class I1e(Op):
    node_name = "SpecialI1EBackward0"
    saves = (0,)
    saves_output = True
    forward = _in_dtype(lambda x: _bessel(x, 1, True))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        far, safe = _safe(x)
        d = i0e(safe) - out * (safe.sgn() + safe.reciprocal())
        return g * where(far, d, x.new_full((), 0.5))


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0."""
    return I0.apply(float_arg(input))


def i0e(input: Tensor) -> Tensor:
    """``exp(-|x|) * i0(x)``, without overflow."""
    return I0e.apply(float_arg(input))


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1."""
    return I1.apply(float_arg(input))


def i1e(input: Tensor) -> Tensor:
    """``exp(-|x|) * i1(x)``, without overflow."""
    return I1e.apply(float_arg(input))


def modified_bessel_i0(input: Tensor) -> Tensor:
    """``i0`` as torch's separate kernel: no gradient."""
    return Tensor._make(I0.forward(None, float_arg(input)._data))


def modified_bessel_i1(input: Tensor) -> Tensor:
    """``special.i1`` as torch's separate kernel: no gradient."""
    return Tensor._make(I1.forward(None, float_arg(input)._data))


FUNCTIONS = {"i0": i0}
METHODS = {"i0": i0}
