"""Powers: ``tensor ** scalar`` (PowBackward0), ``tensor ** tensor`` (PowBackward1),
``scalar ** tensor`` (PowBackward2), ``float_power`` and ``square``."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._creation import zeros_like
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import binary_args, cast, check_int, scalar
from ember.ops.pointwise import where


def _int_pow(a, b):
    """Integer power with torch's rule for negative exponents (1, -1 stay units, else 0)."""
    neg = b < 0
    if not np.any(neg):
        return np.power(a, b)
    r = np.power(a, np.where(neg, 0, b))  # (|int64 min| is not an int64)
    unit = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(neg, unit, r).astype(r.dtype)


def _power(a, b):
    """``a ** b`` of two arrays of one dtype: torch's integer rule, or a silent float power."""
    if a.dtype.kind not in "fc":
        return _int_pow(a, b)
    with np.errstate(all="ignore"):
        return np.power(a, b)


class Pow(Op):
    """tensor ** tensor; the scalar-exponent and scalar-base forms are separate ops."""

    node_name = "PowBackward1"
    broadcasts = True
    saves = (0, 1)
    saves_output = True

    @staticmethod
    def forward(ctx, a, b):
        return _power(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        with np.errstate(all="ignore"):  # 0 * inf in the branch that where() discards
            ga = where(b == 0, zero, g * b * a ** (b - 1)) if need[0] else None
            gb = g * where((a == 0) & (b.real >= 0), zero, out * a.log()) if need[1] else None
        return ga, gb


class PowScalar(Op):
    node_name = "PowBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.exponent = exponent
        if exponent == 2:
            return a * a
        if a.dtype.kind not in "fc":
            return np.power(a, exponent).astype(a.dtype, copy=False)
        with np.errstate(all="ignore"):
            return np.power(a, scalar(exponent, a.dtype))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:  # torch: zeros_like(self), with no history
            return zeros_like(a)
        return g * e * (a if e == 2 else a ** (e - 1))


class RPowScalar(Op):
    node_name = "PowBackward2"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, b, base):
        ctx.base = base
        return _power(scalar(base, b.dtype), b)

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        if ctx.base == 0:
            with np.errstate(all="ignore"):
                return g * where(b >= 0, g.new_zeros(()), out * float("-inf"))
        return g * out * float(np.log(ctx.base))


def pow(a, b) -> Tensor:
    """``a ** b``; either side may be a Python number."""
    if not isinstance(a, Tensor):
        if not isinstance(b, Tensor):
            raise TypeError(f"pow() received an invalid combination of arguments - got "
                            f"({type(a).__name__}, {type(b).__name__})")
        return rpow(b, a)
    if not isinstance(b, Tensor):
        check_int(b)
        dt = _dtype.result_type((a,), (b,))
        if dt is _dtype.bool_:  # bool ** True is the tensor, bool ** False is all True
            return Tensor._make(a._data.copy() if b else np.ones_like(a._data))
        if dt._kind < 2 and b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if dt._kind < 2 and b > 0x7FFFFFFFFFFFFFFF:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return PowScalar.apply(cast(a, dt), exponent=b)
    a, b = binary_args(a, b)
    _check_bool(a.dtype)
    return Pow.apply(a, b)


def _check_bool(dt: _dtype.dtype) -> None:
    if dt is _dtype.bool_:
        raise NotImplementedError('"pow" not implemented for \'Bool\'')


def rpow(b: Tensor, base) -> Tensor:
    """``base ** b`` for a Python-number base."""
    dt = _dtype.result_type((b,), (base,))
    _check_bool(dt)
    return RPowScalar.apply(cast(b, dt), base=base)


def float_power(a, b) -> Tensor:
    """``pow`` computed in float64, as ``torch.float_power``."""
    f64 = _dtype.float64
    a = cast(a, f64) if isinstance(a, Tensor) else float(a)
    b = cast(b, f64) if isinstance(b, Tensor) else float(b)
    return pow(a, b)


def square(x: Tensor) -> Tensor:
    """``x ** 2`` (recorded as PowBackward0, as in torch)."""
    return pow(x, 2)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Pow, PowScalar, RPowScalar)

METHODS = {"pow": pow, "float_power": float_power, "square": square, "__pow__": pow,
           "__rpow__": rpow}
FUNCTIONS = {"pow": pow, "float_power": float_power, "square": square}
