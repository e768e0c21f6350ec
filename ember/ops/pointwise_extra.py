"""More elementwise functions: frexp, gcd, lcm, nextafter.

frexp's mantissa has a gradient (``g / 2**exponent``); gcd and lcm are integer-only and have
none; nextafter passes the gradient to ``input`` where ``input != other`` (0 where they are equal,
the result then being ``other``) and gives ``other`` zeros, as torch.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._common import elementwise_op
from ember.ops._promote import binary_args
from ember.ops.pointwise import where
from ember.ops.pointwise_more import need_tensor, not_for
from ember.return_types import frexp as _frexp_result


class Frexp(Op):
    node_name = "FrexpBackward0"

    @staticmethod
    def forward(ctx, x):
        mantissa, exponent = np.frexp(x)
        ctx.save_extra(exponent)
        return mantissa, exponent.astype(np.int32, copy=False)

    @staticmethod
    def backward(ctx, g, g_exponent=None):
        exponent = ctx.saved_tensors[-1]
        return g / exponent.exp2().to(g.dtype)


def frexp(input: Tensor):
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent`` and 0.5 <= |mantissa|
    < 1 (int32 exponents)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return _frexp_result(Frexp.apply(input))


def _integer_pair(name: str, a: Tensor, other: Tensor):
    need_tensor(name, other)
    a, b = binary_args(a, other)
    if a.dtype.is_floating_point or a.dtype is _dtype.bool_:
        raise not_for(f"{name}_cpu", a.dtype)
    return a, b


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0)."""
    a, b = _integer_pair("gcd", input, other)
    return Tensor._make(np.gcd(a._data, b._data))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple, elementwise (non-negative; wraps on overflow, as torch)."""
    a, b = _integer_pair("lcm", input, other)
    x, y = a._data, b._data
    g = np.gcd(x, y)
    with np.errstate(over="ignore"):  # torch's |a / gcd * b|: the product wraps, then abs
        out = np.abs(x // np.where(g == 0, 1, g) * y)
    return Tensor._make(np.where(g == 0, 0, out).astype(x.dtype, copy=False))


def _nextafter_grad(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return where(x != y, g, g.new_zeros(()))


# other's gradient is zeros of g's shape (the engine sums it to other's): no saved tensor read
Nextafter = elementwise_op("Nextafter", np.nextafter, _nextafter_grad,
                           lambda g, x, y: g.new_zeros(g.shape), saves=("self", "other"))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next representable float after ``input`` towards ``other``."""
    need_tensor("nextafter", other)
    a, b = binary_args(input, other)
    if not a.dtype.is_floating_point:
        raise not_for("nextafter_cpu", a.dtype)
    return Nextafter.apply(a, b)


FUNCTIONS = {"frexp": frexp, "gcd": gcd, "lcm": lcm, "nextafter": nextafter}
METHODS = dict(FUNCTIONS)
