"""The regularized incomplete gamma functions ``igamma`` = ``special.gammainc`` (P) and
``igammac`` = ``special.gammaincc`` (Q = 1 - P), with torch's (SciPy's) boundary values.

Computed in float64: the power series of P where x < a + 1 and Lentz's continued fraction of Q
elsewhere, each iterated over the elements that have not converged yet (no per-element Python
loop). Only ``other`` (x) has a gradient, ``+-exp((a - 1) log x - x - lgamma(a))``; torch has
none for ``input`` (a).
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import binary_args
from ember.ops.pointwise_more import need_tensor, not_for

_EPS = 1e-16
_MAX_ITER = 10000
_TINY = 1e-300


def _lgamma(a: np.ndarray) -> np.ndarray:
    return Tensor._make(a).lgamma()._data


def _log_prefactor(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log(x^a e^-x / Gamma(a))."""
    return a * np.log(x) - x - _lgamma(a)


def _series_p(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = np.ones_like(a)
    total = np.ones_like(a)
    ap = a.copy()
    active = np.arange(a.size)
    for _ in range(_MAX_ITER):
        ap[active] += 1
        term[active] *= x[active] / ap[active]
        total[active] += term[active]
        active = active[np.abs(term[active]) > _EPS * np.abs(total[active])]
        if not active.size:
            break
    return total * np.exp(_log_prefactor(a, x)) / a


def _fraction_q(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by the modified Lentz evaluation of Legendre's continued fraction."""
    b = x + 1 - a
    c = np.full_like(a, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    active = np.arange(a.size)
    for i in range(1, _MAX_ITER):
        ai = -i * (i - a[active])
        bi = b[active] + 2 * i  # every active element is at step i
        dd = ai * d[active] + bi
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = bi + ai / c[active]
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        dd = 1 / dd
        delta = dd * cc
        d[active], c[active] = dd, cc
        h[active] *= delta
        active = active[np.abs(delta - 1) > _EPS]
        if not active.size:
            break
    return np.exp(_log_prefactor(a, x)) * h


def _zeta(n: int) -> float:
    """Riemann's zeta(n), n >= 2: 20 terms plus the Euler-Maclaurin tail (error < 1e-20)."""
    big = 20
    head = sum(k ** -n for k in range(1, big))
    return head + big ** (1 - n) / (n - 1) + 0.5 * big ** -n + n * big ** (-n - 1) / 12 \
        - n * (n + 1) * (n + 2) * big ** (-n - 3) / 720


_ZETA = np.array([_zeta(n) for n in range(2, 42)])
_EULER = 0.5772156649015329


def _lgamma1p(a: np.ndarray) -> np.ndarray:
    """log Gamma(1 + a), accurate for small a (the Taylor series in zeta values)."""
    out = np.empty_like(a)
    small = np.abs(a) <= 0.5
    t = a[small]
    res, power = -_EULER * t, -t
    for n, z in enumerate(_ZETA, start=2):
        power = power * -t
        res = res + z * power / n
    out[small] = res
    out[~small] = _lgamma(a[~small] + 1)
    return out


def _series_q(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) for small x (DLMF 8.7.3), without the cancellation of 1 - P."""
    fac = np.ones_like(a)
    total = np.zeros_like(a)
    active = np.arange(a.size)
    for n in range(1, _MAX_ITER):
        fac[active] *= -x[active] / n
        term = fac[active] / (a[active] + n)
        total[active] += term
        active = active[np.abs(term) > _EPS * np.abs(total[active])]
        if not active.size:
            break
    logx = np.log(x)
    return -np.expm1(a * logx - _lgamma1p(a)) - np.exp(a * logx - _lgamma(a)) * total


def _incomplete_gamma(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    a, x = np.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(all="ignore"):
        lower_value, upper_value = (0.0, 1.0) if not upper else (1.0, 0.0)
        out[(a == 0) & (x > 0)] = upper_value
        out[(x == 0) & (a > 0)] = lower_value
        out[np.isinf(a) & (a > 0) & np.isfinite(x) & (x > 0)] = lower_value
        out[np.isinf(x) & (x > 0) & np.isfinite(a) & (a > 0)] = upper_value
        regular = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        # Small x where Q is the small one: its own series (SciPy's regions).
        small_q = regular & (x <= 1.1) & np.where(x <= 0.5, -0.4 / np.log(x) >= a, x * 1.1 >= a)
        if small_q.any():
            q = _series_q(a[small_q], x[small_q])
            out[small_q] = q if upper else 1 - q
        regular &= ~small_q
        use_series = regular & (x < a + 1)
        use_fraction = regular & ~use_series
        if use_series.any():
            p = _series_p(a[use_series], x[use_series])
            out[use_series] = 1 - p if upper else p
        if use_fraction.any():
            q = _fraction_q(a[use_fraction], x[use_fraction])
            out[use_fraction] = q if upper else 1 - q
    return np.clip(out, 0, 1)


class Igamma(Op):
    node_name = "IgammaBackward0"
    saves = (0, 1)
    broadcasts = True
    upper = False
    name = "igamma"

    @classmethod
    def forward(cls, ctx, a, x):
        return _incomplete_gamma(a, x, cls.upper).astype(np.result_type(a, x), copy=False)

    @classmethod
    def backward(cls, ctx, g):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{cls.name}: input' is not "
                                      "implemented.")
        d = ((a - 1) * x.log() - x - a.lgamma()).exp()
        return None, (-g * d if cls.upper else g * d)


class Igammac(Igamma):
    node_name = "IgammacBackward0"
    upper = True
    name = "igammac"


def _args(name: str, input: Tensor, other: Tensor):
    need_tensor(name, other)
    a, x = binary_args(input, other, float_result=True)
    if not input.dtype.is_floating_point and not other.dtype.is_floating_point:
        raise not_for(f"{name}_cpu", input.dtype)
    return a, x


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    return Igamma.apply(*_args("igamma", input, other))


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P."""
    return Igammac.apply(*_args("igammac", input, other))


def _igamma_(self: Tensor, other: Tensor) -> Tensor:
    from ember.ops.inplace import apply_inplace

    return apply_inplace(self, igamma, other)


def _igammac_(self: Tensor, other: Tensor) -> Tensor:
    from ember.ops.inplace import apply_inplace

    return apply_inplace(self, igammac, other)


FUNCTIONS = {"igamma": igamma, "igammac": igammac}
METHODS = {"igamma": igamma, "igammac": igammac, "igamma_": _igamma_, "igammac_": _igammac_}
