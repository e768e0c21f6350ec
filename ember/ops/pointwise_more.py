"""Integer-flavoured elementwise ops: floor division, remainders, rounding, sign and abs,
clamping, maximum/minimum, and the bitwise and logical families."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._creation import zeros_like
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.compiler.traced import check
from ember.ops._common import elementwise_op, public, quiet
from ember.ops._promote import binary_args, cast, const, scalar
from ember.ops.pointwise import NotDifferentiable, _lhs_tensor, where

# torch's C++ scalar-type names, used in its "not implemented for 'Long'" errors.
_CNAME = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
          "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
          "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def not_for(kernel: str, dt: _dtype.dtype) -> NotImplementedError:
    """torch's error for a kernel that does not exist for a dtype."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_CNAME[dt.name]}\'')


def _check_int_zero(b: Tensor) -> None:
    if not b.dtype.is_floating_point:
        check(_no_zero, b._data)


def _no_zero(a: np.ndarray) -> None:
    if not np.all(a):
        raise RuntimeError("ZeroDivisionError")


def _floordiv(a, b):
    # Only x // 0 is silenced: NumPy still warns on overflow (int64 min // -1).
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor_divide(a, b)


_remainder, _fmod = quiet(np.remainder), quiet(np.fmod)


def _tensor_pair(a, b, kernel: str):
    a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    if a.dtype is _dtype.bool_ or a._data.dtype.kind == "c":
        raise not_for(kernel, a.dtype)
    _check_int_zero(b)
    return a, b


def _no_derivative(a0, b0, a: Tensor, b: Tensor, fn, name: str) -> Tensor:
    """Apply ``fn`` under a NotImplemented node whose edges are the original tensor args."""
    if isinstance(a0, Tensor) and isinstance(b0, Tensor):
        return NotDifferentiable.apply(a, b, fn=fn, name=name)
    # A wrapped scalar goes in as a NumPy scalar, which mixes with GPU arrays too.
    if isinstance(a0, Tensor):
        bv = b._data if b._data.ndim else b._data[()]
        return NotDifferentiable.apply(a, fn=lambda x: fn(x, bv), name=name)
    av = a._data if a._data.ndim else a._data[()]
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
    """``a - b * floor(a / b)``; ``Fmod`` is the same with ``trunc``."""

    node_name = "RemainderBackward1"
    broadcasts = True
    saves = (0, 1)
    save_for = ((1,), (1,))  # both only for other's gradient
    fn = staticmethod(_remainder)
    rounding_mode = "floor"

    @classmethod
    def forward(cls, ctx, a, b):
        return cls.fn(a, b)

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g if need[0] else None), (-g * a.div(b, rounding_mode=cls.rounding_mode)
                                          if need[1] else None)


class Fmod(Remainder):
    node_name = "FmodBackward1"
    fn = staticmethod(_fmod)
    rounding_mode = "trunc"


class RemainderScalar(Op):
    """``tensor % number``: the gradient is 1 (only the tensor has an edge)."""

    node_name = "RemainderBackward0"
    fn = staticmethod(_remainder)

    @classmethod
    def forward(cls, ctx, a, other=1):
        return cls.fn(a, scalar(other, a.dtype))

    @staticmethod
    def backward(ctx, g):
        return g


class FmodScalar(RemainderScalar):
    node_name = "FmodBackward0"
    fn = staticmethod(_fmod)


def _mod(a, b, kernel, tensor_op, scalar_op, name):
    if not isinstance(a, Tensor):  # scalar % tensor: torch has no derivative for it
        if name == "fmod":
            raise TypeError(f"fmod() received an invalid combination of arguments - got "
                            f"({type(a).__name__}, {type(b).__name__})")
        a2, b2 = _tensor_pair(a, b, kernel)
        return _no_derivative(a, b, a2, b2, tensor_op.fn, name)
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


def _zero_grad(g: Tensor) -> Tensor:
    """The gradient of a piecewise-constant op (floor, sign, ...): zeros, with no history (even
    under create_graph) and even where ``g`` is inf or NaN, as torch's zeros_like(grad)."""
    return zeros_like(g)


def _round_decimals(x, decimals=0):
    # torch scales by 10**decimals in the tensor's own dtype, then rounds half to even.
    p = scalar(10.0 ** (decimals if decimals > 0 else -decimals), x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.rint(x * p) / p if decimals > 0 else np.rint(x / p) * p


def _sign(x):
    # (x > 0) - (x < 0): NaN gives 0, as in torch (np.sign would give NaN).
    return np.greater(x, 0).astype(x.dtype) - np.less(x, 0).astype(x.dtype)


def _frac(x):
    return x - np.trunc(x)


Floor = elementwise_op("Floor", np.floor, _zero_grad)
Ceil = elementwise_op("Ceil", np.ceil, _zero_grad)
Trunc = elementwise_op("Trunc", np.trunc, _zero_grad)
Round = elementwise_op("Round", np.rint, _zero_grad)
RoundDecimals = elementwise_op("RoundDecimals", _round_decimals, _zero_grad,
                               node_name="RoundBackward1")
Sign = elementwise_op("Sign", _sign, _zero_grad)
Sgn = elementwise_op("Sgn", _sign, _zero_grad)
Frac = elementwise_op("Frac", quiet(_frac), lambda g: g)
Abs = elementwise_op("Abs", np.abs, lambda g, x: g * x.sgn(), saves=("self",))


def _rounder(op, kernel):
    def fn(x: Tensor) -> Tensor:
        if x.dtype is _dtype.bool_:
            raise not_for(kernel, x.dtype)
        if x._data.dtype.kind == "c":
            raise NotImplementedError(f"{fn.__name__} is not supported for complex inputs")
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
    if x._data.dtype.kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead.")
    return Sign.apply(x)


def sgn(x: Tensor) -> Tensor:
    """The sign; for real tensors the same as ``sign``."""
    if x.dtype is _dtype.bool_:
        return Tensor._make(x._data.copy())
    if x._data.dtype.kind == "c":
        from ember.ops.complex import Sgn as ComplexSgn

        return ComplexSgn.apply(x)
    return Sgn.apply(x)


def frac(x: Tensor) -> Tensor:
    """The fractional part ``x - trunc(x)``."""
    if not x.dtype.is_floating_point:
        raise not_for("frac_cpu", x.dtype)
    return Frac.apply(x)


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
            x = np.maximum(x, scalar(lo, x.dtype))
        if hi is not None:
            x = np.minimum(x, scalar(hi, x.dtype))
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
        # torch's clamp_backward_min_max, in-place logical ops and their shape errors included.
        x, lo, hi = ctx.saved_tensors
        has_lo, has_hi = ctx.has
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        if not (has_lo and has_hi):
            keep, other = (x >= lo, x < lo) if has_lo else (x <= hi, x > hi)
            gb = where(other, g, zero) if need[1 if has_lo else 2] else None
            return (where(keep, g, zero) if need[0] else None,
                    gb if has_lo else None, None if has_lo else gb)
        gx = where(_inplace_mask(x >= lo, x <= hi, "and"), g, zero) if need[0] else None
        # Where min >= max the result is max: min gets no gradient there, max all of it.
        glo = where(_inplace_mask(x < lo, lo < hi, "and"), g, zero) if need[1] else None
        ghi = where(_inplace_mask(x > hi, hi < lo, "or"), g, zero) if need[2] else None
        return gx, glo, ghi


def _inplace_mask(a: Tensor, b: Tensor, how: str) -> Tensor:
    """``a.logical_and_(b)`` (or ``logical_or_``), as torch's clamp backward computes it: ``a``
    cannot grow to the broadcast shape."""
    shape = np.broadcast_shapes(a._data.shape, b._data.shape)
    if shape != a._data.shape:
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    return (a & b) if how == "and" else (a | b)


class _Pairwise(Op):
    """Elementwise ``fn(a, b)`` of two tensors picking one of them (max, min, ...); each
    subclass's backward sends the gradient to whichever operand was picked."""

    broadcasts = True
    saves = (0, 1)
    fn = None

    @classmethod
    def forward(cls, ctx, a, b):
        return cls.fn(a, b)


class ClampMinT(_Pairwise):
    """clamp_min with a tensor bound: ties go to ``x`` (``ClampMaxT``: ``sign = -1``)."""

    node_name = "ClampMinBackward1"
    fn = staticmethod(np.maximum)
    sign = 1

    @classmethod
    def backward(cls, ctx, g):
        x, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        zero = g.new_zeros(())
        x_kept, b_kept = (x >= b, x < b) if cls.sign > 0 else (x <= b, x > b)
        return (where(x_kept, g, zero) if need[0] else None), \
            (where(b_kept, g, zero) if need[1] else None)


class ClampMaxT(ClampMinT):
    node_name = "ClampMaxBackward1"
    fn = staticmethod(np.minimum)
    sign = -1


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]``; bounds are numbers or tensors, one may be None."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if x._data.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if not all(v is None or isinstance(v, Tensor) for v in (min, max)):
            raise TypeError("clamp() received an invalid combination of arguments - got (min="
                            f"{type(min).__name__}, max={type(max).__name__})")
        ts = [t for t in (x, min, max) if t is not None]
        dt = _dtype.result_type(ts)
        for t in ts[1:]:
            binary_args(x, t)  # torch's broadcast error
        if len(ts) == 3:  # and the bounds with each other
            from ember.ops.shape import broadcast_shapes

            broadcast_shapes(*(t._data.shape for t in ts))
        x = cast(x, dt)
        lo = cast(min, dt) if min is not None else const(0, dt)
        hi = cast(max, dt) if max is not None else const(0, dt)
        return ClampT.apply(x, lo, hi, has_lo=min is not None, has_hi=max is not None)
    dt = _dtype.result_type((x,), tuple(v for v in (min, max) if v is not None))
    for v in (min, max):
        _dtype.check_int64(v, dt)
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


def need_tensor(name: str, other) -> None:
    """torch's error when a function that takes two tensors is given something else."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")


def tensor_pair_fn(op, name: str, float_only: bool = False, doc: str | None = None):
    """The public function of a binary op on two tensors, promoted to one dtype;
    ``float_only`` refuses integer results with torch's "not implemented" error."""
    def fn(a: Tensor, other: Tensor) -> Tensor:
        need_tensor(name, other)
        a, b = binary_args(a, other)
        if float_only and not a.dtype.is_floating_point:
            raise not_for(f"{name}_cpu", a.dtype)
        if a._data.dtype.kind == "c":
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return op.apply(a, b)
    return public(fn, name, op.__module__, doc)


class Maximum(_Pairwise):
    """Ties split the gradient evenly; ``Minimum`` is the same with ``sign = -1``."""

    node_name = "MaximumBackward0"
    fn = staticmethod(np.maximum)
    sign = 1

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


class Fmax(_Pairwise):
    """Like maximum, but a NaN loses to a number."""

    node_name = "FmaxBackward0"
    fn = staticmethod(np.fmax)
    sign = 1

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


maximum = tensor_pair_fn(Maximum, "maximum")
minimum = tensor_pair_fn(Minimum, "minimum")
fmax = tensor_pair_fn(Fmax, "fmax")
fmin = tensor_pair_fn(Fmin, "fmin")


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
