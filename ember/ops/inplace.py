"""In-place ops (``add_``, ``mul_``, ``+=``, ``zero_``, ...).

Each is its out-of-place op written back into the tensor's storage. Under autograd the tensor's
history is rebased onto the new node (as torch does) and its version counter is bumped, so a
saved copy of the old value is detected at backward.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.grad_mode import STATE

LEAF_INPLACE = ("a leaf Variable that requires grad is being used in an in-place operation.")


def _can_cast(src, dst) -> bool:
    return src._kind <= dst._kind


def check_inplace(x: Tensor) -> None:
    """Refuse an in-place write that would corrupt autograd (torch's errors)."""
    if STATE.enabled and x._rg and x._grad_fn is None:
        raise RuntimeError(LEAF_INPLACE)
    if x._base is not None and STATE.enabled and x._base._rg and x._base._grad_fn is None:
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
    if x._base is not None and x._base._rg:
        raise NotImplementedError("ember: in-place ops on a view of a tensor that requires grad "
                                  "are not supported yet; apply the op to the base tensor")
    # A snapshot holding x's old values at x's place in the graph, so that a backward that
    # needs the old input still finds it.
    src = Tensor._make(x._data.copy(), x._grad_fn, x._output_nr)
    src._rg = x._rg
    r = fn(src, *args, **kwargs)
    _write(x, r)
    x._grad_fn, x._output_nr, x._rg = r._grad_fn, r._output_nr, r._rg
    return x


def _write(x: Tensor, r: Tensor) -> None:
    if not _can_cast(r.dtype, x.dtype):
        raise RuntimeError(f"result type {r.dtype.name.capitalize()} can't be cast to the "
                           f"desired output type {x.dtype.name.capitalize()}")
    if r._data.shape != x._data.shape:
        try:
            np.broadcast_to(r._data, x._data.shape)
        except ValueError:
            raise RuntimeError(
                f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                f"{list(np.broadcast_shapes(x._data.shape, r._data.shape))}") from None
    np.copyto(x._data, r._data, casting="unsafe")
    x._vc[0] += 1


def _make_inplace(name: str):
    def method(self, *args, **kwargs):
        return apply_inplace(self, getattr(Tensor, name), *args, **kwargs)
    method.__name__ = name + "_"
    return method


def zero_(x: Tensor) -> Tensor:
    check_inplace(x)
    x._data[...] = 0
    x._vc[0] += 1
    return x


def fill_(x: Tensor, value) -> Tensor:
    if isinstance(value, Tensor) and value._rg and STATE.enabled:
        return apply_inplace(x, lambda t, v: t * 0 + v, value)
    check_inplace(x)
    x._data[...] = value._data if isinstance(value, Tensor) else value
    x._vc[0] += 1
    return x


def copy_(x: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    if STATE.enabled and (src._rg or x._rg):
        return apply_inplace(x, lambda t, s: s.to(t.dtype).expand_as(t) + t * 0, src)
    check_inplace(x)
    try:
        np.copyto(x._data, np.broadcast_to(src._data, x._data.shape), casting="unsafe")
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({x.shape[-1] if x.ndim else 1}) must match "
                           f"the size of tensor b ({src.shape[-1] if src.ndim else 1}) at "
                           "non-singleton dimension") from None
    x._vc[0] += 1
    return x


INPLACE_OF = ("add", "sub", "mul", "div", "pow", "exp", "log", "tanh", "sigmoid", "relu", "neg")

METHODS = {name + "_": _make_inplace(name) for name in INPLACE_OF}
METHODS.update({
    "zero_": zero_, "fill_": fill_, "copy_": copy_,
    "__iadd__": METHODS["add_"], "__isub__": METHODS["sub_"], "__imul__": METHODS["mul_"],
    "__itruediv__": METHODS["div_"], "__ipow__": METHODS["pow_"],
})
FUNCTIONS = {"relu_": METHODS["relu_"]}
