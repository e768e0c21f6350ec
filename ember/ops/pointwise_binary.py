"""Binary and ternary float functions: atan2, hypot, lerp, addcmul, addcdiv, xlogy,
logaddexp, copysign, and nan_to_num."""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype
from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._common import elementwise_op, quiet
from ember.ops._promote import binary_args, cast, scalar
from ember.ops.pointwise import NotDifferentiable, where
from ember.ops.pointwise_more import need_tensor, not_for, tensor_pair_fn

SELF_OTHER = ("self", "other")  # what the gradient formulas below read, in this order


def _recip_norm2(a: Tensor, b: Tensor) -> Tensor:
    """``1 / (a^2 + b^2)``, 0 where that is 1 / 0 (torch's atan2_backward: no NaN at 0, 0)."""
    d = a * a + b * b
    return d.reciprocal().masked_fill(d == 0, 0)


def _float_pair(a: Tensor, b: Tensor, kernel: str | None = None):
    """Promote to a float dtype; ``kernel`` names a kernel torch lacks for complex."""
    a, b = binary_args(a, b, float_result=True)
    if kernel and a._data.dtype.kind == "c":
        from ember.ops.pointwise_more import not_for

        raise not_for(kernel, a.dtype)
    return a, b


# Two-input ops: the NumPy forward, then d/d(self) and d/d(other) of the gradient g.
Atan2 = elementwise_op("Atan2", np.arctan2, lambda g, a, b: g * b * _recip_norm2(a, b),
                       lambda g, a, b: g * -a * _recip_norm2(a, b), saves=SELF_OTHER)
Hypot = elementwise_op("Hypot", np.hypot, lambda g, a, b, out: g * a / out,
                       lambda g, a, b, out: g * b / out, saves=("self", "other", "result"))
Logaddexp = elementwise_op("Logaddexp", np.logaddexp,
                           lambda g, a, b: g / ((b - a).exp() + 1),
                           lambda g, a, b: g / ((a - b).exp() + 1), saves=SELF_OTHER)
Logaddexp2 = elementwise_op("Logaddexp2", np.logaddexp2,
                            lambda g, a, b: g / ((b - a).exp2() + 1),
                            lambda g, a, b: g / ((a - b).exp2() + 1), saves=SELF_OTHER)


def atan2(a: Tensor, other: Tensor) -> Tensor:
    """Angle of the point (other, a), in (-pi, pi]."""
    need_tensor("atan2", other)
    return Atan2.apply(*_float_pair(a, other, "atan2_cpu"))


hypot = tensor_pair_fn(Hypot, "hypot", float_only=True,
                       doc="``sqrt(a**2 + other**2)`` without overflow.")
logaddexp = tensor_pair_fn(Logaddexp, "logaddexp", float_only=True)
logaddexp2 = tensor_pair_fn(Logaddexp2, "logaddexp2", float_only=True)


def _lerp_values(a, b, w):
    # torch's formula: exact at both ends (weight 0 gives start, weight 1 gives end).
    d = b - a
    return np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w)).astype(a.dtype, copy=False)


class Lerp(Op):
    node_name = "LerpBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, weight=0.5):
        ctx.weight = weight
        return _lerp_values(a, b, scalar(weight, a.dtype))

    @staticmethod
    def backward(ctx, g):
        need, w = ctx.needs_input_grad, ctx.weight
        return (g * (1 - w) if need[0] else None), (g * w if need[1] else None)


class LerpT(Op):
    node_name = "LerpBackward1"
    broadcasts = True
    saves = (0, 1, 2)
    save_for = ((2,), (2,), None)

    @staticmethod
    def forward(ctx, a, b, w):
        return _lerp_values(a, b, w)

    @staticmethod
    def backward(ctx, g):
        a, b, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g * (1 - w) if need[0] else None), (g * w if need[1] else None), \
            (g * (b - a) if need[2] else None)


LN2 = math.log(2.0)
_CTYPE = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short",
          "int32": "int", "int64": "long int", "float16": "c10::Half", "float32": "float",
          "float64": "double", "bfloat16": "c10::BFloat16"}


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)``; ``weight`` is a number or a tensor."""
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp() received an invalid combination of arguments - got (Tensor, "
                        f"{type(end).__name__}, {type(weight).__name__})")
    want = _CTYPE[input.dtype.name]
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {want} for `end` but got dtype "
                           f"{_CTYPE[end.dtype.name]}")
    is_t = isinstance(weight, Tensor)
    if is_t and weight.dtype is not input.dtype and weight.ndim:  # 0-d weights of any dtype
        raise RuntimeError(f"expected dtype {want} for `weight` but got dtype "
                           f"{_CTYPE[weight.dtype.name]}")
    # A 0-d weight takes part in type promotion (lerp(int, int, tensor(0.5)) is float).
    dt = _dtype.result_type((input, end, weight)) if is_t else input.dtype
    if not dt.is_floating_point:
        raise not_for("lerp_kernel_tensor" if is_t else "lerp_kernel_scalar", dt)
    binary_args(input, end)
    input, end = cast(input, dt), cast(end, dt)
    if is_t:
        binary_args(input, weight)
        return LerpT.apply(input, end, cast(weight, dt))
    return Lerp.apply(input, end, weight=weight)


class Addcmul(Op):
    node_name = "AddcmulBackward0"
    broadcasts = True
    saves = (1, 2)
    save_for = ((2,), (1,))

    @staticmethod
    def forward(ctx, x, t1, t2, value=1):
        ctx.value = value
        return x + xp_of(x).asarray(value).astype(x.dtype) * t1 * t2

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        need, v = ctx.needs_input_grad, ctx.value
        return (g if need[0] else None), (g * t2 * v if need[1] else None), \
            (g * t1 * v if need[2] else None)


class Addcdiv(Op):
    node_name = "AddcdivBackward0"
    broadcasts = True
    saves = (1, 2)
    save_for = ((2,), None)

    @staticmethod
    def forward(ctx, x, t1, t2, value=1):
        ctx.value = value
        with np.errstate(divide="ignore", invalid="ignore"):
            return x + scalar(value, x.dtype) * t1 / t2

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        need, v = ctx.needs_input_grad, ctx.value
        return (g if need[0] else None), (g * v / t2 if need[1] else None), \
            (-g * v * t1 / (t2 * t2) if need[2] else None)


def _three(x: Tensor, t1: Tensor, t2: Tensor):
    for t in (t1, t2):
        binary_args(x, t)  # torch's broadcast errors
    binary_args(t1, t2)
    dt = _dtype.result_type((x, t1, t2))
    return cast(x, dt), cast(t1, dt), cast(t2, dt)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    return Addcmul.apply(*_three(input, tensor1, tensor2), value=value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (float tensors only, as in torch)."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return Addcdiv.apply(*_three(input, tensor1, tensor2), value=value)


def _xlogy_values(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y)).astype(x.dtype, copy=False)


Xlogy = elementwise_op("Xlogy", _xlogy_values,
                       lambda g, x, y: g * xlogy((x != 0).to(g.dtype), y),
                       lambda g, x, y: g * x / y, saves=SELF_OTHER)


class XlogyScalarSelf(Op):
    """xlogy(number, tensor): only the tensor has an edge."""

    node_name = "XlogyBackward1"
    saves = (0,)

    @staticmethod
    def forward(ctx, y, x=0.0):
        ctx.x = x
        return _xlogy_values(scalar(x, y.dtype), y)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * ctx.x / y


class XlogyScalarOther(Op):
    """xlogy(tensor, number): only the tensor has an edge."""

    node_name = "XlogyBackward2"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, y=1.0):
        ctx.log_y = float(np.log(y)) if y > 0 else float("nan") if y < 0 else float("-inf")
        return _xlogy_values(x, scalar(y, x.dtype))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x != 0).to(g.dtype) * ctx.log_y


def xlogy(x, y) -> Tensor:
    """``x * log(y)``, defined as 0 where ``x == 0`` (unless ``y`` is NaN)."""
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        return Xlogy.apply(*_float_pair(x, y))
    if isinstance(x, Tensor):
        x2, _ = _float_pair(x, y)
        return XlogyScalarOther.apply(x2, y=y)
    y2, _ = _float_pair(y, x)
    return XlogyScalarSelf.apply(y2, x=x)


def _copysign_grad(g: Tensor, a: Tensor, out: Tensor) -> Tensor:
    """d copysign(a, b) / da is sign(out / a): +-1, and 0 where a is 0."""
    return g * where(a == 0, g.new_zeros(()), out / a)


def _copysign_scalar(a, other=1.0):
    return np.copysign(a, scalar(other, a.dtype))


Copysign = elementwise_op("Copysign", np.copysign, _copysign_grad, lambda g, a, out: g * 0,
                          saves=("self", "result"))
CopysignScalar = elementwise_op("CopysignScalar", _copysign_scalar, _copysign_grad,
                                saves=("self", "result"), node_name="CopysignBackward1")


def copysign(a: Tensor, other) -> Tensor:
    """``|a|`` with the sign of ``other``."""
    if isinstance(other, Tensor):
        return Copysign.apply(*_float_pair(a, other))
    a, _ = _float_pair(a, float(other))
    return CopysignScalar.apply(a, other=float(other))


NanToNum = elementwise_op("NanToNum", np.nan_to_num,
                          lambda g, x: where(x.isfinite(), g, g.new_zeros(())), saves=("self",))


def nan_to_num(x: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replace NaN, +inf and -inf with ``nan``, ``posinf`` (default: dtype max), ``neginf``."""
    if not x.dtype.is_floating_point:
        return Tensor._make(x._data.copy())
    return NanToNum.apply(x, nan=nan, posinf=posinf, neginf=neginf)


def _ldexp(x, e):
    return x * np.exp2(e)


Ldexp = elementwise_op("Ldexp", quiet(_ldexp), lambda g, e, out: g * e.exp2(),
                       lambda g, e, out: g * out * LN2, saves=("other", "result"))


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other``."""
    need_tensor("ldexp", other)
    return Ldexp.apply(*_float_pair(input, other))


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, ``values`` where input == 0, 1 where input > 0 (no gradient)."""
    need_tensor("heaviside", values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    binary_args(input, values)
    return NotDifferentiable.apply(input, values, fn=_heaviside, name="heaviside")


def _heaviside(x, v):
    return np.heaviside(x, v).astype(x.dtype, copy=False)


_NAMES = {
    "atan2": atan2, "arctan2": atan2, "hypot": hypot, "lerp": lerp, "addcmul": addcmul,
    "addcdiv": addcdiv, "xlogy": xlogy, "logaddexp": logaddexp, "logaddexp2": logaddexp2,
    "copysign": copysign, "nan_to_num": nan_to_num, "ldexp": ldexp, "heaviside": heaviside,
}
METHODS = dict(_NAMES)
FUNCTIONS = dict(_NAMES)
