"""Normal-distribution and entropy special functions behind ``ember.special``: ndtri,
log_ndtr, erfcx, entr, xlog1py. Each is a primitive with torch's node name; the first three are
computed in ``ember.ops._erf``."""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.ops import _erf
from ember.ops._common import elementwise_op, float_unary, select
from ember.ops._promote import binary_args, float_arg

_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _entr_array(x: np.ndarray) -> np.ndarray:
    """-x log(x) for x > 0 (and NaN), 0 at 0, -inf below."""
    with np.errstate(all="ignore"):
        out = np.log(x, out=np.empty_like(x))
        out *= x
        np.negative(out, out=out)
    return select(~(x <= 0), out, select(x == 0, 0.0, -np.inf, x.dtype), x.dtype)


def _xlog1py_array(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log1p(y))
    return out.astype(x.dtype, copy=False)


# torch names these nodes Special<Name>Backward0: they live in torch.special.
Ndtri = elementwise_op("Ndtri", _erf.ndtri,
                       lambda g, out: g * (out * out * 0.5).exp() * _SQRT_2PI,
                       saves=("result",), node_name="SpecialNdtriBackward0")
LogNdtr = elementwise_op("LogNdtr", _erf.log_ndtr,
                         lambda g, x, out: g * (-x * x * 0.5 - out).exp() / _SQRT_2PI,
                         saves=("self", "result"), node_name="SpecialLogNdtrBackward0")
Erfcx = elementwise_op("Erfcx", _erf.erfcx,
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
