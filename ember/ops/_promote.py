"""Turning op arguments into tensors of torch's result dtype (Python scalars are weak)."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._dtype import check_int
from ember._tensor import WRAPPED_NUMBER, Tensor

_NUMBER = (int, float, bool, np.number, np.bool_)


def const(value, dt: _dtype.dtype) -> Tensor:
    """A 0-d constant tensor (no grad) holding a Python scalar in dtype ``dt``: torch's
    wrapped number."""
    t = Tensor._make(_wrapped(value, dt.np))
    t._aux = WRAPPED_NUMBER
    return t


def _wrapped(value, np_dtype) -> np.ndarray:
    """``value`` as a 0-d array; an int outside the dtype's range wraps around, as in torch."""
    check_int(value)
    try:
        return np.array(value, dtype=np_dtype)
    except OverflowError:
        return np.array(value).astype(np_dtype)


def scalar(value, np_dtype) -> np.generic:
    """``value`` as a NumPy scalar of ``np_dtype`` (so float32 math stays float32), wrapping
    as ``const`` does. A scalar, not a 0-d array: CuPy arrays mix with the one but not the
    other."""
    return _wrapped(value, np_dtype)[()]


def as_tensor_arg(x, name: str = "other") -> Tensor | None:
    """Tensor args pass through; scalars return None (the caller makes a weak constant)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _NUMBER):
        return None
    if isinstance(x, np.ndarray):
        return Tensor._make(x)
    raise TypeError(f"unsupported operand type for {name}: '{type(x).__name__}'")


def cast(t: Tensor, dt: _dtype.dtype) -> Tensor:
    if t._data.dtype == dt.np:
        return t
    from ember.ops.pointwise import to_copy

    return to_copy(t, dt)


def check_broadcast(a: tuple, b: tuple) -> None:
    """torch's error for shapes that do not broadcast."""
    for i in range(1, min(len(a), len(b)) + 1):
        x, y = a[-i], b[-i]
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {max(len(a), len(b)) - i}")


def binary_args(a, b, float_result: bool = False):
    """Promote ``a`` (a Tensor) and ``b`` (Tensor or scalar) to one dtype, torch's way."""
    tb = type(b)
    ad = a._data.dtype
    # Fast paths first: they are most of what a training loop does.
    if tb is Tensor or isinstance(b, Tensor):
        if a._data.shape != b._data.shape:
            check_broadcast(a._data.shape, b._data.shape)
        if b._data.dtype == ad and (not float_result or ad.kind == "f"):
            return a, b
        dt = _dtype.result_type((a, b))
        if float_result and not dt.is_floating_point:
            dt = _dtype.get_default_dtype()
        return cast(a, dt), cast(b, dt)
    if (tb is float or tb is int) and ad.kind == "f":
        if tb is int:
            check_int(b)
        w = Tensor._make(np.array(b, dtype=ad))
        w._aux = WRAPPED_NUMBER
        return a, w
    if as_tensor_arg(b) is None:
        dt = _dtype.result_type((a,), (b,))
        if float_result and not dt.is_floating_point:
            dt = _dtype.get_default_dtype()
        return cast(a, dt), const(b, dt)
    return binary_args(a, as_tensor_arg(b), float_result)


def float_arg(t: Tensor) -> Tensor:
    """Integer and bool tensors become the default float dtype (exp, sin, sqrt, ...)."""
    kind = t._data.dtype.kind
    if kind == "f" or kind == "V" and t.dtype.is_floating_point:  # "V": ml_dtypes' bfloat16
        return t
    return cast(t, _dtype.get_default_dtype())


def to_tensor(x, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if like is not None and isinstance(x, _NUMBER):
        return const(x, _dtype.result_type((like,), (x,)))
    from ember._creation import tensor

    return tensor(x)
