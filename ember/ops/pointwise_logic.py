"""Comparisons, bitwise and logical ops, and the floating-point classifiers (isnan, ...).

None is differentiable: results are bool or integer tensors.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._backend import xp_of
from ember._tensor import Tensor
from ember.ops._promote import binary_args
from ember.ops.pointwise import _lhs_tensor
from ember.ops.pointwise_more import _CNAME, _r, not_for

_OPERAND = (Tensor, int, float, bool, np.number, np.bool_, np.ndarray)


def _compare(ufunc, name: str):
    def op(a, b) -> Tensor:
        a, b = _lhs_tensor(a, b)
        a, b = binary_args(a, b)
        return Tensor._make(ufunc(a._data, b._data))

    def dunder(a, b):
        # Unknown operands (None, strings, ...) fall back to Python's default comparison.
        if not isinstance(b, _OPERAND):
            return NotImplemented
        return op(a, b)
    op.__name__ = name
    return op, dunder


eq, _eq = _compare(np.equal, "eq")
ne, _ne = _compare(np.not_equal, "ne")
lt, _lt = _compare(np.less, "lt")
le, _le = _compare(np.less_equal, "le")
gt, _gt = _compare(np.greater, "gt")
ge, _ge = _compare(np.greater_equal, "ge")


def _bitwise(ufunc, kernel: str, name: str, bools: bool = True):
    """``bools``: whether torch has the kernel for bool (and/or/xor do, shifts do not; NumPy
    would shift bools as int8)."""
    def fn(a, b) -> Tensor:
        a, b = _lhs_tensor(a, b)
        a, b = binary_args(a, b)
        if a.dtype.is_floating_point or (not bools and a.dtype is _dtype.bool_):
            raise not_for(kernel, a.dtype)
        return Tensor._make(ufunc(a._data, b._data))
    fn.__name__ = name
    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and_cpu", "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or_cpu", "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor_cpu", "bitwise_xor")
bitwise_left_shift = _bitwise(np.left_shift, "lshift_cpu", "bitwise_left_shift", bools=False)
bitwise_right_shift = _bitwise(np.right_shift, "rshift_cpu", "bitwise_right_shift", bools=False)


def bitwise_not(x: Tensor) -> Tensor:
    """``~x`` for bool and integer tensors."""
    if x.dtype.is_floating_point:
        raise not_for("bitwise_not_cpu", x.dtype)
    return Tensor._make(np.invert(x._data))


def _invert(x: Tensor) -> Tensor:
    if x.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(x)


def _logical(ufunc, name: str):
    def fn(a: Tensor, other: Tensor) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        return Tensor._make(ufunc(a._data, other._data))
    fn.__name__ = name
    return fn


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


def logical_not(x: Tensor) -> Tensor:
    """Elementwise ``not``, as a bool tensor."""
    return Tensor._make(np.logical_not(x._data))


def _classifier(ufunc, int_value: bool, name: str):
    def fn(x: Tensor) -> Tensor:
        if not x.dtype.is_floating_point:
            return Tensor._make(np.full(x._data.shape, int_value))
        return Tensor._make(ufunc(x._data))
    fn.__name__ = name
    return fn


isnan = _classifier(np.isnan, False, "isnan")
isinf = _classifier(np.isinf, False, "isinf")
isposinf = _classifier(np.isposinf, False, "isposinf")
isneginf = _classifier(np.isneginf, False, "isneginf")
isfinite = _classifier(np.isfinite, True, "isfinite")


def isreal(x: Tensor) -> Tensor:
    """All True: ember has no complex dtypes."""
    return Tensor._make(xp_of(x._data).ones(x._data.shape, dtype=np.bool_))


def signbit(x: Tensor) -> Tensor:
    """True where the sign bit is set (including -0.0)."""
    if x.dtype is _dtype.bool_:
        return Tensor._make(np.zeros(x._data.shape, dtype=np.bool_))
    return Tensor._make(np.signbit(x._data))


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|``, elementwise."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_CNAME[input.dtype.name]} did not match "
                           f"{_CNAME[other.dtype.name]}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {v}")
    binary_args(input, other)  # torch's broadcast error
    a, b = input._data, other._data
    close = a == b
    inexact = a.dtype.kind in "fcV"  # "V": bfloat16 from ml_dtypes
    if equal_nan and inexact:
        close |= np.isnan(a) & np.isnan(b)
    if rtol == 0 and atol == 0:  # exact, even for int64 beyond 2**53
        return Tensor._make(close)
    if not inexact:
        dt = _dtype.get_default_dtype().np
        a, b = a.astype(dt), b.astype(dt)
    # torch rounds each step to the dtype; half types compute in float32 (the scalars too)
    work = np.float32 if a.dtype.itemsize == 2 else a.dtype.type
    with np.errstate(invalid="ignore", over="ignore"):
        actual = np.abs(a - b)  # real, also for complex inputs
        err = actual.dtype
        scaled = np.abs((work(rtol) * b.astype(work)).astype(a.dtype))
        allowed = (np.float32(atol) + scaled.astype(np.float32) if err.itemsize == 2
                   else err.type(atol) + scaled).astype(err)
        close |= np.isfinite(actual) & (actual <= allowed)
    return Tensor._make(close)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (see ``isclose``)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements (NaN is never equal)."""
    if input.shape != other.shape:
        return False
    a, b = binary_args(input, other)
    return bool(np.array_equal(a._data, b._data))


_NAMES = {
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt, "less": lt,
    "greater_equal": ge, "less_equal": le, "not_equal": ne,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "bitwise_not": bitwise_not, "bitwise_left_shift": bitwise_left_shift,
    "bitwise_right_shift": bitwise_right_shift, "logical_and": logical_and,
    "logical_or": logical_or, "logical_xor": logical_xor, "logical_not": logical_not,
    "isnan": isnan, "isinf": isinf, "isposinf": isposinf, "isneginf": isneginf,
    "isfinite": isfinite, "isreal": isreal, "signbit": signbit, "isclose": isclose,
    "allclose": allclose, "equal": equal,
}
METHODS = dict(
    _NAMES, __and__=bitwise_and, __rand__=_r(bitwise_and), __or__=bitwise_or,
    __ror__=_r(bitwise_or), __xor__=bitwise_xor, __rxor__=_r(bitwise_xor), __invert__=_invert,
    __lshift__=bitwise_left_shift, __rlshift__=_r(bitwise_left_shift),
    __rshift__=bitwise_right_shift, __rrshift__=_r(bitwise_right_shift), __eq__=_eq, __ne__=_ne,
    __lt__=_lt, __le__=_le, __gt__=_gt, __ge__=_ge,
)
FUNCTIONS = dict(_NAMES)
