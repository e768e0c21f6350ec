"""Shared plumbing for torch.special's Cephes-derived functions (``ember.ops.bessel_cephes``,
``ember.ops.orthogonal_polynomials``, ``ember.ops.zeta``): argument checks with torch's errors,
torch's result dtype, and masked evaluation of piecewise formulas over flat arrays.

torch evaluates these kernels element by element in the result dtype; here each branch of a
piecewise formula runs as NumPy passes over the elements that take it, in the same dtype.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.ops._promote import check_broadcast, float_arg
from ember.ops.pointwise_more import not_for

_NUMBER = (int, float, bool)


def unary_input(name: str, input, arg: str = "input") -> np.ndarray:
    """``input`` as an array of torch's result dtype (integers and bool: the default float);
    float16, bfloat16 and complex have no kernel in torch. ``arg``: the parameter's name."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{name}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    t = float_arg(input)
    if t.dtype not in (_dtype.float32, _dtype.float64):
        raise not_for(f"{name}_cpu", t.dtype)
    return t._data


def _type_name(v) -> str:
    return "Tensor" if isinstance(v, Tensor) else type(v).__name__


def check_pair(name: str, names: tuple[str, str], a, b) -> None:
    """torch's TypeError unless ``a`` and ``b`` are tensors or one is a Python number;
    ``names``: the two parameters' names in the (Tensor, Tensor) signature."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if (ta or tb) and (ta or isinstance(a, _NUMBER)) and (tb or isinstance(b, _NUMBER)):
        return
    first, second = names
    number_first = "self" if first == "input" else first  # torch's Scalar-self overload
    raise TypeError(
        f"special_{name}() received an invalid combination of arguments - got "
        f"({_type_name(a)}, {_type_name(b)}), but expected one of:\n"
        f" * (Tensor {first}, Tensor {second}, *, Tensor out = None)\n"
        f" * (Number {number_first}, Tensor {second}, *, Tensor out = None)\n"
        f" * (Tensor {first}, Number {second}, *, Tensor out = None)\n")


def pair_dtype(name: str, a, b) -> _dtype.dtype:
    """torch's result dtype of ``a`` and ``b`` (Python numbers weak); integers and bool
    compute in the default float dtype; only float32 and float64 have kernels."""
    dt = _dtype.result_type(tuple(v for v in (a, b) if isinstance(v, Tensor)),
                            tuple(v for v in (a, b) if not isinstance(v, Tensor)))
    if dt._kind < 2:
        dt = _dtype.get_default_dtype()
    if dt not in (_dtype.float32, _dtype.float64):
        raise not_for(f"{name}_cpu", dt)
    return dt


def binary_inputs(name: str, names: tuple[str, str], a, b) -> tuple:
    """``a`` and ``b`` (tensors, or one a Python number) promoted to torch's result dtype and
    broadcast, as flat arrays; and the broadcast shape."""
    check_pair(name, names, a, b)
    dt = pair_dtype(name, a, b)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        check_broadcast(a._data.shape, b._data.shape)
    arrays = [v._data if isinstance(v, Tensor) else np.array(v) for v in (a, b)]
    shape = np.broadcast_shapes(*(x.shape for x in arrays))
    xa, xb = (np.broadcast_to(x.astype(dt.np, copy=False), shape).ravel() for x in arrays)
    return xa, xb, shape


CHUNK = 1 << 16


def blockwise(fn, *flat: np.ndarray) -> np.ndarray:
    """``fn(*flat)`` a block of CHUNK elements at a time: the tens of passes over each block's
    temporaries then stay in cache (~2-3x faster than over a large array)."""
    n = flat[0].size
    if n <= CHUNK:
        return fn(*flat)
    out = None
    for start in range(0, n, CHUNK):
        part = fn(*(a[start:start + CHUNK] for a in flat))
        if out is None:
            out = np.empty(n, part.dtype)
        out[start:start + CHUNK] = part
    return out


class Piecewise:
    """A flat result filled case by case, first matching case wins (torch's chain of ``if``
    ... ``return``): ``case(mask, value)`` sets the elements that match ``mask`` and no earlier
    case; ``value`` is a scalar, a full-size array, or a function of the selected indices."""

    __slots__ = ("out", "todo")

    def __init__(self, size: int, dtype) -> None:
        self.out = np.empty(size, dtype)
        self.todo = np.ones(size, bool)

    def case(self, mask, value) -> None:
        hit = self.todo & mask
        if hit.any():
            idx = slice(None) if hit.all() else np.flatnonzero(hit)  # a slice is a view
            if callable(value):
                self.out[idx] = value(idx)
            else:
                self.out[idx] = value if np.ndim(value) == 0 else value[idx]
        self.todo &= ~hit

    def rest(self, value: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """The remaining elements; returns the result."""
        if self.todo.any():
            idx = slice(None) if self.todo.all() else np.flatnonzero(self.todo)
            self.out[idx] = value(idx)
        return self.out


def polevl(z: np.ndarray, coefs: tuple) -> np.ndarray:
    """Horner's rule, highest coefficient first, in ``z``'s dtype (torch's coefficient tables
    are ``static const T``: Python floats are weak, so they round to ``z``'s dtype)."""
    s = np.zeros_like(z)
    for c in coefs:
        s *= z
        s += c
    return s


def chebyshev_series(z: np.ndarray, coefs: tuple) -> np.ndarray:
    """Cephes' ``chbevl`` as torch inlines it: returns ``0.5 * (b0 - b2)`` of Clenshaw's
    recurrence ``b = z * b1 - b2 + c`` (``z`` is twice the Chebyshev argument)."""
    p = np.zeros_like(z)
    q = np.zeros_like(z)
    b = np.full_like(z, coefs[0])
    for c in coefs[1:]:
        p, q = q, b
        b = z * q - p + c
    return 0.5 * (b - p)


def tensor(out: np.ndarray, shape: tuple) -> Tensor:
    return Tensor._make(out.reshape(shape))
