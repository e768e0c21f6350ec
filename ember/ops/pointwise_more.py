"""Integer-flavoured elementwise ops: floor division, remainders, rounding, sign and abs,
clamping, maximum/minimum, and the bitwise and logical families."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import binary_args, cast, const, scalar_array
from ember.ops.pointwise import NotDifferentiable, _lhs_tensor, where

# torch's C++ scalar-type names, used in its "not implemented for 'Long'" errors.
_CNAME = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
          "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
          "float64": "Double"}


def not_for(kernel: str, dt: _dtype.dtype) -> NotImplementedError:
    """torch's error for a kernel that does not exist for a dtype."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_CNAME[dt.name]}\'')


def _check_int_zero(b: Tensor) -> None:
    if not b.dtype.is_floating_point and not np.all(b._data):
        raise RuntimeError("ZeroDivisionError")


def _quiet(fn):
    def run(*arrays):
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(*arrays)
    return run


_floordiv = _quiet(np.floor_divide)


def _tensor_pair(a, b, kernel: str):
    a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    if a.dtype is _dtype.bool_:
        raise not_for(kernel, a.dtype)
    _check_int_zero(b)
    return a, b


def _no_derivative(a0, b0, a: Tensor, b: Tensor, fn, name: str) -> Tensor:
    """Apply ``fn`` under a NotImplemented node whose edges are the original tensor args."""
    if isinstance(a0, Tensor) and isinstance(b0, Tensor):
        return NotDifferentiable.apply(a, b, fn=fn, name=name)
    if isinstance(a0, Tensor):
        bv = b._data
        return NotDifferentiable.apply(a, fn=lambda x: fn(x, bv), name=name)
    av = a._data
    return NotDifferentiable.apply(b, fn=lambda y: fn(av, y), name=name)


def floor_divide(a, b) -> Tensor:
    """``a // b``: rounds toward negative infinity; its gradient is not implemented in torch."""
    a2, b2 = _tensor_pair(a, b, "div_floor_cpu")
    return _no_derivative(a, b, a2, b2, _floordiv, "floor_divide")


def int_div(a: Tensor, b: Tensor, mode: str) -> Tensor:
    """Integer ``div`` with ``rounding_mode`` 'trunc' or 'floor' (exact for all of int64)."""
    if a.dtype is _dtype.bool_:
        raise not_for("div_trunc_cpu" if mode == "trunc" else "div_floor_cpu", a.dtype)
    _check_int_zero(b)
    q = np.floor_divide(a._data, b._data)
    if mode == "trunc":
        q = q + ((np.remainder(a._data, b._data) != 0) & ((a._data < 0) != (b._data < 0)))
    return Tensor._make(q.astype(a._data.dtype, copy=False))


class Remainder(Op):
    node_name = "RemainderBackward1"
    broadcasts = True
    saves = (0, 1)

    @staticmethod
    def forward(ctx, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.remainder(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g if need[0] else None), (-g * a.div(b, rounding_mode="floor")
                                          if need[1] else None)


class RemainderScalar(Op):
    node_name = "RemainderBackward0"

    @staticmethod
    def forward(ctx, a, other=1):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.remainder(a, scalar_array(other, a.dtype))

    @staticmethod
    def backward(ctx, g):
        return g


class Fmod(Remainder):
    node_name = "FmodBackward1"

    @staticmethod
    def forward(ctx, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g if need[0] else None), (-g * a.div(b, rounding_mode="trunc")
                                          if need[1] else None)


class FmodScalar(RemainderScalar):
    node_name = "FmodBackward0"

    @staticmethod
    def forward(ctx, a, other=1):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, scalar_array(other, a.dtype))


def _mod(a, b, kernel, tensor_op, scalar_op, name):
    if not isinstance(a, Tensor):  # scalar % tensor: torch has no derivative for it
        if name == "fmod":
            raise TypeError(f"fmod() received an invalid combination of arguments - got "
                            f"({type(a).__name__}, {type(b).__name__})")
        a2, b2 = _tensor_pair(a, b, kernel)
        fn = _quiet(np.remainder if name == "remainder" else np.fmod)
        return _no_derivative(a, b, a2, b2, fn, name)
    a2, b2 = _tensor_pair(a, b, kernel)
    if isinstance(b, Tensor):
        return tensor_op.apply(a2, b2)
    return scalar_op.apply(a2, other=b)


def remainder(a, b) -> Tensor:
    """Python-style modulus: the result has the sign of the divisor."""
    return _mod(a, b, "remainder_cpu", Remainder, RemainderScalar, "remainder")


def fmod(a, b) -> Tensor:
    """C-style modulus: the result has the sign of the dividend."""
    return _mod(a, b, "fmod_cpu", Fmod, FmodScalar, "fmod")


# --- rounding, sign, abs -------------------------------------------------------------------


def _zero_grad_op(name: str, node: str, fn):
    """A piecewise-constant op (floor, sign, ...): gradient zero everywhere."""
    def forward(ctx, x, **kw):
        return fn(x, **kw)

    def backward(ctx, g):
        return g * 0
    return type(name, (Op,), {"node_name": node, "forward": staticmethod(forward),
                              "backward": staticmethod(backward), "__module__": __name__})


def _round_decimals(x, decimals=0):
    # torch scales by 10**decimals in the tensor's own dtype, then rounds half to even.
    p = np.asarray(10.0 ** (decimals if decimals > 0 else -decimals), dtype=x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.rint(x * p) / p if decimals > 0 else np.rint(x / p) * p


Floor = _zero_grad_op("Floor", "FloorBackward0", np.floor)
Ceil = _zero_grad_op("Ceil", "CeilBackward0", np.ceil)
Trunc = _zero_grad_op("Trunc", "TruncBackward0", np.trunc)
Round = _zero_grad_op("Round", "RoundBackward0", np.rint)
RoundDecimals = _zero_grad_op("RoundDecimals", "RoundBackward1", _round_decimals)
def _sign(x):
    # (x > 0) - (x < 0): NaN gives 0, as in torch (np.sign would give NaN).
    return np.greater(x, 0).astype(x.dtype) - np.less(x, 0).astype(x.dtype)


Sign = _zero_grad_op("Sign", "SignBackward0", _sign)
Sgn = _zero_grad_op("Sgn", "SgnBackward0", _sign)


def _rounder(op, kernel):
    def fn(x: Tensor) -> Tensor:
        if x.dtype is _dtype.bool_:
            raise not_for(kernel, x.dtype)
        if not x.dtype.is_floating_point:
            return Tensor._make(x._data.copy())
        return op.apply(x)
    fn.__name__ = op.__name__.lower()
    return fn


floor = _rounder(Floor, "floor_vml_cpu")
ceil = _rounder(Ceil, "ceil_vml_cpu")
trunc = _rounder(Trunc, "trunc_vml_cpu")


def round(x: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even; ``decimals`` rounds to that many decimal places."""
    if decimals == 0:
        return _rounder(Round, "round_vml_cpu")(x)
    if not x.dtype.is_floating_point:
        raise not_for("round_cpu", x.dtype)
    return RoundDecimals.apply(x, decimals=decimals)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by sign (0 for NaN, as torch)."""
    if x.dtype is _dtype.bool_:
        return Tensor._make(x._data.copy())
    return Sign.apply(x)


def sgn(x: Tensor) -> Tensor:
    """The sign; for real tensors the same as ``sign``."""
    if x.dtype is _dtype.bool_:
        return Tensor._make(x._data.copy())
    return Sgn.apply(x)


class Frac(Op):
    node_name = "FracBackward0"

    @staticmethod
    def forward(ctx, x):
        with np.errstate(invalid="ignore"):
            return x - np.trunc(x)

    @staticmethod
    def backward(ctx, g):
        return g


def frac(x: Tensor) -> Tensor:
    """The fractional part ``x - trunc(x)``."""
    if not x.dtype.is_floating_point:
        raise not_for("frac_cpu", x.dtype)
    return Frac.apply(x)


class Abs(Op):
    node_name = "AbsBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return np.abs(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sgn()


def abs(x: Tensor) -> Tensor:
    """Absolute value."""
    if x.dtype is _dtype.bool_:
        raise not_for("abs_cpu", x.dtype)
    return Abs.apply(x)


# --- clamping and elementwise extrema -----------------------------------------------------


class Clamp(Op):
    """clamp with scalar bounds (either may be None)."""

    node_name = "ClampBackward1"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, lo=None, hi=None):
        ctx.lo, ctx.hi = lo, hi
        if lo is not None:
            x = np.maximum(x, scalar_array(lo, x.dtype))
        if hi is not None:
            x = np.minimum(x, scalar_array(hi, x.dtype))
        return x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.lo, ctx.hi
        keep = (x >= lo) if hi is None else (x <= hi) if lo is None else (x >= lo) & (x <= hi)
        return where(keep, g, g.new_zeros(()))


class ClampMin(Clamp):
    node_name = "ClampMinBackward0"


class ClampMax(Clamp):
    node_name = "ClampMaxBackward0"


class ClampT(Op):
    """clamp with tensor bounds; an absent bound is a placeholder input flagged off."""

    node_name = "ClampBackward0"
    broadcasts = True
    saves = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, lo, hi, has_lo=True, has_hi=True):
        ctx.has = has_lo, has_hi
        if has_lo:
            x = np.maximum(x, lo)
        if has_hi:
            x = np.minimum(x, hi)
        return x

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        has_lo, has_hi = ctx.has
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        keep = (x >= lo) & (x <= hi) if has_lo and has_hi else (x >= lo) if has_lo else x <= hi
        gx = where(keep, g, zero) if need[0] else None
        # Where min > max the result is max, so max takes the gradient there.
        glo = where((x < lo) & (lo <= hi) if has_hi else x < lo, g, zero) \
            if has_lo and need[1] else None
        ghi = where((x > hi) | (lo > hi) if has_lo else x > hi, g, zero) \
            if has_hi and need[2] else None
        return gx, glo, ghi


class ClampMinT(Op):
    node_name = "ClampMinBackward1"
    broadcasts = True
    saves = (0, 1)
    fn = staticmethod(np.maximum)

    @classmethod
    def forward(cls, ctx, x, b):
        return cls.fn(x, b)

    @staticmethod
    def backward(ctx, g):
        x, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        return (where(x >= b, g, zero) if need[0] else None), \
            (where(x < b, g, zero) if need[1] else None)


class ClampMaxT(ClampMinT):
    node_name = "ClampMaxBackward1"
    fn = staticmethod(np.minimum)

    @staticmethod
    def backward(ctx, g):
        x, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        return (where(x <= b, g, zero) if need[0] else None), \
            (where(x > b, g, zero) if need[1] else None)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]``; bounds are numbers or tensors, one may be None."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if not all(v is None or isinstance(v, Tensor) for v in (min, max)):
            raise TypeError("clamp() received an invalid combination of arguments - got (min="
                            f"{type(min).__name__}, max={type(max).__name__})")
        ts = [t for t in (x, min, max) if t is not None]
        dt = _dtype.result_type(ts)
        for t in ts[1:]:
            binary_args(x, t)  # torch's broadcast error
        x = cast(x, dt)
        lo = cast(min, dt) if min is not None else const(0, dt)
        hi = cast(max, dt) if max is not None else const(0, dt)
        return ClampT.apply(x, lo, hi, has_lo=min is not None, has_hi=max is not None)
    dt = _dtype.result_type((x,), tuple(v for v in (min, max) if v is not None))
    # torch records ClampBackward1 for clamp(min=...) and clamp(max=...) alike.
    return Clamp.apply(cast(x, dt), lo=min, hi=max)


def clamp_min(x: Tensor, min) -> Tensor:
    """``max(x, min)``; ``min`` a number or a tensor."""
    if isinstance(min, Tensor):
        x, min = binary_args(x, min)
        return ClampMinT.apply(x, min)
    return ClampMin.apply(cast(x, _dtype.result_type((x,), (min,))), lo=min)


def clamp_max(x: Tensor, max) -> Tensor:
    """``min(x, max)``; ``max`` a number or a tensor."""
    if isinstance(max, Tensor):
        x, max = binary_args(x, max)
        return ClampMaxT.apply(x, max)
    return ClampMax.apply(cast(x, _dtype.result_type((x,), (max,))), hi=max)


def _need_tensor(name: str, other) -> None:
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")


class Maximum(Op):
    node_name = "MaximumBackward0"
    broadcasts = True
    saves = (0, 1)
    fn = staticmethod(np.maximum)
    sign = 1

    @classmethod
    def forward(cls, ctx, a, b):
        return cls.fn(a, b)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        half = where(a == b, g / 2, g)
        a_wins, b_wins = (a > b, a < b) if cls.sign > 0 else (a < b, a > b)
        return (where(b_wins, zero, half) if need[0] else None), \
            (where(a_wins, zero, half) if need[1] else None)


class Minimum(Maximum):
    node_name = "MinimumBackward0"
    fn = staticmethod(np.minimum)
    sign = -1


class Fmax(Op):
    """Like maximum, but a NaN loses to a number."""

    node_name = "FmaxBackward0"
    broadcasts = True
    saves = (0, 1)
    fn = staticmethod(np.fmax)
    sign = 1

    @classmethod
    def forward(cls, ctx, a, b):
        return cls.fn(a, b)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        a_taken = ((a >= b) if cls.sign > 0 else (a <= b)).logical_or(b.isnan())
        return (where(a_taken, g, zero) if need[0] else None), \
            (where(a_taken, zero, g) if need[1] else None)


class Fmin(Fmax):
    node_name = "FminBackward0"
    fn = staticmethod(np.fmin)
    sign = -1


def _extremum(op, name: str):
    def fn(a: Tensor, other: Tensor) -> Tensor:
        _need_tensor(name, other)
        a, b = binary_args(a, other)
        return op.apply(a, b)
    fn.__name__ = name
    return fn


maximum = _extremum(Maximum, "maximum")
minimum = _extremum(Minimum, "minimum")
fmax = _extremum(Fmax, "fmax")
fmin = _extremum(Fmin, "fmin")


def _r(fn):
    """The reflected dunder: ``scalar <op> tensor`` calls ``tensor.__r<op>__(scalar)``."""
    def r(a, b):
        return fn(b, a)
    return r


_NAMES = {
    "floor_divide": floor_divide, "remainder": remainder, "fmod": fmod, "floor": floor,
    "ceil": ceil, "trunc": trunc, "fix": trunc, "round": round, "sign": sign, "sgn": sgn,
    "frac": frac, "abs": abs, "absolute": abs, "clamp": clamp, "clip": clamp,
    "clamp_min": clamp_min, "clamp_max": clamp_max, "maximum": maximum, "minimum": minimum,
    "fmax": fmax, "fmin": fmin,
}
METHODS = dict(_NAMES, __floordiv__=floor_divide, __rfloordiv__=_r(floor_divide),
               __mod__=remainder, __rmod__=_r(remainder), __abs__=abs)
FUNCTIONS = dict(_NAMES)
