"""More ways to make tensors: ``scalar_tensor``, ``asarray``, ``frombuffer``, ``from_file``,
``empty_permuted``, the deprecated ``range``, and the window functions (``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``) computed in
the requested dtype in torch's order of operations.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ember import _dtype
from ember._backend import check_device, to_device
from ember._tensor import Tensor


def _finish(a: np.ndarray, device=None, requires_grad: bool = False) -> Tensor:
    if device is not None:
        a = to_device(a, check_device(device))
    out = Tensor._make(a)
    return out.requires_grad_(True) if requires_grad else out


def _dt(dtype) -> _dtype.dtype:
    return _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, in the default float dtype unless ``dtype`` says otherwise."""
    if not isinstance(s, int | float | bool | np.number):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    dt = _dt(dtype)
    return _finish(np.asarray(s).astype(dt.np), device, requires_grad)


def range_(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None,
           requires_grad: bool = False) -> Tensor:
    """Deprecated: ``start, start + step, ...`` up to and including ``end``."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dt = _dt(dtype)
    n = int((end - start) / step + 1)
    return _finish((start + np.arange(n, dtype=np.float64) * step).astype(dt.np), device,
                   requires_grad)


range_.__name__ = range_.__qualname__ = "range"  # torch.range; the builtin stays usable here


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``obj`` as a tensor, sharing its memory (a tensor, a NumPy array, anything with the
    buffer protocol) unless ``copy`` or a change of dtype or device forces a copy."""
    from ember._creation import tensor

    dt = _dtype.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        out = obj.to(dtype=dt, device=device, copy=bool(copy))
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        a = np.asarray(obj)
        if dt is not None and a.dtype != dt.np:
            if copy is False:
                raise ValueError("can't alias NumPy arrays with different dtypes")
            a = a.astype(dt.np)
        elif copy:
            a = a.copy()
        _dtype.from_numpy_dtype(a.dtype)
        out = _finish(a, device)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor")
        out = tensor(obj, dtype=dt, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


_WARNED_READ_ONLY = []


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of an object with the buffer protocol (``bytearray``,
    ``array.array``, ``memoryview``, ...): writes show in both."""
    dt = _dtype.to_dtype(dtype)
    view = memoryview(buffer)
    length = view.nbytes
    item = dt.np.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % item:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({item})")
    if count > 0 and count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    a = np.frombuffer(view, dtype=dt.np, count=count, offset=offset)
    if view.readonly:
        # torch writes into a read-only buffer anyway; ember copies, and says so once.
        from ember.ops.introspection import warn_once

        warn_once(_WARNED_READ_ONLY, "The given buffer is not writable: ember copies it (torch "
                  "would share it and let its contents be changed).")
        a = a.copy()
    return _finish(a, None, requires_grad)


def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype=None,
              layout=None, device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    """``size`` elements read from a binary file; ``shared=True`` maps the file, so writes to
    the tensor go to the file."""
    if not isinstance(filename, str):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not "
                        f"{type(filename).__name__}")
    dt = _dt(dtype)
    nbytes = size * dt.np.itemsize
    import os

    have = os.path.getsize(filename) if os.path.exists(filename) else 0
    if have < nbytes:
        raise RuntimeError(f"unexpected EOF, expected {nbytes - have} more bytes. The file might "
                           "be corrupted.")
    if size == 0:
        a = np.empty(0, dt.np)
    elif shared:
        a = np.memmap(filename, dtype=dt.np, mode="r+", shape=(size,))
    else:
        a = np.fromfile(filename, dtype=dt.np, count=size)
    return _finish(np.asarray(a) if not shared else a, device, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   pin_memory=None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose dims lie in memory in ``physical_layout``
    order (outermost first)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           "physical_layout; i.e. len(size) = "
                           f"{len(size)} is not equal to len(physical_layout) = {len(order)}"
                           if len(order) != len(size) else
                           "physical_layout must be a permutation of the dimensions")
    a = np.empty([size[p] for p in order], _dt(dtype).np).transpose(np.argsort(order))
    return _finish(a, device, requires_grad)


# --- windows -------------------------------------------------------------------------------


def _window_checks(name: str, n: int, dtype) -> _dtype.dtype:
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    dt = _dt(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           f"TensorOptions(dtype={dt.name})")
    return dt


def _window(name: str, n: int, periodic: bool, dtype, fn, device, requires_grad) -> Tensor:
    dt = _window_checks(name, n, dtype)
    if n == 0:
        return _finish(np.empty(0, dt.np), device, requires_grad)
    if n == 1:
        return _finish(np.ones(1, dt.np), device, requires_grad)
    m = n + 1 if periodic else n
    with np.errstate(all="ignore"):
        w = fn(np.arange(m, dtype=dt.np), m, dt.np.type)
    return _finish(np.ascontiguousarray(w[:n]), device, requires_grad)


def _hamming(alpha: float, beta: float):
    def fn(a, m, t):
        a *= t(2 * math.pi / (m - 1))
        return np.cos(a) * t(-beta) + t(alpha)
    return fn


def _blackman(a, m, t):
    a *= t(math.pi / (m - 1))
    return np.cos(a * t(4)) * t(0.08) - np.cos(a * t(2)) * t(0.5) + t(0.42)


def _bartlett(a, m, t):
    a *= t(2.0 / (m - 1))
    half = ((m - 1) >> 1) + 1
    a[half:] = a[half:] * t(-1) + t(2)
    return a


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / (N - 1))``; ``periodic`` computes N + 1 points and drops the
    last, as for spectral analysis."""
    return _window("hann_window", window_length, periodic, dtype, _hamming(0.5, 0.5), device,
                   requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=None, requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, _hamming(alpha, beta),
                   device, requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, _blackman, device,
                   requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, pin_memory=None, requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, _bartlett, device,
                   requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta)`` (I0: the Bessel function)."""
    from ember.ops.bessel import _bessel

    def fn(a, m, t):
        alpha = (m - 1) / 2.0
        arg = beta * np.sqrt(np.abs(1 - ((a.astype(np.float64) - alpha) / alpha) ** 2))
        return (_bessel(arg, 0, False) / _bessel(np.array(beta), 0, False)).astype(a.dtype)

    return _window("kaiser_window", window_length, periodic, dtype, fn, device, requires_grad)


FUNCTIONS = {"scalar_tensor": scalar_tensor, "range": range_, "asarray": asarray,
             "frombuffer": frombuffer, "from_file": from_file, "empty_permuted": empty_permuted,
             "hann_window": hann_window, "hamming_window": hamming_window,
             "blackman_window": blackman_window, "bartlett_window": bartlett_window,
             "kaiser_window": kaiser_window}
