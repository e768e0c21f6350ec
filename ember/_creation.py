"""Tensor factories: tensor, zeros, ones, full, arange, rand, ... and their ``_like`` forms."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._backend import check_device
from ember._random import rng
from ember._tensor import Size, Tensor, _to_array


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], list | tuple | Size):
        size = size[0]
    for s in size:
        if not isinstance(s, int | np.integer) and not (isinstance(s, Tensor) and s.ndim == 0):
            raise TypeError(f"expected a sequence of integers or a single integer, got '{size}'")
    return tuple(int(s) for s in size)


def _finish(arr, requires_grad: bool, device) -> Tensor:
    if device is not None:
        check_device(device)
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float(dtype) -> _dtype.dtype:
    return _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Copy ``data`` (nested lists, numbers, arrays, tensors) into a new leaf tensor."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    return _finish(_to_array(data, dt), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like tensor(), but shares memory with a NumPy array or tensor when it can."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        return data if dt is None or dt is data.dtype else data.to(dt)
    if isinstance(data, np.ndarray) and (dt is None or data.dtype == dt.np):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``arr``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    _dtype.from_numpy_dtype(arr.dtype)
    return Tensor._make(arr)


def _filled(size, value, dtype, requires_grad, device, default=None) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())
    return _finish(np.full(_size(size), value, dtype=dt.np), requires_grad, device)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False, out=None,
          layout=None) -> Tensor:
    return _filled(size, 0, dtype, requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad: bool = False, out=None,
         layout=None) -> Tensor:
    return _filled(size, 1, dtype, requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad: bool = False, out=None, layout=None,
          memory_format=None, pin_memory: bool = False) -> Tensor:
    dt = _float(dtype)
    return _finish(np.empty(_size(size), dtype=dt.np), requires_grad, device)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if dtype is None:
        kind = _dtype.scalar_kind(fill_value.item() if isinstance(fill_value, Tensor)
                                  else fill_value)
        dtype = (_dtype.bool_, _dtype.int64, _dtype.get_default_dtype())[kind]
    return _filled((size,) if isinstance(size, int) else (tuple(size),), fill_value, dtype,
                   requires_grad, device)


def _like(x: Tensor, dtype):
    return _dtype.to_dtype(dtype) if dtype is not None else x.dtype


def zeros_like(x: Tensor, *, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    return _finish(np.zeros(x._data.shape, _like(x, dtype).np), requires_grad, device)


def ones_like(x: Tensor, *, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    return _finish(np.ones(x._data.shape, _like(x, dtype).np), requires_grad, device)


def empty_like(x: Tensor, *, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    return _finish(np.empty(x._data.shape, _like(x, dtype).np), requires_grad, device)


def full_like(x: Tensor, fill_value, *, dtype=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    return _finish(np.full(x._data.shape, fill_value, _like(x, dtype).np), requires_grad, device)


def arange(start, end=None, step=1, *, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    dt = _dtype.to_dtype(dtype)
    start, end, step = vals
    n = max(int(np.ceil((end - start) / step)), 0)
    arr = (start + step * np.arange(n, dtype=np.float64)).astype(dt.np) if dt.is_floating_point \
        else np.arange(start, end, step, dtype=dt.np)
    return _finish(arr, requires_grad, device)


def linspace(start, end, steps: int, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    arr = np.linspace(start, end, steps, dtype=np.float64).astype(_float(dtype).np)
    return _finish(arr, requires_grad, device)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    arr = np.logspace(start, end, steps, base=base, dtype=np.float64).astype(_float(dtype).np)
    return _finish(arr, requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype=None, device=None,
        requires_grad: bool = False) -> Tensor:
    return _finish(np.eye(n, m, dtype=_float(dtype).np), requires_grad, device)


def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    dt = _float(dtype)
    arr = rng(generator).random(_size(size), dtype=np.float64).astype(dt.np)
    return _finish(arr, requires_grad, device)


def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    dt = _float(dtype)
    arr = rng(generator).standard_normal(_size(size), dtype=np.float32 if dt.np == np.float32
                                         else np.float64).astype(dt.np, copy=False)
    return _finish(arr, requires_grad, device)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional arguments: \"size\"")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    arr = rng(generator).integers(low, high, size=tuple(size)).astype(dt.np)
    return _finish(arr, requires_grad, device)


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    return _finish(rng(generator).permutation(n).astype(dt.np), requires_grad, device)


def rand_like(x: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return rand(x.shape, dtype=_like(x, dtype), requires_grad=requires_grad)


def randn_like(x: Tensor, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return randn(x.shape, dtype=_like(x, dtype), requires_grad=requires_grad)


def randint_like(x: Tensor, low, high=None, *, dtype=None, device=None,
                 requires_grad: bool = False) -> Tensor:
    return randint(low, high, x.shape, dtype=_like(x, dtype))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = tuple(size) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    like = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    dt = like.dtype if like is not None and dtype is None else _float(dtype)
    arr = rng(generator).normal(m, s, size=shape).astype(dt.np)
    return _finish(arr, requires_grad, device)


def bernoulli(p: Tensor, *, generator=None) -> Tensor:
    arr = (rng(generator).random(p._data.shape) < p._data).astype(p._data.dtype)
    return Tensor._make(arr)


def _new(factory):
    def method(self, *size, dtype=None, device=None, requires_grad: bool = False):
        return factory(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)
    return method


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


METHODS = {
    "new_zeros": _new(zeros), "new_ones": _new(ones), "new_empty": _new(empty),
    "new_tensor": new_tensor, "new_full": new_full,
}
FUNCTIONS = {
    "tensor": tensor, "as_tensor": as_tensor, "from_numpy": from_numpy, "zeros": zeros,
    "ones": ones, "empty": empty, "full": full, "zeros_like": zeros_like,
    "ones_like": ones_like, "empty_like": empty_like, "full_like": full_like, "arange": arange,
    "linspace": linspace, "logspace": logspace, "eye": eye, "rand": rand, "randn": randn,
    "randint": randint, "randperm": randperm, "rand_like": rand_like,
    "randn_like": randn_like, "randint_like": randint_like, "normal": normal,
    "bernoulli": bernoulli,
}
