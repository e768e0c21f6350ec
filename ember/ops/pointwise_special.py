"""Special functions in vectorised NumPy (no SciPy): erf, erfc, erfinv, lgamma, digamma,
polygamma.

The arrays are computed in ``ember.ops._erf`` (erf, erfc, erfinv) and ``ember.ops._gamma``
(lgamma, digamma, polygamma).
"""

from __future__ import annotations

import math

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops import _erf, _gamma
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


# --- gamma family ----------------------------------------------------------------------


class Lgamma(Op):
    node_name = "LgammaBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return _gamma.lgamma(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * digamma(x)


class Digamma(Op):
    node_name = "DigammaBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return _gamma.digamma(x)

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
        return _gamma.polygamma(n, x)

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
