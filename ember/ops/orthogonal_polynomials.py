"""torch.special's orthogonal polynomials ``p_n(x)``: Chebyshev T, U, V, W (and their shifted
forms on [0, 1]), Hermite H (physicists') and He (probabilists'), Laguerre L and Legendre P.

As torch's kernels (ATen/native/Math.h): ``x`` and ``n`` are promoted to one float dtype and
``n`` is truncated to an integer (NaN, inf and values beyond int64 count as negative, which
gives 0); the special points and, for Chebyshev inside (-1, 1), the trigonometric closed form
come first, and the three-term recurrence otherwise, in the result dtype and stopping at the
first NaN. The recurrence runs over all elements at once, dropping each when it reaches its
``n``. No derivatives, as in torch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember._tensor import Tensor
from ember.ops._cephes import Piecewise, binary_inputs, blockwise, tensor

# A step gives (a, b, d) for the next value (a * q - b) / d (d None: no division), from
# (x, p, q, j), where j counts steps from 1.
Step = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple]


def _degree(n: np.ndarray) -> np.ndarray:
    """``static_cast<int64_t>(n)``: truncation; NaN, inf and out-of-range values -> -1 (x86
    gives INT64_MIN for them, and every negative degree is treated alike)."""
    ok = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
    return np.where(ok, n, -1.0).astype(np.int64)


def _fused(a: np.ndarray, q: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * q - b`` rounded once, as torch's compiled kernels compute it (one fused
    multiply-add, which also decides where a value near the dtype's limit overflows). For
    float32 through float64, where the product is exact; float64 rounds twice."""
    if a.dtype != np.float32:
        return a * q - b
    wide = a.astype(np.float64)
    wide *= q
    wide -= b
    return wide.astype(np.float32)


def _recurrence(x: np.ndarray, q: np.ndarray, steps: np.ndarray, step: Step) -> np.ndarray:
    """``q`` after ``steps`` (per element) applications of ``p, q = q, step(...)`` starting
    from p = 1; an element stops early once its value is NaN (it stays NaN, so that test can
    wait for the next step where some element finishes, or every 16th)."""
    out = q.copy()
    idx = None  # where the running elements go in ``out``; None: all, in order
    p = np.ones_like(q)
    first_stop = steps.min(initial=0)
    j = 1
    while q.size:
        a, b, d = step(x, p, q, j)
        r = _fused(a, q, b)
        if d is not None:
            r /= d
        p, q = q, r
        if j >= first_stop or j % 16 == 0:
            done = (steps <= j) | np.isnan(q)
            if done.any():
                out[np.flatnonzero(done) if idx is None else idx[done]] = q[done]
                keep = ~done
                idx = np.flatnonzero(keep) if idx is None else idx[keep]
                x, p, q, steps = x[keep], p[keep], q[keep], steps[keep]
                first_stop = steps.min(initial=0)
        j += 1
    return out


def _doubled_step(x2, p, q, j):
    """Chebyshev: 2x q - p (``x2`` is 2x)."""
    return x2, p, None


def _hermite_step(x2, p, q, j):
    """Physicists' Hermite: 2x q - 2j p (``x2`` is 2x)."""
    return x2, (2 * j) * p, None


def _hermite_e_step(x, p, q, j):
    return x, j * p, None


def _laguerre_step(x, p, q, j):
    return (j + j) + (1.0 - x), j * p, j + 1


def _legendre_step(x, p, q, j):
    return (j + j + 1) * x, j * p, j + 1


def _polynomial(name: str, x, n, fn) -> Tensor:
    xs, ns, shape = binary_inputs(name, ("x", "n"), x, n)
    with np.errstate(all="ignore"):
        return tensor(blockwise(fn, xs, _degree(ns)), shape)


def _first_terms(pw: Piecewise, k: np.ndarray, first: np.ndarray) -> None:
    pw.case(k == 0, 1.0)
    pw.case(k == 1, first)


def _chebyshev(x: np.ndarray, k: np.ndarray, kind: str, shifted: bool) -> np.ndarray:
    """T, U, V or W at x (of the shifted polynomial: at 2x - 1, with the shifted edge
    points and trigonometric thresholds of torch's kernels)."""
    dt = x.dtype.type
    nf = k.astype(x.dtype)  # torch's int64 n, converted where it meets T
    y = x + x - 1.0 if shifted else x
    pw = Piecewise(x.size, x.dtype)
    pw.case(k < 0, 0.0)
    odd = (k % 2) == 1
    top, bottom = (x == 1.0, x == 0.0) if shifted else (x == 1.0, x == -1.0)
    ones, counts = dt(1.0), nf + 1.0
    sign = np.where(odd, -1.0, 1.0).astype(x.dtype)
    edge = {"t": (ones, sign), "u": (counts, sign * counts),
            "v": (ones, sign * (nf + nf + 1.0)), "w": (nf + nf + 1.0, sign)}[kind]
    pw.case(top, edge[0])
    pw.case(bottom, edge[1])
    limit = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else (4 if kind == "w" else 6)
    pw.case((k > limit) & (np.abs(y) < 1.0), lambda i: _trigonometric(y[i], nf[i], kind,
                                                                      sign[i]))
    first = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
    _first_terms(pw, k, first)
    return pw.rest(lambda i: _recurrence(y[i] + y[i], first[i], k[i] - 1, _doubled_step))


def _trigonometric(y: np.ndarray, nf: np.ndarray, kind: str, sign: np.ndarray) -> np.ndarray:
    """The closed forms in theta = acos(y), with torch's fallbacks where the denominator is
    exactly 0 (or the half-angle factor exactly 1)."""
    theta = np.arccos(y)
    if kind == "t":
        return np.cos(nf * theta)
    if kind == "u":
        s = np.sin(theta)
        return np.where(s != 0.0, np.sin((nf + 1.0) * theta) / s,
                        (nf + 1.0) * np.cos((nf + 1.0) * theta) / y)
    half = theta / 2.0
    if kind == "v":
        return np.where(np.sin(half) != 1.0, np.cos((nf + 0.5) * theta) / np.cos(half),
                        sign * (nf + nf + 1.0))
    return np.where(np.cos(half) != 1.0, np.sin((nf + 0.5) * theta) / np.sin(half),
                    np.where(y > 0.0, nf + nf + 1.0, sign))


def _hermite(x: np.ndarray, k: np.ndarray, probabilists: bool) -> np.ndarray:
    limit = 128 if x.dtype == np.float32 else 512
    pw = Piecewise(x.size, x.dtype)
    pw.case(k < 0, 0.0)
    first = x if probabilists else x + x
    _first_terms(pw, k, first)
    pw.case(k > limit, np.nan)
    if probabilists:
        return pw.rest(lambda i: _recurrence(x[i], x[i], k[i] - 1, _hermite_e_step))
    return pw.rest(lambda i: _recurrence(first[i], first[i], k[i] - 1, _hermite_step))


def _laguerre(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    pw = Piecewise(x.size, x.dtype)
    pw.case(k < 0, 0.0)
    pw.case(x == 0.0, 1.0)
    first = 1.0 - x
    _first_terms(pw, k, first)
    return pw.rest(lambda i: _recurrence(x[i], first[i], k[i] - 1, _laguerre_step))


def _legendre(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    pw = Piecewise(x.size, x.dtype)
    pw.case(k < 0, 0.0)
    pw.case(np.abs(x) == 1.0, np.where((x > 0.0) | (k % 2 == 0), 1.0, -1.0))
    _first_terms(pw, k, x)
    return pw.rest(lambda i: _recurrence(x[i], x[i], k[i] - 1, _legendre_step))


def chebyshev_polynomial_t(x, n) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(x)."""
    return _polynomial("chebyshev_polynomial_t", x, n, lambda a, k: _chebyshev(a, k, "t", False))


def chebyshev_polynomial_u(x, n) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(x)."""
    return _polynomial("chebyshev_polynomial_u", x, n, lambda a, k: _chebyshev(a, k, "u", False))


def chebyshev_polynomial_v(x, n) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(x)."""
    return _polynomial("chebyshev_polynomial_v", x, n, lambda a, k: _chebyshev(a, k, "v", False))


def chebyshev_polynomial_w(x, n) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(x)."""
    return _polynomial("chebyshev_polynomial_w", x, n, lambda a, k: _chebyshev(a, k, "w", False))


def shifted_chebyshev_polynomial_t(x, n) -> Tensor:
    """T_n(2x - 1), the Chebyshev polynomial of the first kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_t", x, n,
                       lambda a, k: _chebyshev(a, k, "t", True))


def shifted_chebyshev_polynomial_u(x, n) -> Tensor:
    """U_n(2x - 1), the Chebyshev polynomial of the second kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_u", x, n,
                       lambda a, k: _chebyshev(a, k, "u", True))


def shifted_chebyshev_polynomial_v(x, n) -> Tensor:
    """V_n(2x - 1), the Chebyshev polynomial of the third kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_v", x, n,
                       lambda a, k: _chebyshev(a, k, "v", True))


def shifted_chebyshev_polynomial_w(x, n) -> Tensor:
    """W_n(2x - 1), the Chebyshev polynomial of the fourth kind on [0, 1]."""
    return _polynomial("shifted_chebyshev_polynomial_w", x, n,
                       lambda a, k: _chebyshev(a, k, "w", True))


def hermite_polynomial_h(x, n) -> Tensor:
    """The physicists' Hermite polynomial H_n(x) (NaN beyond degree 128 in float32, 512 in
    float64, as torch)."""
    return _polynomial("hermite_polynomial_h", x, n, lambda a, k: _hermite(a, k, False))


def hermite_polynomial_he(x, n) -> Tensor:
    """The probabilists' Hermite polynomial He_n(x) (NaN beyond degree 128 in float32, 512 in
    float64, as torch)."""
    return _polynomial("hermite_polynomial_he", x, n, lambda a, k: _hermite(a, k, True))


def laguerre_polynomial_l(x, n) -> Tensor:
    """The Laguerre polynomial L_n(x)."""
    return _polynomial("laguerre_polynomial_l", x, n, _laguerre)


def legendre_polynomial_p(x, n) -> Tensor:
    """The Legendre polynomial P_n(x)."""
    return _polynomial("legendre_polynomial_p", x, n, _legendre)
