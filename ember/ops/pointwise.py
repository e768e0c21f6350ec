"""Elementwise ops: arithmetic, comparisons, math functions, and dtype copies.

Each op is an ``Op``: ``forward`` on arrays right above ``backward`` on ember Tensors.
Broadcasting is undone by the engine (``broadcasts = True``), not here. Ops whose forward is
one NumPy call and whose backward is one formula are declared in a line each with
``elementwise_op`` (ember/ops/_common.py).
"""

from __future__ import annotations

import numpy as np

from ember import _backend, _dtype
from ember._backend import device_of, to_device
from ember._creation import zeros_like
from ember._tensor import Tensor
from ember.autograd.function import Op, OpNode
from ember.ops._common import elementwise_op, float_unary, keep_where, quiet
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import binary_args, check_broadcast, scalar
from ember.ops.memory_overlap import is_dense


class ToCopy(Op):
    node_name = "ToCopyBackward0"

    complex_grad = "own"

    @staticmethod
    def forward(ctx, x, dtype=None, device=None):
        ctx.src_dtype, ctx.src_device = x.dtype, device_of(x)
        if x.dtype.kind == "c" and dtype is not None and dtype._kind < 3:
            from ember.ops.complex import discard_imag

            x = discard_imag(x)
        if device is not None and device != ctx.src_device:
            y = to_device(x, device)  # already a copy
            return y if dtype is None or y.dtype == dtype.np else y.astype(dtype.np)
        return x.astype(dtype.np) if dtype is not None else x.copy()

    @staticmethod
    def backward(ctx, g):
        src = _dtype.from_numpy_dtype(ctx.src_dtype)
        if src._kind < 3 and g._data.dtype.kind == "c":
            g = g.real  # a real input's share of a complex gradient
        return to_copy(g, src, ctx.src_device)


def to_copy(x: Tensor, dtype: _dtype.dtype, device: _backend.device | None = None) -> Tensor:
    """A copy of ``x`` in ``dtype`` (and on ``device``); grad flows back only into float
    results."""
    out = ToCopy.apply(x, dtype=dtype, device=device)
    if dtype._kind < 2:
        out._rg = False
        out._grad_fn = None
    return out


class Clone(Op):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, memory_format=None):
        if memory_format is None:  # preserve_format: a dense input's layout is kept, else C
            return x.copy(order="K" if is_dense(x) else "C")
        from ember._layout import copy_as

        return copy_as(x, memory_format)

    @staticmethod
    def backward(ctx, g):
        return g


def clone(x: Tensor, *, memory_format=None) -> Tensor:
    """A copy of ``x`` that stays in the graph (CloneBackward0), laid out like ``x`` (torch's
    preserve_format) or, with ``memory_format``, contiguous or channels-last."""
    if memory_format is None:
        return Clone.apply(x)
    from ember import _layout

    _layout.check_format(memory_format, "clone")
    if memory_format is _layout.preserve_format:
        return Clone.apply(x)
    if memory_format is not _layout.contiguous_format:
        _layout.channels_last_rank(memory_format, x.ndim)
    return Clone.apply(x, memory_format=memory_format)


# --- arithmetic ---------------------------------------------------------------------------


def _alpha_times(x: np.ndarray, alpha) -> np.ndarray:
    """``alpha * x`` in x's dtype; alpha is 1 in nearly every call, which costs nothing."""
    return x if alpha == 1 else x * scalar(alpha, x.dtype)


def _minus_alpha_times(g: Tensor, alpha) -> Tensor:
    """The gradient of the subtracted operand of ``a - alpha * b``."""
    return -g if alpha == 1 else g * (-alpha)


class Add(Op):
    node_name = "AddBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return a + _alpha_times(b, alpha)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)


class Sub(Op):
    node_name = "SubBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return a - _alpha_times(b, alpha)

    @staticmethod
    def backward(ctx, g):
        return g, _minus_alpha_times(g, ctx.alpha)


class Rsub(Op):
    """``other - alpha * self`` with both tensors: ``Sub`` with its operands swapped, keeping
    the edges in (self, other) order, as torch."""

    node_name = "RsubBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        return Sub.forward(ctx, b, a, alpha)

    @staticmethod
    def backward(ctx, g):
        g_other, g_self = Sub.backward(ctx, g)
        return g_self, g_other


class RsubScalar(Op):
    """``scalar - alpha * self``: torch records only the tensor edge."""

    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, a, other=0, alpha=1):
        ctx.alpha = alpha
        return scalar(other, a.dtype) - _alpha_times(a, alpha)

    @staticmethod
    def backward(ctx, g):
        return _minus_alpha_times(g, ctx.alpha)


class Mul(Op):
    node_name = "MulBackward0"
    broadcasts = True
    saves = (0, 1)
    save_for = ((1,), (0,))  # self for other's gradient, other for self's

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g * b if need[0] else None), (g * a if need[1] else None)


class Div(Op):
    node_name = "DivBackward0"
    broadcasts = True
    saves = (0, 1)
    save_for = ((1,), (0, 1))

    @staticmethod
    def forward(ctx, a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = g / b if need[0] else None
        gb = -g * ((a / b) / b) if need[1] else None  # torch's order of operations
        return ga, gb


class DivScalar(Op):
    """Division by a number inside a formula (torch's ``div(Tensor, Scalar)``, as in mean's
    backward); Python's ``t / 2`` records ``DivBackward0`` in torch too."""

    node_name = "DivBackward1"

    @staticmethod
    def forward(ctx, a, other):
        ctx.other = other
        return a / scalar(other, a.dtype)

    @staticmethod
    def backward(ctx, g):
        return DivScalar.apply(g, other=ctx.other)


class DivRounding(Op):
    """Floor or trunc division of floats: piecewise constant, so its gradient is zero."""

    node_name = "DivBackward2"
    broadcasts = True
    saves = (0, 1)
    save_for = ((1,), None)  # torch saves them for the (zero) gradient formulas

    @staticmethod
    def forward(ctx, a, b, mode="floor"):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor_divide(a, b) if mode == "floor" else np.trunc(a / b)

    @staticmethod
    def backward(ctx, g):
        zero = g * 0
        need = ctx.needs_input_grad
        return (zero if need[0] else None), (zero if need[1] else None)


class QualifiedNode(OpNode):
    """Nodes that torch implements in C++ outside codegen report a qualified ``name()``."""

    __slots__ = ()

    def name(self) -> str:
        return "torch::autograd::" + type(self).__name__


class NotDifferentiable(Op):
    """torch's ``NotImplemented`` node: the result requires grad, but backward raises."""

    node_name = "NotImplemented"
    _node_base = QualifiedNode
    broadcasts = True

    @staticmethod
    def forward(ctx, *arrays, fn=None, name=""):
        ctx.op = name
        return fn(*arrays)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


Neg = elementwise_op("Neg", np.negative, lambda g: -g)


def _check_alpha(a: Tensor, alpha) -> None:
    _dtype.check_int64(alpha, a.dtype)
    if alpha != 1 and not a.dtype.is_floating_point:
        if isinstance(alpha, float):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating"
                               " point number.")
        if isinstance(alpha, bool) is not (a.dtype is _dtype.bool_):
            raise RuntimeError("Boolean alpha only supported for Boolean results.")


def add(a, b, *, alpha=1) -> Tensor:
    """``a + alpha * b`` with broadcasting and torch's type promotion."""
    if type(a) is not Tensor:
        a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    if alpha != 1:
        _check_alpha(a, alpha)
    return Add.apply(a, b, alpha=alpha)


_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
             "`^` or `logical_xor()` operator instead.")


def _check_sub(a: Tensor, b) -> None:
    """torch refuses ``-`` whenever a bool is involved (a bool scalar counts)."""
    b_bool = b.dtype is _dtype.bool_ if isinstance(b, Tensor) else isinstance(b, bool | np.bool_)
    a_bool = a.dtype is _dtype.bool_
    if a_bool and b_bool:
        raise RuntimeError(_BOOL_SUB)
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def sub(a, b, *, alpha=1) -> Tensor:
    """``a - alpha * b``; refused for bool operands, as in torch."""
    if type(a) is not Tensor:
        a, b = _lhs_tensor(a, b)
    if a._data.dtype == np.bool_ or (type(b) is not Tensor or b._data.dtype == np.bool_):
        _check_sub(a, b)
    a, b = binary_args(a, b)
    if alpha != 1:
        _check_alpha(a, alpha)
    return Sub.apply(a, b, alpha=alpha)


def rsub(a: Tensor, b, *, alpha=1) -> Tensor:
    """``b - alpha * a`` (``torch.rsub``; also the reflected ``scalar - tensor``)."""
    _check_sub(a, b)
    a, b2 = binary_args(a, b)
    if alpha != 1:
        _check_alpha(a, alpha)
    if isinstance(b, Tensor):
        return Rsub.apply(a, b2, alpha=alpha)
    return RsubScalar.apply(a, other=b, alpha=alpha)


def mul(a, b) -> Tensor:
    """``a * b`` with broadcasting; Python scalars do not promote float32."""
    if type(a) is not Tensor:
        a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    return Mul.apply(a, b)


class DivExplicitNone(Div):
    """``div(a, b, rounding_mode=None)``: true division, recorded under torch's other name."""

    node_name = "DivBackward2"


_UNSET = "unset"  # tells div(a, b) from div(a, b, rounding_mode=None), as torch's names do


def div(a, b, *, rounding_mode: str | None = _UNSET) -> Tensor:
    """True division (ints give floats), or ``rounding_mode`` 'trunc' / 'floor'."""
    if type(a) is not Tensor:
        a, b = _lhs_tensor(a, b)
    if rounding_mode is _UNSET or rounding_mode is None:
        a, b = binary_args(a, b, float_result=True)
        return (Div if rounding_mode is _UNSET else DivExplicitNone).apply(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    from ember.ops.pointwise_more import floor_divide, int_div

    if rounding_mode == "floor" and not a.is_floating_point():
        return floor_divide(a, b)
    a, b = binary_args(a, b)
    if not a.dtype.is_floating_point:
        return int_div(a, b, rounding_mode)
    return DivRounding.apply(a, b, mode=rounding_mode)


def rdiv(a: Tensor, b) -> Tensor:
    """``b / a`` for a scalar ``b``: torch computes ``a.reciprocal() * b``."""
    if isinstance(b, Tensor):
        return div(b, a)
    from ember.ops.pointwise_math import reciprocal

    return mul(reciprocal(a), b)


def neg(x: Tensor) -> Tensor:
    """``-x``."""
    if x.dtype is _dtype.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return Neg.apply(x)


def _lhs_tensor(a, b):
    if isinstance(a, Tensor):
        return a, b
    from ember.ops._promote import to_tensor

    return to_tensor(a, like=b if isinstance(b, Tensor) else None), b


# --- unary math ---------------------------------------------------------------------------


def _sigmoid(x):
    """1 / (1 + exp(-x)), as torch: where exp overflows the answer is 0, as it should be."""
    e = np.negative(x, out=np.empty_like(x))  # an array even for 0-d x
    with np.errstate(over="ignore"):
        np.exp(e, out=e)
    e += 1
    return np.reciprocal(e, out=e)


# One line per op (see ember/ops/_common.py): the NumPy forward, then the gradient formula.
Exp = elementwise_op("Exp", quiet(np.exp), lambda g, out: g * out, saves=("result",))
Log = elementwise_op("Log", quiet(np.log), lambda g, x: g / x, saves=("self",))
Tanh = elementwise_op("Tanh", np.tanh, lambda g, y: g * (1 - y * y), saves=("result",))
Sigmoid = elementwise_op("Sigmoid", _sigmoid, lambda g, y: g * y * (1 - y), saves=("result",))
Relu = elementwise_op("Relu", lambda x: np.maximum(x, 0),
                      lambda g, y: ThresholdBackward.apply(g, y), saves=("result",))


class ThresholdBackward(Op):
    """torch's ``threshold_backward``: ``g`` where ``x > threshold``, else 0, the gradient of
    relu and threshold. A select, not ``g * mask``: a NaN in ``g`` is dropped where the input
    was cut off, as in torch. Linear in ``g``, so its own gradient is itself; for ``x`` it is
    zeros, but defined, so that a double backward reaches ``x`` (torch's zeros_like(grad))."""

    node_name = "ThresholdBackwardBackward0"
    saves = (1,)

    @staticmethod
    def forward(ctx, g, x, threshold=0.0):
        ctx.threshold = threshold
        # A NaN input keeps its gradient, as in torch.
        return keep_where(x <= threshold, g, invert=True)

    @staticmethod
    def backward(ctx, gg):
        (x,) = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (ThresholdBackward.apply(gg, x, threshold=ctx.threshold) if need[0] else None), \
            (zeros_like(gg) if need[1] else None)

exp = float_unary(Exp, "exp", "Elementwise e**x.")
log = float_unary(Log, "log", "Natural logarithm (-inf at 0, NaN below).")
tanh = float_unary(Tanh, "tanh", "Hyperbolic tangent.")
sigmoid = float_unary(Sigmoid, "sigmoid", "``1 / (1 + exp(-x))``, computed without overflow.")


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``."""
    if x.dtype is _dtype.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if x._data.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return Relu.apply(x)


# --- selection ---------------------------------------------------------------------------

class Where(Op):
    node_name = "WhereBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, cond=None):
        ctx.save_extra(cond)  # torch saves the condition, an input without a gradient
        if a.shape != cond.shape or b.shape != cond.shape:
            # The condition may broadcast a and b even where their shapes agree: the engine
            # sums each gradient back to its input's shape.
            ctx._shapes = (a.shape, b.shape)
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        (c,) = ctx.saved_tensors
        zero = g.new_zeros(())
        need = ctx.needs_input_grad
        return (where(c, g, zero) if need[0] else None), (where(c, zero, g) if need[1] else None)


def where(condition: Tensor, input=None, other=None) -> Tensor:
    """Elementwise ``input if condition else other``; with one argument, ``nonzero(as_tuple)``."""
    if input is None and other is None:
        from ember.ops.indexing_ops import nonzero

        return nonzero(condition, as_tuple=True)
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        from ember.ops.pointwise_more import _CNAME

        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_CNAME[_dtype.from_numpy_dtype(cond.dtype).name]}")
    shape = cond.shape
    for t in (input, other):  # torch's order: the shape so far is "tensor a"
        if isinstance(t, Tensor) and t._data.shape != shape:
            check_broadcast(shape, t._data.shape)
            shape = np.broadcast_shapes(shape, t._data.shape)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dt = _dtype.result_type((), (input, other))
        a, b = Tensor._make(np.array(input, dt.np)), Tensor._make(np.array(other, dt.np))
    else:
        a, b = _lhs_tensor(input, other)
        a, b = binary_args(a, b)
    for v in (input, other):
        _dtype.check_int64(v, a.dtype)
    if cond.shape != shape:
        cond = np.broadcast_to(cond, shape)
    return Where.apply(a, b, cond=cond)


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """``x.where(condition, y)`` is ``where(condition, x, y)``."""
    return where(condition, self, other)


def positive(x: Tensor) -> Tensor:
    """``+x``: the tensor itself."""
    if x.dtype is _dtype.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


_NAMES = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": div, "neg": neg, "negative": neg, "exp": exp,
    "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clone": clone, "where": where,
    "positive": positive,
}
# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Clone, Add, Sub, Rsub, RsubScalar, Mul, Div, DivScalar, Neg, Exp, Log, Tanh,
            Sigmoid, Where)

METHODS = dict(_NAMES, where=_where_method, **{
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": rsub, "__mul__": mul,
    "__rmul__": mul, "__truediv__": div, "__rtruediv__": rdiv, "__neg__": neg,
    "__pos__": positive,
})
FUNCTIONS = dict(_NAMES, rsub=rsub)
