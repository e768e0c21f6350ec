"""erf, erfc, erfinv, and ndtri, erfcx, log_ndtr, of float arrays, vectorised in NumPy (no
SciPy), to torch's accuracy.

Each function is a few dozen whole-array NumPy passes, run block by block (``blockwise``) so
that the temporaries stay in the CPU cache. Pieces of the domain other than the common one
are computed only on the elements that fall there (``patch``), so typical inputs pay for one
piece. float32 computes in float32 where that keeps torch's accuracy (erf: GELU's hot path),
else in float64 with approximations sized for a float32 result; float64 computes in float64.

* erf, float32: ``x + x p(x^2)`` for |x| < 1; ``1 - exp(q(|x| - 1))`` beyond, q fitting
  log(erfc). Max error 1.23 ulp (torch: 1.0).
* erf / erfc, float64: Cephes' rational for |x| < 1, rewritten as ``x + x (T - U) / U`` so its
  rounding errors are scaled down 9x; for |x| >= 1, ``exp(-x^2) erfcx(x)`` with erfcx a rational
  in 1/x^2, and exp(-x^2) taken as exp(-hi^2) exp(-lo (x + hi)) (x = hi + lo, hi^2 exact) so
  that erfc keeps its digits down to 1e-308; erfc on [0.4, 1) from a polynomial, where
  ``1 - erf`` cancels. Max error: erf 1.3 ulp, erfc 3.7 ulp (torch: 1.0).
* erfc, float32: ``exp(-x^2) erfcx(|x|)`` in float64, erfcx a rational fit, reflected for x < 0;
  erfcx and log_ndtr from the same fit. Max error 0.6 ulp.
* erfinv: ``y p(w)`` with ``w = -log(1 - y^2) < 5``, rationals in ``sqrt(w)`` beyond (relative
  error 4e-10: float32's answer, 0.51 ulp); float64 adds one Newton step (1.7 ulp): on erf, on
  erfc in the tails (``1 - |y|`` is exact there), on log erfc where erfc nears underflow. ndtri
  is erfinv with ``1 - |y| = 2 min(p, 1 - p)`` given exactly, so it reaches p = 1e-320.

The coefficients are near-minimax fits made with mpmath for this module (Lawson's reweighted
least squares for polynomials, Sanathanan-Koerner iteration for rationals), except erf's
rational for |x| < 1, which is Cephes' (S. L. Moshier).
"""

from __future__ import annotations

import math

import numpy as np

from ember._backend import xp_of
from ember.ops._common import blockwise, patch, poly

# erf, float32 (highest power first).
_ERF32_NEAR = (7.853861461626366e-05, -0.0008010193705558777, 0.005188327748328447,
               -0.026853812858462334, 0.1128358542919159, -0.3761262595653534,
               0.12837916612625122)
_ERF32_FAR = (2.1204870392921293e-07, -2.3057327780406922e-05, 0.0002930160553660244,
              -0.0020164507441222668, 0.01004955917596817, -0.04156462475657463,
              -0.8431068658828735, -2.638967514038086, -1.8496055603027344)
# erfcx(x) = P(x - 5.05) / Q(x - 5.05) on [0, 10.1], relative error 5.7e-9 (for float32).
_ERFCX32_P = (1.0277343424609981e-05, 0.00027943073035329477, 0.0028900417371898355,
              0.013493315091423787, 0.024054369214453326)
_ERFCX32_Q = (1.821589798503489e-05, 0.0005872722084168474, 0.007632704135503073,
              0.04998658447134851, 0.1649445514377342, 0.21937808013917506)
# erf(x) = x + x D(x^2) / U(x^2) for |x| < 1: Cephes' T / U with D = T - U.
_ERF_D = (-1.0, -23.956740424879793, -431.3319300597684, -2362.3184837629583,
          -15625.674920261043, 6324.9070401759045)
_ERF_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)
# erfcx(x) = (v G(v) + 1) / (x sqrt(pi)), v = 1 / x^2, for x >= 1: a rational G = GP / GQ fitted
# on [1, 27.5] to a relative error of 2.8e-17 in erfcx, with G(0) = -1/2 (the asymptote).
_ERFCX_GP = tuple(c / math.sqrt(math.pi) for c in (
    -0.3678845770239839, -148.54203376725596, -1627.4122733943354, -5195.815964497437,
    -6822.853976871517, -4261.931500189162, -1351.62003264758, -219.44677224034834,
    -17.1044216796297, -0.4999999999999432))
_ERFCX_GQ = (185.2096166084635, 2858.882932913544, 13039.622082760941, 25184.79276978422,
             23953.736312350546, 12074.104330698307, 3315.5171152195894, 488.706809535284,
             35.70884335918746, 1.0)
# erfc(x) on [0.4, 1] as a polynomial in x - 0.7 (Chebyshev interpolant, error 9e-20).
_ERFC_MID = (2.5528119075760574e-06, -9.244695877374787e-06, -1.5797475340505507e-05,
             8.907872727426626e-05, 5.235998494266898e-05, -0.0006719790787373314,
             0.00017184015507300626, 0.0039729102835064705, -0.0040952674280221495,
             -0.017155897085682832, 0.03312189727837693, 0.04423237406806042,
             -0.16291044210341712, 0.0046084990694041025, 0.483892402287377,
             -0.6912748604105386, 0.32219880616258156)
# erfinv(y) = y C(w - 2.5) for w = -log(1 - y^2) < 5; P(v - 4.2) / Q(v - 4.2), v = sqrt(w).
_ERFINV_CENTRAL = (1.328589872776934e-10, 4.3703126546665646e-10, -1.102321327338593e-08,
                   1.6457228130857948e-08, 4.796988419036247e-07, -3.426012149650318e-06,
                   -4.9987597158790245e-06, 0.00021826355745467078, -0.0012527048769494311,
                   -0.004177324636172832, 0.24664027578567224, 1.5014093516925073)
_ERFINV_TAIL_P = (0.0031208522061937512, 0.05356601927616194, 0.38193341373183076,
                  1.4076860665942377, 2.6967978780009823, 2.201979075523165)
_ERFINV_TAIL_Q = (4.381245354163338e-07, 0.003111016810030799, 0.040639221715288054,
                  0.21547231821119228, 0.5311075226212545, 0.5448115234324855)
# ... and v P(1/v) / Q(1/v) for v > 6.2 (erfinv(1 - z), z < 1e-17: float64's ndtri).
_ERFINV_FAR_P = (38.05212768636285, -2.919122407317341, 20.291596004608778, 5.644689117477078,
                 0.18601752877882638)
_ERFINV_FAR_Q = (37.594245594851905, 3.455736990789136, 20.704361973215217, 5.645699320651236,
                 0.18601427882581378)

_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)


# --- float32 ---------------------------------------------------------------------------------


def _erf32(x: np.ndarray) -> np.ndarray:
    t = np.abs(x)
    a = np.minimum(t, np.float32(1))
    out = poly(_ERF32_NEAR, a * a)
    out *= a
    out += a
    patch(out, t >= 1, _erf32_far, t)  # NaN fails the test and keeps the NaN made above
    # erf(|x|) >= +0 here: x's sign bit ORed in is copysign, at a third of its cost
    bits = out.view(np.uint32)
    np.bitwise_or(bits, np.bitwise_and(x.view(np.uint32), np.uint32(0x8000_0000)), out=bits)
    return out


def _erf32_far(t: np.ndarray) -> np.ndarray:
    z = np.minimum(t, np.float32(3.95))  # beyond, erf rounds to 1
    z -= 1
    e = poly(_ERF32_FAR, z)
    np.exp(e, out=e)
    return np.subtract(1, e, out=e)


def _erfcx32(t: np.ndarray) -> np.ndarray:
    """erfcx(t) for float64 0 <= t <= 10.1 (larger t: erfcx(10.1)), to float32's accuracy."""
    z = np.minimum(t, 10.1)
    z -= 5.05
    out = poly(_ERFCX32_P, z)
    out /= poly(_ERFCX32_Q, z)
    return out


def _reflect(e: np.ndarray, x: np.ndarray) -> np.ndarray:
    """erfc(x) from e = erfc(|x|), in place: erfc(x) = 2 - erfc(-x) for x < 0."""
    neg = np.signbit(x)
    np.copysign(e, x, out=e)  # an arithmetic select: np.where is slow on random masks
    e += np.multiply(neg, 2.0)
    return e


def _erfc32(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    t = np.abs(x)
    out = _erfcx32(t)
    t *= t  # x^2 is exact in float64 for a float32 x
    np.negative(t, out=t)
    out *= np.exp(t, out=t)  # past x = 10.1 this underflows float32, as erfc(x) does
    return _reflect(out, x).astype(np.float32)


def _erfcx_f32(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    t = np.abs(x)
    out = _erfcx32(t)
    patch(out, t > 10.1, _erfcx_tail, t)
    # erfcx(-t) = 2 exp(t^2) - erfcx(t): inf once exp(t^2) overflows, as it must
    patch(out, x < 0, lambda u, r: 2 * np.exp(u * u) - r, t, out)
    return out.astype(np.float32)


def _log_ndtr32(x: np.ndarray) -> np.ndarray:
    """log Phi(x) = log(erfc(-x / sqrt(2)) / 2) = log(erfcx(t) / 2) - t^2 for x < 0 (t = |x| /
    sqrt(2)), and log1p(-erfc(t) / 2) for x >= 0, where Phi(x) is near 1."""
    x = x.astype(np.float64)
    t = np.abs(x)
    t *= _SQRT1_2
    half = _erfcx32(t)
    patch(half, t > 10.1, _erfcx_tail, t)
    half *= 0.5
    out = np.log(half)
    out -= np.square(t)
    patch(out, x >= 0, lambda u, h: np.log1p(-np.exp(-u * u) * h), t, half)
    return out.astype(np.float32)


def _erfinv_guess(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """erfinv(a) for a >= 0, given z = 1 - a (exact where a is near 1, or given directly
    by the caller), in float64 to a relative error of 4e-10: float32's answer, float64's first
    guess. a > 1 and NaN give NaN, a = 1 gives inf."""
    w = 2 - z
    w *= z  # 1 - a^2 without the cancellation near a = 1
    np.log(w, out=w)
    np.negative(w, out=w)
    out = poly(_ERFINV_CENTRAL, np.minimum(w, 5.0) - 2.5)
    out *= a
    patch(out, w > 5, _erfinv_tail, w)  # a > 1 or NaN: w is NaN, and so is out
    return out


def _erfinv_tail(w: np.ndarray) -> np.ndarray:
    v = np.sqrt(w)
    z = np.minimum(v, 6.2) - 4.2
    out = poly(_ERFINV_TAIL_P, z)
    out /= poly(_ERFINV_TAIL_Q, z)
    patch(out, v > 6.2, _erfinv_far, v)
    return out


def _erfinv_far(v: np.ndarray) -> np.ndarray:
    u = 1 / v  # v = inf (a = 1): u = 0 and the result is inf
    out = poly(_ERFINV_FAR_P, u)
    out /= poly(_ERFINV_FAR_Q, u)
    return np.multiply(out, v, out=out)


def _erfinv32(y: np.ndarray) -> np.ndarray:
    a = np.abs(y.astype(np.float64))
    out = _erfinv_guess(a, 1 - a)
    return np.copysign(out, y, out=out).astype(np.float32)


def _ndtri_parts(p: np.ndarray):
    """ndtri(p) = sign sqrt(2) erfinv(a), with a = 1 - z and z = 2 min(p, 1 - p) exact."""
    z = np.minimum(p, 1 - p)
    z *= 2
    return np.copysign(math.sqrt(2), p - 0.5), 1 - z, z


def _ndtri32(p: np.ndarray) -> np.ndarray:
    sign, a, z = _ndtri_parts(p.astype(np.float64))
    sign *= _erfinv_guess(a, z)
    return sign.astype(np.float32)


# --- float64 ---------------------------------------------------------------------------------


def _erf_near64(a: np.ndarray) -> np.ndarray:
    """erf for |a| <= 1."""
    s = a * a
    out = poly(_ERF_D, s)
    out /= poly(_ERF_U, s)
    out *= a
    out += a
    return out


def _erf64(x: np.ndarray) -> np.ndarray:
    t = np.abs(x)
    out = _erf_near64(np.minimum(t, 1.0))
    patch(out, t >= 1, _erf64_far, t)
    return np.copysign(out, x, out=out)


def _erf64_far(t: np.ndarray) -> np.ndarray:
    z = np.minimum(t, 6.0)  # beyond, erf rounds to 1
    out = _erfcx_tail(z)
    z *= z
    np.negative(z, out=z)
    out *= np.exp(z, out=z)  # x^2's rounding is harmless: erfc <= 0.16 next to 1
    return np.subtract(1, out, out=out)


def _erfcx_tail(t: np.ndarray) -> np.ndarray:
    """erfcx(t) = exp(t^2) erfc(t) for t >= 1 (inf included)."""
    v = t * t
    np.divide(1, v, out=v)
    out = poly(_ERFCX_GP, v)
    out /= poly(_ERFCX_GQ, v)
    out *= v
    out += 1 / math.sqrt(math.pi)
    out /= t
    return out


def _exp_square(t: np.ndarray, sign: float = -1.0) -> np.ndarray:
    """exp(sign t^2) for 0 <= t <= 30 to float64's accuracy: with t = hi + lo, hi of 24 bits
    (so hi^2 is exact), exp(sign hi^2) exp(sign lo (t + hi)). A plain exp(-t*t) would pass
    t*t's rounding error (up to 5e-14 here) into the result."""
    hi = t.astype(np.float32).astype(np.float64)
    lo = t - hi
    lo *= t + hi
    lo *= sign
    np.exp(lo, out=lo)
    hi *= hi
    hi *= sign
    return np.multiply(np.exp(hi, out=hi), lo, out=lo)


def _erfc64_tail(x: np.ndarray) -> np.ndarray:
    """erfc for |x| >= 1."""
    t = np.minimum(np.abs(x), 30.0)  # beyond 27.3 erfc underflows to 0
    out = _erfcx_tail(t)
    out *= _exp_square(t)
    return _reflect(out, x)


def _erfc64(x: np.ndarray) -> np.ndarray:
    out = _erf_near64(np.clip(x, -1.0, 0.4))
    np.subtract(1, out, out=out)
    patch(out, (x >= 0.4) & (x < 1), lambda u: poly(_ERFC_MID, u - 0.7), x)
    patch(out, np.abs(x) >= 1, _erfc64_tail, x)
    return out


def _erfinv_newton(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """erfinv(a) for a >= 0 and z = 1 - a, to float64's accuracy: one Newton step doubles the
    guess's 9.4 correct digits. On erf(x) = a for a <= 1/2; on erfc(x) = z beyond, where z
    keeps the digits that 1 - erfc(x) would lose; and on log erfc(x) = log z where erfc(x)
    nears float64's underflow and its own digits run out."""
    x = _erfinv_guess(a, z)
    patch(x, a <= 0.5, lambda u, v: _newton(u, _erf64(u) - v), x, a)
    patch(x, (a > 0.5) & (z >= 1e-280), lambda u, v: _newton(u, v - _erfc64(u)), x, z)
    patch(x, (z < 1e-280) & (x < np.inf), _newton_far, x, z)
    return x


def _newton(x: np.ndarray, resid: np.ndarray) -> np.ndarray:
    """x - resid / erf'(x)."""
    resid *= _HALF_SQRT_PI
    resid *= np.exp(x * x)
    return x - resid


def _newton_far(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The step on log erfc(x) = log z: the residual log(erfcx(x)) - x^2 - log(z), with x^2
    split so that its big part is exact (as in _exp_square), over the derivative
    -2 / (sqrt(pi) erfcx(x))."""
    cx = _erfcx64(x)
    hi = x.astype(np.float32).astype(np.float64)
    g = np.log(cx) - (x - hi) * (x + hi)  # log erfc(x) + hi^2
    g -= np.log(z) + hi * hi  # hi^2 exact, and log(z) close to -hi^2: no digits lost
    g *= cx
    g *= _HALF_SQRT_PI  # d/dx log erfc(x) = -2 / (sqrt(pi) erfcx(x))
    return x + g


def _erfinv64(y: np.ndarray) -> np.ndarray:
    a = np.abs(y)
    out = _erfinv_newton(a, 1 - a)
    return np.copysign(out, y, out=out)


def _ndtri64(p: np.ndarray) -> np.ndarray:
    sign, a, z = _ndtri_parts(p)
    sign *= _erfinv_newton(a, z)
    return sign


def _erfcx64(x: np.ndarray) -> np.ndarray:
    xc = np.clip(x, -1.0, 0.4)
    out = _erf_near64(xc)
    np.subtract(1, out, out=out)
    xc *= xc
    out *= np.exp(xc, out=xc)
    patch(out, (x >= 0.4) & (x < 1), lambda u: np.exp(u * u) * poly(_ERFC_MID, u - 0.7), x)
    patch(out, x >= 1, _erfcx_tail, x)
    # erfcx(-t) = 2 exp(t^2) - erfcx(t): inf once exp(t^2) overflows, as it must
    patch(out, x <= -1, lambda u: 2 * _exp_square(np.minimum(-u, 30.0), 1.0) - _erfcx_tail(-u), x)
    return out


def _log_ndtr64(x: np.ndarray) -> np.ndarray:
    """log Phi(x) = log(erfc(-x / sqrt(2)) / 2): from erfcx where erfc would underflow, and as
    log1p(-Phi(-x)) for x > 0, where Phi(x) is near 1."""
    t = x * -_SQRT1_2
    out = np.log(_erfc64(np.minimum(t, 1.0)) / 2)
    patch(out, x > 0, lambda u: np.log1p(_erfc64(u) / -2), -t)
    patch(out, t > 1, lambda u, v: np.log(_erfcx64(u) / 2) - v * v / 2, t, x)
    return out


# --- dispatch --------------------------------------------------------------------------------


def _run(x: np.ndarray, f32, f64, name: str) -> np.ndarray:
    if xp_of(x) is not np:  # CuPy's kernel where it has one; else the NumPy code on CuPy
        import cupyx.scipy.special  # noqa: PLC0415 - ships with cupy

        fn = getattr(cupyx.scipy.special, name, None)
        if fn is not None:
            return fn(x)
    if x.dtype == np.float64:
        return blockwise(f64, x)
    if x.dtype == np.float32:
        return blockwise(f32, x)
    return blockwise(f32, x.astype(np.float32)).astype(x.dtype)  # float16, bfloat16


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float array, in its dtype."""
    return _run(x, _erf32, _erf64, "erf")


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc of a float array, accurate in the right tail (no ``1 - erf`` cancellation)."""
    return _run(x, _erfc32, _erfc64, "erfc")


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse of erf: ±inf at ±1, NaN beyond."""
    return _run(y, _erfinv32, _erfinv64, "erfinv")


def erfcx(x: np.ndarray) -> np.ndarray:
    """exp(x^2) erfc(x) without the overflow and underflow of its factors."""
    return _run(x, _erfcx_f32, _erfcx64, "erfcx")


def log_ndtr(x: np.ndarray) -> np.ndarray:
    """log of the standard normal CDF, accurate far into both tails."""
    return _run(x, _log_ndtr32, _log_ndtr64, "log_ndtr")


def ndtri(p: np.ndarray) -> np.ndarray:
    """The standard normal quantile, sqrt(2) erfinv(2p - 1) without that form's cancellation
    for p near 0."""
    return _run(p, _ndtri32, _ndtri64, "ndtri")
