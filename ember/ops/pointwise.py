"""Elementwise ops: arithmetic, comparisons, math functions, and dtype copies.

Each op is an ``Op``: ``forward`` on arrays right above ``backward`` on ember Tensors.
Broadcasting is undone by the engine (``broadcasts = True``), not here.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import binary_args, float_arg


class ToCopy(Op):
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype=None):
        ctx.src_dtype = x.dtype
        return x.astype(dtype.np) if dtype is not None else x.copy()

    @staticmethod
    def backward(ctx, g):
        return to_copy(g, _dtype.from_numpy_dtype(ctx.src_dtype))


def to_copy(x: Tensor, dtype: _dtype.dtype) -> Tensor:
    out = ToCopy.apply(x, dtype=dtype)
    if not dtype.is_floating_point:
        out._rg = False
        out._grad_fn = None
    return out


class Clone(Op):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, memory_format=None):
        return x.copy()

    @staticmethod
    def backward(ctx, g):
        return g


def clone(x: Tensor, *, memory_format=None) -> Tensor:
    return Clone.apply(x)


# --- arithmetic ---------------------------------------------------------------------------


class Add(Op):
    node_name = "AddBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return a + b if alpha == 1 else a + b * np.asarray(alpha, dtype=b.dtype)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha)


class Sub(Op):
    node_name = "SubBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        ctx.alpha = alpha
        return a - b if alpha == 1 else a - b * np.asarray(alpha, dtype=b.dtype)

    @staticmethod
    def backward(ctx, g):
        return g, -g if ctx.alpha == 1 else g * (-ctx.alpha)


class Rsub(Sub):
    node_name = "RsubBackward1"


class Mul(Op):
    node_name = "MulBackward0"
    broadcasts = True
    saves = (0, 1)

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

    @staticmethod
    def forward(ctx, a, b):
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = g / b if need[0] else None
        gb = -g * a / (b * b) if need[1] else None
        return ga, gb


class Neg(Op):
    node_name = "NegBackward0"

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, g):
        return -g


class Pow(Op):
    """tensor ** tensor; the scalar-exponent and scalar-base forms are subclasses."""

    node_name = "PowBackward1"
    broadcasts = True
    saves = (0, 1)
    saves_output = True

    @staticmethod
    def forward(ctx, a, b):
        return np.power(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        need = ctx.needs_input_grad
        ga = g * b * a ** (b - 1) if need[0] else None
        gb = g * out * where(a == 0, 0.0, a).log() if need[1] else None
        return ga, gb


class PowScalar(Op):
    node_name = "PowBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.exponent = exponent
        if exponent == 2:
            return a * a
        return np.power(a, np.asarray(exponent, dtype=a.dtype))

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return g * 0
        return g * e * (a if e == 2 else a ** (e - 1))


class RPowScalar(Op):
    node_name = "PowBackward2"
    saves_output = True

    @staticmethod
    def forward(ctx, b, base):
        ctx.base = base
        return np.power(np.asarray(base, dtype=b.dtype), b)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out * float(np.log(ctx.base))


def add(a, b, *, alpha=1) -> Tensor:
    a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    return Add.apply(a, b, alpha=alpha)


def sub(a, b, *, alpha=1) -> Tensor:
    a, b = _lhs_tensor(a, b)
    if a.dtype is _dtype.bool_ and (not isinstance(b, Tensor) or b.dtype is _dtype.bool_):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    a, b = binary_args(a, b)
    return Sub.apply(a, b, alpha=alpha)


def rsub(a: Tensor, b, *, alpha=1) -> Tensor:
    """``b - alpha * a`` (the reflected ``scalar - tensor``)."""
    a, b = binary_args(a, b)
    return Rsub.apply(b, a, alpha=alpha)


def mul(a, b) -> Tensor:
    a, b = _lhs_tensor(a, b)
    a, b = binary_args(a, b)
    return Mul.apply(a, b)


def div(a, b, *, rounding_mode: str | None = None) -> Tensor:
    a, b = _lhs_tensor(a, b)
    if rounding_mode is not None:
        from ember.ops.pointwise_more import floor_divide, trunc

        if rounding_mode == "floor":
            return floor_divide(a, b)
        if rounding_mode == "trunc":
            return trunc(div(a, b)) if a.is_floating_point() else _int_trunc_div(a, b)
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    a, b = binary_args(a, b, float_result=True)
    return Div.apply(a, b)


def _int_trunc_div(a, b):
    a, b = binary_args(a, b)
    return Tensor._make(np.trunc(np.true_divide(a._data, b._data)).astype(a._data.dtype))


def rdiv(a: Tensor, b) -> Tensor:
    a, b = binary_args(a, b, float_result=True)
    return Div.apply(b, a)


def neg(x: Tensor) -> Tensor:
    if x.dtype is _dtype.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return Neg.apply(x)


def pow(a, b) -> Tensor:
    if not isinstance(a, Tensor):
        return rpow(b, a)
    if not isinstance(b, Tensor):
        dt = _dtype.result_type((a,), (b,))
        from ember.ops._promote import cast

        return PowScalar.apply(cast(a, dt), exponent=b)
    a, b = binary_args(a, b)
    return Pow.apply(a, b)


def rpow(b: Tensor, base) -> Tensor:
    """``base ** b`` for a Python-number base."""
    dt = _dtype.result_type((b,), (base,))
    from ember.ops._promote import cast

    return RPowScalar.apply(cast(b, dt), base=base)


def _lhs_tensor(a, b):
    if isinstance(a, Tensor):
        return a, b
    from ember.ops._promote import to_tensor

    return to_tensor(a, like=b if isinstance(b, Tensor) else None), b


# --- unary math ---------------------------------------------------------------------------


class Exp(Op):
    node_name = "ExpBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x):
        return np.exp(x)

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


class Log(Op):
    node_name = "LogBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x):
        return np.log(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / x


class Tanh(Op):
    node_name = "TanhBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x):
        return np.tanh(x)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class Sigmoid(Op):
    node_name = "SigmoidBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x):
        # exp of a non-positive number never overflows: split by sign for stability.
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)


class Relu(Op):
    node_name = "ReluBackward0"
    saves_output = True

    @staticmethod
    def forward(ctx, x):
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y > 0)


def exp(x: Tensor) -> Tensor:
    return Exp.apply(float_arg(x))


def log(x: Tensor) -> Tensor:
    return Log.apply(float_arg(x))


def tanh(x: Tensor) -> Tensor:
    return Tanh.apply(float_arg(x))


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(float_arg(x))


def relu(x: Tensor) -> Tensor:
    return Relu.apply(x)


# --- comparisons and selection (not differentiable in their boolean output) --------------


def _compare(ufunc):
    def op(a, b) -> Tensor:
        a, b = _lhs_tensor(a, b)
        a, b = binary_args(a, b)
        return Tensor._make(ufunc(a._data, b._data))
    op.__name__ = ufunc.__name__
    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)


class Where(Op):
    node_name = "WhereBackward0"
    broadcasts = True

    @staticmethod
    def forward(ctx, a, b, cond=None):
        ctx.cond = cond
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx, g):
        c = Tensor._make(ctx.cond)
        zero = g.new_zeros(())
        need = ctx.needs_input_grad
        return (where(c, g, zero) if need[0] else None), (where(c, zero, g) if need[1] else None)


def where(condition: Tensor, input=None, other=None) -> Tensor:
    """Elementwise ``input if condition else other``; with one argument, ``nonzero(as_tuple)``."""
    if input is None and other is None:
        from ember.ops.indexing import nonzero

        return nonzero(condition, as_tuple=True)
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    if cond.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype.from_numpy_dtype(cond.dtype).name.capitalize()}")
    a, b = _lhs_tensor(input, other)
    a, b = binary_args(a, b)
    if cond.shape != np.broadcast_shapes(cond.shape, a._data.shape, b._data.shape):
        shape = np.broadcast_shapes(cond.shape, a._data.shape, b._data.shape)
        cond = np.broadcast_to(cond, shape)
    return Where.apply(a, b, cond=cond)


METHODS = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": div, "neg": neg, "negative": neg, "pow": pow, "exp": exp,
    "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clone": clone, "eq": eq,
    "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt, "less": lt,
    "greater_equal": ge, "less_equal": le, "not_equal": ne, "where": where,
    "__add__": add, "__radd__": lambda a, b: add(a, b), "__sub__": sub,
    "__rsub__": lambda a, b: rsub(a, b), "__mul__": mul, "__rmul__": lambda a, b: mul(a, b),
    "__truediv__": div, "__rtruediv__": rdiv, "__neg__": neg, "__pow__": pow,
    "__rpow__": rpow, "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt,
    "__ge__": ge, "__pos__": lambda a: a,
}
FUNCTIONS = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": div, "neg": neg, "negative": neg, "pow": pow, "exp": exp,
    "log": log, "tanh": tanh, "sigmoid": sigmoid, "relu": relu, "clone": clone, "eq": eq,
    "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt, "less": lt,
    "greater_equal": ge, "less_equal": le, "not_equal": ne, "where": where, "rsub": rsub,
}
