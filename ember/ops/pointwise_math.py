"""Transcendental elementwise functions: exp2/log2/..., sqrt, trig and hyperbolic functions.

Integer and bool inputs compute in the default float dtype. Backward formulas follow torch's
derivatives.yaml, written with Tensor ops so they can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._common import elementwise_op, float_unary, quiet
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import float_arg, scalar

LN2, LN10 = math.log(2.0), math.log(10.0)
SELF, RESULT = ("self",), ("result",)  # what a backward formula needs saved


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _sinc_grad(g, x):
    # d/dx sin(pi x) / (pi x); the 0/0 at x = 0 is a gradient of 0.
    px = x * math.pi
    return g * ((px * px.cos() - px.sin()) / (px * x)).nan_to_num(0.0, 0.0, 0.0)


# Each op: its class name (grad_fn <Name>Backward0), the NumPy forward, the gradient formula
# (g = dL/d(out), saved tensors) -> dL/dx, and which of input ("self") and output ("result")
# the formula reads.
Exp2 = elementwise_op("Exp2", quiet(np.exp2), lambda g, out: g * out * LN2, saves=RESULT)
Expm1 = elementwise_op("Expm1", quiet(np.expm1), lambda g, out: g * (out + 1), saves=RESULT)
Log2 = elementwise_op("Log2", quiet(np.log2), lambda g, x: g / (x * LN2), saves=SELF)
Log10 = elementwise_op("Log10", quiet(np.log10), lambda g, x: g / (x * LN10), saves=SELF)
Log1p = elementwise_op("Log1p", quiet(np.log1p), lambda g, x: g / (x + 1), saves=SELF,
                       node_name="Log1PBackward0")
Sqrt = elementwise_op("Sqrt", quiet(np.sqrt), lambda g, out: g / (out * 2), saves=RESULT)
Rsqrt = elementwise_op("Rsqrt", quiet(_rsqrt), lambda g, out: g * out ** 3 * -0.5,
                       saves=RESULT)
Reciprocal = elementwise_op("Reciprocal", quiet(np.reciprocal),
                            lambda g, out: -g * (out * out), saves=RESULT)
Sin = elementwise_op("Sin", quiet(np.sin), lambda g, x: g * x.cos(), saves=SELF)
Cos = elementwise_op("Cos", quiet(np.cos), lambda g, x: g * -x.sin(), saves=SELF)
Tan = elementwise_op("Tan", quiet(np.tan), lambda g, out: g * (out * out + 1), saves=RESULT)
Asin = elementwise_op("Asin", quiet(np.arcsin), lambda g, x: g * (1 - x * x).rsqrt(),
                      saves=SELF)
Acos = elementwise_op("Acos", quiet(np.arccos), lambda g, x: -g * (1 - x * x).rsqrt(),
                      saves=SELF)
Atan = elementwise_op("Atan", quiet(np.arctan), lambda g, x: g / (x * x + 1), saves=SELF)
Sinh = elementwise_op("Sinh", quiet(np.sinh), lambda g, x: g * x.cosh(), saves=SELF)
Cosh = elementwise_op("Cosh", quiet(np.cosh), lambda g, x: g * x.sinh(), saves=SELF)
Asinh = elementwise_op("Asinh", quiet(np.arcsinh), lambda g, x: g * (x * x + 1).rsqrt(),
                       saves=SELF)
Acosh = elementwise_op("Acosh", quiet(np.arccosh), lambda g, x: g * (x * x - 1).rsqrt(),
                       saves=SELF)
Atanh = elementwise_op("Atanh", quiet(np.arctanh), lambda g, x: g / (1 - x * x), saves=SELF)
Deg2Rad = elementwise_op("Deg2Rad", quiet(np.deg2rad), lambda g: g * (math.pi / 180))
Rad2Deg = elementwise_op("Rad2Deg", quiet(np.rad2deg), lambda g: g * (180 / math.pi))
Sinc = elementwise_op("Sinc", quiet(np.sinc), _sinc_grad, saves=SELF)  # sin(pi x)/(pi x), 1 at 0


class Logit(Op):
    node_name = "LogitBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, eps=None):
        ctx.eps = eps
        if eps is not None:
            x = np.clip(x, scalar(eps, x.dtype), scalar(1 - eps, x.dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x / (1 - x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = g / (x * (1 - x))
        if ctx.eps is None:
            return d
        return d.where((x >= ctx.eps) & (x <= 1 - ctx.eps), g.new_zeros(()))


def logit(x: Tensor, eps: float | None = None) -> Tensor:
    """``log(x / (1 - x))``; with ``eps``, x is first clamped to ``[eps, 1 - eps]``."""
    return Logit.apply(float_arg(x), eps=eps)


def _inplace_variant(op, name: str):
    """torch records asinh_/acosh_/atanh_ as ``*Backward1``, whose backward is missing."""
    def backward(ctx, g):
        raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not "
                                  "implemented.")
    return type(op.__name__ + "Inplace", (op,), {
        "node_name": op.node_name.replace("0", "1"), "saves": (),
        "backward": staticmethod(backward), "__module__": __name__})


AsinhInplace = _inplace_variant(Asinh, "asinh")
AcoshInplace = _inplace_variant(Acosh, "acosh")
AtanhInplace = _inplace_variant(Atanh, "atanh")


exp2 = float_unary(Exp2, "exp2")
expm1 = float_unary(Expm1, "expm1")
log2 = float_unary(Log2, "log2")
log10 = float_unary(Log10, "log10")
log1p = float_unary(Log1p, "log1p")
sqrt = float_unary(Sqrt, "sqrt")
rsqrt = float_unary(Rsqrt, "rsqrt")
reciprocal = float_unary(Reciprocal, "reciprocal")
sin = float_unary(Sin, "sin")
cos = float_unary(Cos, "cos")
tan = float_unary(Tan, "tan")
asin = float_unary(Asin, "asin")
acos = float_unary(Acos, "acos")
atan = float_unary(Atan, "atan")
sinh = float_unary(Sinh, "sinh")
cosh = float_unary(Cosh, "cosh")
asinh = float_unary(Asinh, "asinh")
acosh = float_unary(Acosh, "acosh")
atanh = float_unary(Atanh, "atanh")
deg2rad = float_unary(Deg2Rad, "deg2rad")
rad2deg = float_unary(Rad2Deg, "rad2deg")
sinc = float_unary(Sinc, "sinc")

_NAMES = {
    "exp2": exp2, "expm1": expm1, "log2": log2, "log10": log10, "log1p": log1p, "sqrt": sqrt,
    "rsqrt": rsqrt, "reciprocal": reciprocal, "sin": sin, "cos": cos, "tan": tan, "asin": asin,
    "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan, "sinh": sinh,
    "cosh": cosh, "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh,
    "atanh": atanh, "arctanh": atanh, "deg2rad": deg2rad, "rad2deg": rad2deg, "sinc": sinc,
    "logit": logit,
}
# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Exp2, Expm1, Log2, Log10, Log1p, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tan,
            Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh)

METHODS = dict(_NAMES)
FUNCTIONS = dict(_NAMES)
