"""Transcendental elementwise functions: exp2/log2/..., sqrt, trig and hyperbolic functions.

Integer and bool inputs compute in the default float dtype. Backward formulas follow torch's
derivatives.yaml, written with Tensor ops so they can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import float_arg

LN2, LN10 = math.log(2.0), math.log(10.0)


def _quiet(ufunc):
    def forward(ctx, x):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return ufunc(x)
    return staticmethod(forward)


class Exp2(Op):
    node_name = "Exp2Backward0"
    saves_output = True
    forward = _quiet(np.exp2)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out * LN2


class Expm1(Op):
    node_name = "Expm1Backward0"
    saves_output = True
    forward = _quiet(np.expm1)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out + 1)


class Log2(Op):
    node_name = "Log2Backward0"
    saves = (0,)
    forward = _quiet(np.log2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (x * LN2)


class Log10(Op):
    node_name = "Log10Backward0"
    saves = (0,)
    forward = _quiet(np.log10)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (x * LN10)


class Log1p(Op):
    node_name = "Log1PBackward0"
    saves = (0,)
    forward = _quiet(np.log1p)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (x + 1)


class Sqrt(Op):
    node_name = "SqrtBackward0"
    saves_output = True
    forward = _quiet(np.sqrt)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g / (out * 2)


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


class Rsqrt(Op):
    node_name = "RsqrtBackward0"
    saves_output = True
    forward = _quiet(_rsqrt)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out ** 3 * -0.5


class Reciprocal(Op):
    node_name = "ReciprocalBackward0"
    saves_output = True
    forward = _quiet(np.reciprocal)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return -g * (out * out)


class Sin(Op):
    node_name = "SinBackward0"
    saves = (0,)
    forward = _quiet(np.sin)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class Cos(Op):
    node_name = "CosBackward0"
    saves = (0,)
    forward = _quiet(np.cos)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * -x.sin()


class Tan(Op):
    node_name = "TanBackward0"
    saves_output = True
    forward = _quiet(np.tan)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out * out + 1)


class Asin(Op):
    node_name = "AsinBackward0"
    saves = (0,)
    forward = _quiet(np.arcsin)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - x * x).rsqrt()


class Acos(Op):
    node_name = "AcosBackward0"
    saves = (0,)
    forward = _quiet(np.arccos)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * (1 - x * x).rsqrt()


class Atan(Op):
    node_name = "AtanBackward0"
    saves = (0,)
    forward = _quiet(np.arctan)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (x * x + 1)


class Sinh(Op):
    node_name = "SinhBackward0"
    saves = (0,)
    forward = _quiet(np.sinh)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cosh()


class Cosh(Op):
    node_name = "CoshBackward0"
    saves = (0,)
    forward = _quiet(np.cosh)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sinh()


class Asinh(Op):
    node_name = "AsinhBackward0"
    saves = (0,)
    forward = _quiet(np.arcsinh)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x * x + 1).rsqrt()


class Acosh(Op):
    node_name = "AcoshBackward0"
    saves = (0,)
    forward = _quiet(np.arccosh)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x * x - 1).rsqrt()


class Atanh(Op):
    node_name = "AtanhBackward0"
    saves = (0,)
    forward = _quiet(np.arctanh)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1 - x * x)


class Deg2Rad(Op):
    node_name = "Deg2RadBackward0"
    forward = _quiet(np.deg2rad)

    @staticmethod
    def backward(ctx, g):
        return g * (math.pi / 180)


class Rad2Deg(Op):
    node_name = "Rad2DegBackward0"
    forward = _quiet(np.rad2deg)

    @staticmethod
    def backward(ctx, g):
        return g * (180 / math.pi)


class Sinc(Op):
    """``sin(pi x) / (pi x)``, 1 at 0."""

    node_name = "SincBackward0"
    saves = (0,)
    forward = _quiet(np.sinc)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        px = x * math.pi
        d = ((px * px.cos() - px.sin()) / (px * x)).nan_to_num(0.0, 0.0, 0.0)
        return g * d


class Logit(Op):
    node_name = "LogitBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, eps=None):
        ctx.eps = eps
        if eps is not None:
            x = np.clip(x, np.asarray(eps, x.dtype), np.asarray(1 - eps, x.dtype))
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


def _unary(op, name: str):
    def fn(x: Tensor) -> Tensor:
        return op.apply(float_arg(x))
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}``; integer inputs give the default float dtype."
    return fn


exp2 = _unary(Exp2, "exp2")
expm1 = _unary(Expm1, "expm1")
log2 = _unary(Log2, "log2")
log10 = _unary(Log10, "log10")
log1p = _unary(Log1p, "log1p")
sqrt = _unary(Sqrt, "sqrt")
rsqrt = _unary(Rsqrt, "rsqrt")
reciprocal = _unary(Reciprocal, "reciprocal")
sin = _unary(Sin, "sin")
cos = _unary(Cos, "cos")
tan = _unary(Tan, "tan")
asin = _unary(Asin, "asin")
acos = _unary(Acos, "acos")
atan = _unary(Atan, "atan")
sinh = _unary(Sinh, "sinh")
cosh = _unary(Cosh, "cosh")
asinh = _unary(Asinh, "asinh")
acosh = _unary(Acosh, "acosh")
atanh = _unary(Atanh, "atanh")
deg2rad = _unary(Deg2Rad, "deg2rad")
rad2deg = _unary(Rad2Deg, "rad2deg")
sinc = _unary(Sinc, "sinc")

_NAMES = {
    "exp2": exp2, "expm1": expm1, "log2": log2, "log10": log10, "log1p": log1p, "sqrt": sqrt,
    "rsqrt": rsqrt, "reciprocal": reciprocal, "sin": sin, "cos": cos, "tan": tan, "asin": asin,
    "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan, "sinh": sinh,
    "cosh": cosh, "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh,
    "atanh": atanh, "arctanh": atanh, "deg2rad": deg2rad, "rad2deg": rad2deg, "sinc": sinc,
    "logit": logit,
}
METHODS = dict(_NAMES)
FUNCTIONS = dict(_NAMES)
