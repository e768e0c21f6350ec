"""In-place ops (``add_``, ``mul_``, ``+=``, ``exp_``, ``zero_``, ...).

Each is its out-of-place op written back into the tensor's storage. Under autograd the tensor's
history is rebased onto the new node (as torch does) and its version counter is bumped, so a
saved copy of the old value is detected at backward.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._random import rng
from ember._tensor import Tensor
from ember.autograd.grad_mode import STATE
from ember.autograd.graph import OUT
from ember.ops._promote import float_arg
from ember.ops.pointwise_math import AcoshInplace, AsinhInplace, AtanhInplace
from ember.ops.pointwise_more import _CNAME

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."


def _can_cast(src: _dtype.dtype, dst: _dtype.dtype) -> bool:
    return src._kind <= dst._kind


def check_inplace(x: Tensor) -> None:
    """Refuse an in-place write that would corrupt autograd (torch's errors)."""
    if not STATE.enabled:
        return
    if x._rg and x._grad_fn is None:
        raise RuntimeError(LEAF_INPLACE)
    # A real view of such a leaf requires grad itself; detach() aliases do not, and may be
    # written (p.detach().zero_() is common).
    if x._base is not None and x._rg and x._base._rg and x._base._grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def apply_inplace(x: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run out-of-place ``fn(x, *args)`` and write the result into ``x``'s storage."""
    check_inplace(x)
    tracked = STATE.enabled and (x._rg or any(isinstance(a, Tensor) and a._rg for a in args))
    if not tracked:
        prev = STATE.enabled
        STATE.enabled = False
        try:
            r = fn(x, *args, **kwargs)
        finally:
            STATE.enabled = prev
        _write(x, r)
        return x
    if x._base is not None and (x._rg or not x._base._rg):  # a view: torch's CopySlices rebase
        from ember.ops.indexing import inplace_on_view
        return inplace_on_view(x, fn, _write, *args, **kwargs)
    # A snapshot holding x's old values at x's place in the graph, so that a backward that
    # needs the old input still finds it.
    src = Tensor._make(x._data.copy(), x._grad_fn, x._output_nr)
    src._rg = x._rg
    r = fn(src, *args, **kwargs)
    _write(x, r)
    node = r._grad_fn
    x._grad_fn, x._output_nr, x._rg = node, r._output_nr, r._rg
    if node is not None and node._saved:
        # A saved output now lives in x: later in-place writes to x must invalidate it.
        node._saved = tuple(
            (OUT, (x._data, x._vc, x._vc[0], e[3])) if t is OUT and e[0] is r._data else (t, e)
            for t, e in node._saved)
    return x


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
                and not kwargs and d.dtype.kind == "f":
            if type(other) is Tensor and other._data.dtype == d.dtype and \
                    other._data.ndim <= d.ndim:
                o = other._data
            elif type(other) in (int, float):
                o = np.asarray(other, dtype=d.dtype)
            else:
                o = None
            if o is not None and (o.shape == d.shape or
                                  np.broadcast_shapes(o.shape, d.shape) == d.shape):
                check_inplace(self)
                if alpha != 1:
                    o = o * np.asarray(alpha, dtype=d.dtype)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ufunc(d, o, out=d)
                self._vc[0] += 1
                return self
        return slow(self, other, alpha=alpha, **kwargs) if name in ("add", "sub") else \
            slow(self, other, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``."
    return method


def zero_(x: Tensor) -> Tensor:
    """Fill with zeros."""
    return fill_(x, 0)


def fill_(x: Tensor, value) -> Tensor:
    """Fill with a number or a 0-d tensor."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        if value._rg and STATE.enabled:
            return apply_inplace(x, lambda t, v: t * 0 + v.to(t.dtype), value)
        value = value._data
    check_inplace(x)
    if STATE.enabled and x._rg:
        return apply_inplace(x, lambda t: t * 0 + value)
    x._data[...] = value
    x._vc[0] += 1
    return x


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
    if STATE.enabled and (src._rg or x._rg):
        return apply_inplace(x, lambda t, s: s.to(t.dtype).expand_as(t) + t * 0, src)
    check_inplace(x)
    np.copyto(x._data, np.broadcast_to(src._data, xs), casting="unsafe")
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


# --- random fills --------------------------------------------------------------------------


def _fill_random(x: Tensor, values) -> Tensor:
    check_inplace(x)
    x._data[...] = values
    x._vc[0] += 1
    return x


def _float_draw(x: Tensor, kernel: str, draw):
    if not x.dtype.is_floating_point:
        from ember.ops.pointwise_more import not_for

        raise not_for(kernel, x.dtype)
    dt = x._data.dtype if x._data.dtype in (np.float32, np.float64) else np.float32
    return draw(dt)


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from U[a, b)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    r = rng(generator)
    v = _float_draw(x, "check_uniform_bounds", lambda dt: r.random(x._data.shape, dtype=dt))
    return _fill_random(x, v * (b - a) + a if (a, b) != (0.0, 1.0) else v)


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    r = rng(generator)
    v = _float_draw(x, "normal_kernel_cpu",
                    lambda dt: r.standard_normal(x._data.shape, dtype=dt))
    return _fill_random(x, v * std + mean if (mean, std) != (0.0, 1.0) else v)


def exponential_(x: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from the exponential distribution with rate ``lambd``."""
    if not x.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           "dtype must be a floating point but you specified "
                           f"{_CNAME[x.dtype.name]}")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    v = rng(generator).standard_exponential(x._data.shape, dtype=np.float32
                                            if x.dtype is not _dtype.float64 else np.float64)
    return _fill_random(x, v / lambd)


def bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws that are 1 with probability ``p`` (a number or a tensor)."""
    pa = p._data if isinstance(p, Tensor) else p
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if isinstance(p, Tensor) and p.numel() and not ((pa >= 0) & (pa <= 1)).all():
        raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
    return _fill_random(x, rng(generator).random(x._data.shape) < pa)


def geometric_(x: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill_random(x, rng(generator).geometric(p, x._data.shape))


def random_(x: Tensor, from_=None, to=None, *, generator=None) -> Tensor:
    """``random_(to)``: integers in [0, to); ``random_(from, to)``; ``random_()``: [0, 2**m]
    where m is the dtype's mantissa width (or its max for integer dtypes)."""
    if to is None and from_ is not None:
        from_, to = 0, from_
    lo = 0 if from_ is None else int(from_)
    if to is None:
        d = x._data.dtype
        hi = 2 ** (np.finfo(d).nmant + 1) + 1 if d.kind == "f" else 2 if d.kind == "b" else \
            int(np.iinfo(d).max) + 1
    else:
        hi = int(to)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                           f">= to={hi}")
    return _fill_random(x, rng(generator).integers(lo, hi, x._data.shape))


METHODS.update({
    "zero_": zero_, "fill_": fill_, "copy_": copy_, "float_power_": float_power_,
    "uniform_": uniform_, "normal_": normal_, "exponential_": exponential_,
    "bernoulli_": bernoulli_, "geometric_": geometric_, "random_": random_,
    "__iadd__": METHODS["add_"], "__isub__": METHODS["sub_"], "__imul__": METHODS["mul_"],
    "__itruediv__": METHODS["div_"], "__ipow__": METHODS["pow_"],
    "__ifloordiv__": METHODS["floor_divide_"], "__imod__": METHODS["remainder_"],
    "__iand__": METHODS["bitwise_and_"], "__ior__": METHODS["bitwise_or_"],
    "__ixor__": METHODS["bitwise_xor_"], "__ilshift__": METHODS["bitwise_left_shift_"],
    "__irshift__": METHODS["bitwise_right_shift_"],
})
# In-place forms that torch offers only as Tensor methods, not as ``torch.<name>``.
_METHOD_ONLY = {
    "absolute_", "add_", "addcdiv_", "addcmul_", "arctan2_", "atan2_", "bernoulli_",
    "bitwise_and_", "bitwise_left_shift_", "bitwise_not_", "bitwise_or_", "bitwise_right_shift_",
    "bitwise_xor_", "copy_", "copysign_", "div_", "divide_", "eq_", "erfinv_", "exponential_",
    "float_power_", "floor_divide_", "fmod_", "ge_", "geometric_", "greater_", "greater_equal_",
    "gt_", "hypot_", "le_", "lerp_", "less_", "less_equal_", "logical_and_", "logical_not_",
    "logical_or_", "logical_xor_", "lt_", "mul_", "multiply_", "ne_", "normal_", "not_equal_",
    "pow_", "random_", "remainder_", "sgn_", "sign_", "sub_", "subtract_", "true_divide_",
    "uniform_",
}
FUNCTIONS = {name: fn for name, fn in METHODS.items()
             if not name.startswith("__") and name not in _METHOD_ONLY}
