"""In-place ops (``add_``, ``mul_``, ``+=``, ``exp_``, ``zero_``, ...).

Each is its out-of-place op written back into the tensor's storage. Under autograd the tensor's
history is rebased onto the new node (as torch does) and its version counter is bumped, so a
saved copy of the old value is detected at backward.
"""

from __future__ import annotations

import sys

import numpy as np

from ember import _dtype
from ember._backend import to_device
from ember._creation import zeros_like
from ember._tensor import Tensor
from ember.autograd import forward_ad
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.autograd.graph import FREED, LOCAL, OUT
from ember.ops._promote import float_arg, scalar
from ember.ops.memory_overlap import check_internal, check_partial
from ember.ops.pointwise import QualifiedNode
from ember.ops.pointwise_math import AcoshInplace, AsinhInplace, AtanhInplace
from ember.ops.pointwise_more import _CNAME
from ember.ops.view_history import rebase

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def _can_cast(src: _dtype.dtype, dst: _dtype.dtype) -> bool:
    return src._kind <= dst._kind


def check_inplace(x: Tensor) -> None:
    """Refuse an in-place write that would corrupt autograd (torch's errors)."""
    if not STATE.enabled:
        return
    # A real view of such a leaf requires grad itself; detach() aliases do not, and may be
    # written (p.detach().zero_() is common).
    if x._base is not None and x._rg and x._base._rg and x._base._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    # Before the view's history is brought up to date, as torch: a view made before its base
    # started to require grad counts as a leaf here until something regenerated its grad_fn.
    if x._rg and x._grad_fn is None:
        raise RuntimeError(LEAF_INPLACE)
    x._sync()


def apply_inplace(x: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run out-of-place ``fn(x, *args)`` and write the result into ``x``'s storage, with
    torch's memory-overlap checks (an elementwise op's output is x, its inputs x and args)."""
    check_internal(x._data)
    check_partial(x._data, *[a._data for a in (*args, *kwargs.values()) if isinstance(a, Tensor)])
    return _apply_inplace(x, fn, *args, **kwargs)


def _apply_inplace(x: Tensor, fn, *args, **kwargs) -> Tensor:
    check_inplace(x)
    tracked = STATE.enabled and (x._rg or any(isinstance(a, Tensor) and a._rg
                                              for a in (*args, *kwargs.values())))
    if not tracked:
        prev = STATE.enabled
        STATE.enabled = False
        try:
            r = fn(x, *args, **kwargs)
        finally:
            STATE.enabled = prev
        _write(x, r)
        forward_ad.after_inplace(x, x, r)
        return x
    if x._base is not None and (x._rg or not x._base._rg):  # a view: torch's CopySlices rebase
        from ember.ops.indexing import inplace_on_view
        return inplace_on_view(x, fn, _write, *args, **kwargs)
    # x's old value at x's place in the graph. It shares x's storage while fn runs; if fn saved
    # it for backward (or a saved-tensor hook may hold its array), it gets a private copy before
    # x is overwritten, so relu_, exp_, add_(scalar), ... copy nothing.
    src = Tensor._make(x._data, x._grad_fn, x._output_nr)
    src._rg = x._rg
    forward_ad.before_inplace(x, src)
    r = fn(src, *args, **kwargs)
    if sys.getrefcount(src) > 2 or LOCAL.saved_hooks:
        src._data = src._data.copy()
    _write(x, r)
    forward_ad.after_inplace(x, src, r)
    rebase(x, r._grad_fn, r._output_nr, r._rg)
    saved_output_moved(r, x)
    return x


def saved_output_moved(r: Tensor, x: Tensor) -> None:
    """The result ``r`` of an in-place op now lives in ``x``: if its node saved it, later writes
    to ``x`` (or to its base and views) must invalidate it, as in torch."""
    node = r._grad_fn
    if node is not None and node._saved and node._saved is not FREED:
        node._saved = tuple(
            (OUT, (x._data, x._vc, x._vc[0], e[3])) if t is OUT and e[0] is r._data else (t, e)
            for t, e in node._saved)


def _cast_error(src: _dtype.dtype, dst: _dtype.dtype) -> RuntimeError:
    return RuntimeError(f"result type {_CNAME[src.name]} can't be cast to the desired output "
                        f"type {_CNAME[dst.name]}")


def _write(x: Tensor, r: Tensor) -> None:
    if not _can_cast(r.dtype, x.dtype):
        raise _cast_error(r.dtype, x.dtype)
    if r._data.shape != x._data.shape:
        shape = np.broadcast_shapes(x._data.shape, r._data.shape)
        if shape != x._data.shape:
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
    np.copyto(x._data, r._data, casting="unsafe")
    x._vc[0] += 1


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:  # the general path raises torch's error
        return False


def _make_inplace(name: str):
    def method(self, *args, **kwargs):
        return apply_inplace(self, getattr(Tensor, name), *args, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``."
    return method


def _fast(name: str, ufunc):
    """add_/sub_/mul_/div_: write with ``out=`` when no graph is recorded and dtypes agree."""
    slow = _make_inplace(name)

    def method(self, other, *, alpha=1, **kwargs):
        d = self._data
        if (not STATE.enabled or not (self._rg or (type(other) is Tensor and other._rg))) \
                and not kwargs and d.dtype.kind == "f" and forward_ad.LEVEL[0] is None:
            if type(other) is Tensor and other._data.dtype == d.dtype and \
                    other._data.ndim <= d.ndim:
                o = other._data
            elif type(other) in (int, float):
                o = scalar(other, d.dtype)
            else:
                o = None
            if o is not None and (o.shape == d.shape or _broadcasts_to(o.shape, d.shape)):
                check_internal(d)
                if type(other) is Tensor:
                    check_partial(d, o)
                check_inplace(self)
                if alpha != 1:
                    o = o * scalar(alpha, d.dtype)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ufunc(d, o, out=d)
                self._vc[0] += 1
                return self
        return slow(self, other, alpha=alpha, **kwargs) if name in ("add", "sub") else \
            slow(self, other, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``."
    return method


class Refill(Op):
    """An in-place overwrite of a tensor in the graph: its old value gets no gradient.
    Subclasses carry torch's node names (ZeroBackward0, FillBackward2, UniformBackward0, ...)."""

    node_name = "ZeroBackward0"

    @staticmethod
    def forward(ctx, x, values=None):
        return np.broadcast_to(values, x.shape).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return zeros_like(g)


def refill_op(node_name: str):
    """A Refill subclass recorded under ``node_name``."""
    return type(node_name.replace("Backward", ""), (Refill,), {
        "node_name": node_name, "__module__": __name__})


_ZERO, _FILL = refill_op("ZeroBackward0"), refill_op("FillBackward2")


class FillT(Op):
    node_name = "FillBackward3"

    @staticmethod
    def forward(ctx, x, v):
        ctx.v_dtype = v.dtype
        return np.full_like(x, v)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (zeros_like(g) if need[0] else None), \
            (g.sum().to(_dtype.from_numpy_dtype(ctx.v_dtype)) if need[1] else None)


class CopyFrom(Op):
    node_name = "CopyBackwards"
    _node_base = QualifiedNode
    broadcasts = True

    @staticmethod
    def forward(ctx, x, src):
        ctx.src_dtype = src.dtype
        return np.broadcast_to(src, x.shape).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (zeros_like(g) if need[0] else None), \
            (g.to(_dtype.from_numpy_dtype(ctx.src_dtype)) if need[1] else None)


def write_values(x: Tensor, values: np.ndarray, op=_FILL) -> Tensor:
    """Overwrite ``x`` with ``values``; under autograd the overwrite is recorded as ``op``."""
    check_inplace(x)
    if STATE.enabled and x._rg:  # fill_ may write an expanded tensor: no overlap checks
        return _apply_inplace(x, lambda t: op.apply(t, values=values))
    x._data[...] = values
    x._vc[0] += 1
    return x


def zero_(x: Tensor) -> Tensor:
    """Fill with zeros."""
    return write_values(x, np.zeros((), x._data.dtype), _ZERO)


def fill_(x: Tensor, value) -> Tensor:
    """Fill with a number or a 0-d tensor."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        check_internal(x._data)  # fill_ with a number may write an expanded tensor, not this
        if STATE.enabled and (value._rg or x._rg):
            return _apply_inplace(x, FillT.apply, value)
        value = value._data
    _dtype.check_int64(value, x.dtype)
    return write_values(x, scalar(value, x._data.dtype))


def copy_(x: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, any dtype) into ``x``."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    xs, ss = x._data.shape, src._data.shape
    for i in range(1, len(ss) + 1):
        if i > len(xs) or ss[-i] not in (1, xs[-i]):
            a = xs[-i] if i <= len(xs) else 1
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({ss[-i]}) at non-singleton dimension {len(ss) - i}")
    check_internal(x._data)
    check_partial(x._data, src._data)
    if STATE.enabled and (src._rg or x._rg):
        return _apply_inplace(x, CopyFrom.apply, src)
    check_inplace(x)
    s = src._data if type(src._data) is type(x._data) else to_device(src._data, x.device)
    np.copyto(x._data, np.broadcast_to(s, xs), casting="unsafe")
    x._vc[0] += 1
    return x


INPLACE_OF = (
    "pow", "exp", "log", "tanh", "sigmoid", "relu", "neg", "negative", "abs", "absolute",
    "exp2", "expm1", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "square", "sin",
    "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh",
    "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "deg2rad", "rad2deg", "erf",
    "erfc", "erfinv", "floor", "ceil", "round", "trunc", "fix", "frac", "sign", "sgn", "clamp",
    "clip", "clamp_min", "clamp_max", "remainder", "fmod", "floor_divide", "atan2", "arctan2",
    "hypot", "lerp", "addcmul", "addcdiv", "xlogy", "copysign", "nan_to_num",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "logical_not", "eq",
    "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal",
    "not_equal", "subtract", "multiply", "true_divide", "divide",
)

METHODS = {name + "_": _make_inplace(name) for name in INPLACE_OF}
METHODS.update({
    "add_": _fast("add", np.add), "sub_": _fast("sub", np.subtract),
    "mul_": _fast("mul", np.multiply), "div_": _fast("div", np.true_divide),
})


def _second_name(op):
    """asinh_, acosh_, atanh_: the same math, recorded as ``*Backward1`` as torch does."""
    return lambda x: apply_inplace(x, lambda t: op.apply(float_arg(t)))


METHODS.update({"asinh_": _second_name(AsinhInplace), "acosh_": _second_name(AcoshInplace),
                "atanh_": _second_name(AtanhInplace)})
METHODS.update({"arcsinh_": METHODS["asinh_"], "arccosh_": METHODS["acosh_"],
                "arctanh_": METHODS["atanh_"]})


def float_power_(x: Tensor, exponent) -> Tensor:
    """In-place ``float_power``: only for float64 tensors, as in torch."""
    if x.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_CNAME[x.dtype.name]} but "
                           "the operation's result requires dtype Double")
    return apply_inplace(x, Tensor.float_power, exponent)


METHODS.update({
    "zero_": zero_, "fill_": fill_, "copy_": copy_, "float_power_": float_power_,
    "__iadd__": METHODS["add_"], "__isub__": METHODS["sub_"], "__imul__": METHODS["mul_"],
    "__itruediv__": METHODS["div_"], "__ipow__": METHODS["pow_"],
    "__ifloordiv__": METHODS["floor_divide_"], "__imod__": METHODS["remainder_"],
    "__iand__": METHODS["bitwise_and_"], "__ior__": METHODS["bitwise_or_"],
    "__ixor__": METHODS["bitwise_xor_"], "__ilshift__": METHODS["bitwise_left_shift_"],
    "__irshift__": METHODS["bitwise_right_shift_"],
})
# In-place forms that torch offers only as Tensor methods, not as ``torch.<name>``.
_METHOD_ONLY = {
    "absolute_", "add_", "addcdiv_", "addcmul_", "arctan2_", "atan2_",
    "bitwise_and_", "bitwise_left_shift_", "bitwise_not_", "bitwise_or_", "bitwise_right_shift_",
    "bitwise_xor_", "copy_", "copysign_", "div_", "divide_", "eq_", "erfinv_",
    "float_power_", "floor_divide_", "fmod_", "ge_", "greater_", "greater_equal_",
    "gt_", "hypot_", "le_", "lerp_", "less_", "less_equal_", "logical_and_", "logical_not_",
    "logical_or_", "logical_xor_", "lt_", "mul_", "multiply_", "ne_", "not_equal_",
    "pow_", "remainder_", "sgn_", "sign_", "sub_", "subtract_", "true_divide_",
}
FUNCTIONS = {name: fn for name, fn in METHODS.items()
             if not name.startswith("__") and name not in _METHOD_ONLY}
