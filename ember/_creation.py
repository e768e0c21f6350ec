"""Tensor factories: tensor, zeros, ones, full, arange, linspace, ... and their ``_like`` forms.

Random factories (rand, randn, normal, ...) live in ``ember._random``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember import _backend, _dtype
from ember._backend import CPU, check_device, to_device
from ember._tensor import Tensor

_SEQ = (list, tuple, range, np.ndarray)


def legacy_name(dt: _dtype.dtype) -> str:
    """torch's scalar-type name used in kernel errors: 'Long', 'Float', ..."""
    return _dtype.TYPE_NAMES[dt].split(".")[1].removesuffix("Tensor")


# --- shared argument handling --------------------------------------------------------------


def parse_size(args: tuple, fname: str, size=None) -> tuple:
    """torch's ``*size`` argument: ints, or one tuple / list / Size (or ``size=``)."""
    if size is not None:
        args = (size,)
    if not args:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "size"')
    seq = args[0] if len(args) == 1 and isinstance(args[0], list | tuple) else args
    out = []
    for i, s in enumerate(seq):
        if isinstance(s, Tensor) and s._data.ndim == 0 and s._data.dtype.kind in "iu":
            s = int(s._data)
        if not isinstance(s, int | np.integer) or isinstance(s, bool):
            if seq is args and len(args) == 1:
                raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, "
                                f"not {type(s).__name__}")
            raise TypeError(f"{fname}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"")
        out.append(int(s))
    for s in out:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {out}")
    if math.prod(out) > 0x7FFFFFFFFFFFFFFF:  # NumPy's "array is too big" otherwise
        raise RuntimeError(f"Storage size calculation overflowed with sizes={out}")
    return tuple(out)


def finish(arr: np.ndarray, requires_grad: bool = False, device=None) -> Tensor:
    """Wrap a fresh (CPU) array as a leaf tensor on ``device`` (default: the default
    device), checking ``requires_grad``."""
    if device is not None:
        arr = to_device(arr, check_device(device))
    elif _backend._default_device is not CPU:
        arr = to_device(arr, _backend._default_device)
    t = Tensor._make(arr)
    if requires_grad:
        if arr.dtype.kind not in "fc" and not t.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._rg = True
    return t


def dtype_or(dtype, default: _dtype.dtype | None = None, fname: str | None = None
             ) -> _dtype.dtype:
    if dtype is not None:
        return _dtype.to_dtype(dtype, fname)
    return default if default is not None else _dtype.get_default_dtype()


def _number(v):
    """A Python number from a Python / NumPy number or a one-element tensor."""
    if isinstance(v, Tensor):
        return v.item()
    if isinstance(v, np.generic | np.ndarray):
        return v.item()
    _dtype.check_int(v)
    return v


# --- tensor(): data to array with torch's dtype inference ----------------------------------


def _leaf_dtype(x) -> _dtype.dtype:
    if isinstance(x, np.generic | np.ndarray):  # first: np.float64 is a float subclass
        return _dtype.from_numpy_dtype(x.dtype, user=True)
    if isinstance(x, bool):
        return _dtype.bool_
    if isinstance(x, int):
        return _dtype.int64
    if isinstance(x, float):
        return _dtype.get_default_dtype()
    if isinstance(x, complex):
        return _dtype.default_complex()
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _leaf_value(x):
    if isinstance(x, Tensor | np.ndarray):
        arr = x._data if isinstance(x, Tensor) else x
        if arr.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return arr.reshape(()).item()
    return x


def _is_seq(x) -> bool:
    return isinstance(x, _SEQ) and not (isinstance(x, np.ndarray) and x.ndim == 0)


def _shape_of(data) -> list:
    """Shape read off the first element at each depth, as torch does."""
    shape = []
    while _is_seq(data):
        shape.append(len(data))
        if not len(data):
            break
        data = data[0]
    return shape


def _flatten(seq, dim: int, shape: list, flat: list) -> None:
    if len(seq) != shape[dim]:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} "
                         f"(got {len(seq)})")
    if dim == len(shape) - 1:
        for x in seq:
            if _is_seq(x):
                raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as a "
                                "number")
        flat.extend(seq)
        return
    for x in seq:
        if not _is_seq(x):
            raise TypeError("not a sequence")
        _flatten(x, dim + 1, shape, flat)


def array_from_data(data, dt: _dtype.dtype | None) -> np.ndarray:
    """A new array holding ``data`` (numbers, nested sequences, arrays, tensors).

    Without ``dt`` the dtype is inferred as torch does: Python bools, ints and floats give
    bool, int64 and the default float dtype; NumPy scalars and tensors keep their own dtype;
    all are combined with ``promote_types``.
    """
    if isinstance(data, Tensor):
        arr = data._data
        return arr.astype(dt.np) if dt is not None else arr.copy()
    if isinstance(data, np.ndarray):
        src = _dtype.from_numpy_dtype(data.dtype, user=True)
        return np.array(data, dtype=(dt or src).np)
    if not _is_seq(data):
        leaf_dt = _leaf_dtype(data)
        # Through float64, as for sequences: tensor(0.1, dtype=float64) is exactly 0.1.
        via = np.float64 if leaf_dt.is_floating_point else leaf_dt.np
        with np.errstate(over="ignore"):  # 1e40 in float32 is inf, silently, as in torch
            return np.array(_leaf_value(data), dtype=via).astype((dt or leaf_dt).np)
    shape = _shape_of(data)
    flat: list = []
    if shape and shape[0]:
        _flatten(data, 0, shape, flat)
    kinds = {type(x) for x in flat}
    found = None
    special = any(issubclass(k, Tensor | np.generic | np.ndarray) for k in kinds)
    if special:
        for x in flat:
            d = _leaf_dtype(x)
            found = d if found is None else _dtype.promote_types(found, d)
        flat = [_leaf_value(x) for x in flat]
    else:
        for k in kinds:
            d = _leaf_dtype(k())
            found = d if found is None else _dtype.promote_types(found, d)
    found = found or _dtype.get_default_dtype()
    try:
        wide = np.float64 if found.is_floating_point else np.complex128 if found.is_complex \
            else found.np
        arr = np.array(flat, dtype=wide)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    return arr.reshape(shape).astype((dt or found).np, copy=False)


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Copy ``data`` (nested lists, numbers, arrays, tensors) into a new leaf tensor.

    >>> ember.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    """
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
            "requires_grad_(True), rather than torch.tensor(sourceTensor).",
            UserWarning, stacklevel=2)
    dt = _dtype.to_dtype(dtype, "tensor") if dtype is not None else None
    return finish(array_from_data(data, dt), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like tensor(), but shares memory with a NumPy array or tensor when it can."""
    dt = _dtype.to_dtype(dtype, "as_tensor") if dtype is not None else None
    dev = check_device(device) if device is not None else None
    if isinstance(data, Tensor):
        return data.to(dtype=dt, device=dev)
    if isinstance(data, np.ndarray) and (dt is None or data.dtype == dt.np) and dev in (None, CPU):
        return from_numpy(data)
    return finish(array_from_data(data, dt), device=dev)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (writes to either show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype, user=True)
    return Tensor._make(ndarray)


# --- filled tensors ------------------------------------------------------------------------


def zeros(*args, size=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])``."""
    shape = parse_size(args, "zeros", size)
    return finish(np.zeros(shape, dtype_or(dtype, fname="zeros").np), requires_grad, device)


def ones(*args, size=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ones."""
    shape = parse_size(args, "ones", size)
    return finish(np.ones(shape, dtype_or(dtype, fname="ones").np), requires_grad, device)


def empty(*args, size=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor."""
    shape = parse_size(args, "empty", size)
    return finish(np.empty(shape, dtype_or(dtype, fname="empty").np), requires_grad, device)


def _fill_dtype(fill_value) -> _dtype.dtype:
    return _leaf_dtype(_number(fill_value))


def full(size, fill_value, *, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value when not given."""
    if not isinstance(size, list | tuple):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    shape = parse_size((size,), "full")
    dt = dtype_or(dtype, _fill_dtype(fill_value), "full")
    return finish(_filled(shape, _number(fill_value), dt), requires_grad, device)


def _filled(shape: tuple, value, dt: _dtype.dtype) -> np.ndarray:
    _dtype.check_int64(value, dt)
    if dt._kind >= 2 or dt is _dtype.bool_:
        return np.full(shape, value, dt.np)
    # Going through an int64/float64 scalar keeps C-style truncation and wrapping
    # (full((1,), -1, dtype=uint8) gives 255) where NumPy would raise.
    src = np.array(value, dtype=np.float64 if isinstance(value, float) else np.int64)
    return np.full(shape, src.astype(dt.np))


def _like_args(x, fname: str, dtype) -> _dtype.dtype:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return dtype_or(dtype, x.dtype, fname)


def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    dt = _like_args(input, "zeros_like", dtype)
    return finish(np.zeros(input._data.shape, dt.np), requires_grad, device or input.device)


def ones_like(input: Tensor, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    dt = _like_args(input, "ones_like", dtype)
    return finish(np.ones(input._data.shape, dt.np), requires_grad, device or input.device)


def empty_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    dt = _like_args(input, "empty_like", dtype)
    return finish(np.empty(input._data.shape, dt.np), requires_grad, device or input.device)


def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    dt = _like_args(input, "full_like", dtype)
    return finish(_filled(input._data.shape, _number(fill_value), dt), requires_grad,
                  device or input.device)


# --- ranges --------------------------------------------------------------------------------


def arange(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end``; length ``ceil((end-start)/step)``.

    >>> ember.arange(1, 2.5, 0.5)
    tensor([1.0000, 1.5000, 2.0000])
    """
    if end is None:
        start, end = 0, start
    vals = [_number(v) for v in (start, end, step)]
    is_float = any(isinstance(v, float) for v in vals)
    dt = dtype_or(dtype, _dtype.get_default_dtype() if is_float else _dtype.int64, "arange")
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if not dt.is_floating_point:
        for v in vals:
            _dtype.check_int64(v, dt)
        vals = [int(v) for v in vals]  # integer results compute in integers, as torch
        if vals[2] == 0:
            raise ValueError("step must be nonzero")
    start, end, step = vals
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = math.ceil((end - start) / step)
    if dt.is_floating_point:
        arr = (start + step * np.arange(n, dtype=np.float64)).astype(dt.np)
    else:
        arr = (start + step * np.arange(n, dtype=np.int64)).astype(dt.np)
    return finish(arr, requires_grad, device)


def _lin_values(start, end, steps: int, dt: _dtype.dtype) -> np.ndarray:
    """torch's linspace kernel, in float64: start and end are first cast to the dtype, the
    step is computed in the dtype's precision; the first half counts up from start and the
    second down from end, so both endpoints are exact."""
    if dt.is_floating_point:
        work = dt.np.type if dt is _dtype.float64 else np.float32
        start, end = work(start), work(end)
        step = (end - start) / work(max(steps - 1, 1))
    else:
        start, end = float(int(start)), float(int(end))
        step = (end - start) / max(steps - 1, 1)
    idx = np.arange(steps)
    half = steps // 2 if steps > 1 else steps
    up = np.float64(start) + np.float64(step) * idx[:half]
    down = np.float64(end) - np.float64(step) * (steps - idx[half:] - 1)
    return np.concatenate([up, down])


def _check_steps(steps, fname: str) -> int:
    if not isinstance(steps, int | np.integer) or isinstance(steps, bool):
        raise TypeError(f"{fname}(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


def linspace(start, end, steps: int, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    steps = _check_steps(steps, "linspace")
    dt = dtype_or(dtype, fname="linspace")
    arr = _lin_values(_number(start), _number(end), steps, dt)
    return finish(arr.astype(dt.np), requires_grad, device)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    steps = _check_steps(steps, "logspace")
    dt = dtype_or(dtype, fname="logspace")
    arr = np.power(float(base), _lin_values(_number(start), _number(end), steps, dt))
    return finish(arr.astype(dt.np), requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype=None, layout=None, device=None,
        requires_grad: bool = False) -> Tensor:
    """A 2-d tensor with ones on the diagonal."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return finish(np.eye(n, m, dtype=dtype_or(dtype, fname="eye").np), requires_grad, device)


# --- Tensor.new_* --------------------------------------------------------------------------


def _new(factory, name: str):
    def method(self, *size, dtype=None, device=None, requires_grad: bool = False,
               layout=None, pin_memory: bool = False):
        return factory(*size, dtype=dtype or self.dtype, device=device or self.device,
                       requires_grad=requires_grad)
    method.__name__ = name
    method.__doc__ = f"``{factory.__name__}`` with this tensor's dtype and device by default."
    return method


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new leaf tensor from ``data``, with this tensor's dtype and device by default."""
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


METHODS = {
    "new_zeros": _new(zeros, "new_zeros"), "new_ones": _new(ones, "new_ones"),
    "new_empty": _new(empty, "new_empty"), "new_tensor": new_tensor, "new_full": new_full,
}
FUNCTIONS = {
    "tensor": tensor, "as_tensor": as_tensor, "from_numpy": from_numpy, "zeros": zeros,
    "ones": ones, "empty": empty, "full": full, "zeros_like": zeros_like,
    "ones_like": ones_like, "empty_like": empty_like, "full_like": full_like, "arange": arange,
    "linspace": linspace, "logspace": logspace, "eye": eye,
}

_RANDOM_NAMES = ("rand", "randn", "randint", "randperm", "normal", "bernoulli", "rand_like",
                 "randn_like", "randint_like")


def __getattr__(name: str):
    # The random factories moved to ember._random; keep `from ember._creation import randperm`.
    if name in _RANDOM_NAMES:
        from ember import _random

        return getattr(_random, name)
    raise AttributeError(f"module 'ember._creation' has no attribute '{name}'")
