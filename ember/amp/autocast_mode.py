"""autocast: torch's mixed-precision region (its state; the casting lives in ``_casting``).

``with ember.autocast("cpu", dtype=ember.bfloat16):`` validates its arguments, sets and restores
the per-thread state (``is_autocast_enabled``, ``get_autocast_dtype``, nesting, the weight-cast
cache flag) and works as a decorator, exactly as torch's does. While a region is on, the ops on
torch's autocast lists cast their inputs (``ember.amp._casting``); leaving the outermost region
drops the cached weight casts.
"""

from __future__ import annotations

import collections.abc
import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import _dtype

# What torch exports at top level (``custom_fwd``/``custom_bwd`` live in ember.amp only).
__all__ = [
    "autocast", "autocast_decrement_nesting", "autocast_increment_nesting",
    "clear_autocast_cache", "get_autocast_cpu_dtype", "get_autocast_dtype",
    "get_autocast_gpu_dtype", "is_autocast_available", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled",
]

# The device types torch's device-string parser knows, in the order its error lists them.
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_AVAILABLE = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "maia", "ipu")


class _State(threading.local):
    """Autocast state, per thread as in torch: a region entered in one thread leaves the
    others alone. ``enabled`` and ``dtype`` (per device type) are read by ember.compile's
    guards; ``on`` is the one check a listed op makes (any device enabled, and not inside a
    listed op already); ``casts`` is torch's cache of weight casts."""

    def __init__(self) -> None:
        self.enabled = dict.fromkeys(_AVAILABLE, False)
        self.dtype = {**dict.fromkeys(_AVAILABLE, _dtype.bfloat16), "cuda": _dtype.float16,
                      "mps": _dtype.float16}
        self.cache = True
        self.nesting = 0
        self.on = False
        self.casts: dict = {}


_state = _State()


def _device_type(device_type: str) -> str:
    """Parse like torch's device string ("cuda:0" -> "cuda"), with its error for unknowns."""
    kind = device_type.split(":")[0]
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    if kind not in _AVAILABLE:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{kind}'")
    return kind


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast knows ``device_type`` (torch answers True for 'cuda' even without one)."""
    return device_type.split(":")[0] in _AVAILABLE


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (CUDA when omitted, as in torch)."""
    return _state.enabled[_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type: str, enabled: bool | None = None) -> None:
    if enabled is None:  # the old one-argument form set CUDA's flag
        device_type, enabled = "cuda", device_type
    if not isinstance(enabled, bool):
        raise TypeError("set_autocast_enabled(): argument 'enabled' (position 2) must be bool, "
                        f"not {type(enabled).__name__}")
    _state.enabled[_device_type(device_type)] = enabled
    _state.on = any(_state.enabled.values())


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    return _state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    _state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts of weights (leaving the outermost region does this)."""
    _state.casts.clear()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype() -> _dtype.dtype:
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> _dtype.dtype:
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def _cuda_enabled(fast_dtype: _dtype.dtype) -> bool:
    """torch's check for a CUDA region: off (with its warning) without a GPU; bfloat16 needs
    a GPU that has it (CuPy has no bfloat16 arrays, so ember's CUDA tensors never do)."""
    from ember import cuda

    if not cuda.is_available():
        warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                      stacklevel=3)
        return False
    if fast_dtype is _dtype.bfloat16 and not cuda.is_bf16_supported():
        raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype "
                           "to float16.")
    from ember.amp import _casting

    _casting.install(cuda=True)
    return True


class autocast:  # noqa: N801 - torch's name
    """Context manager / decorator for a mixed-precision region: inside, the ops on torch's
    autocast lists run in ``dtype`` (bfloat16 on the CPU, float16 on CUDA by default), in
    float32, or in their widest input's dtype."""

    def __init__(self, device_type: str, dtype: _dtype.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{self.device}'")
        supported = [_dtype.bfloat16, _dtype.float16]
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else cache_enabled)
        name = self.device.upper()
        if enabled:
            if self.device == "cuda":
                enabled = _cuda_enabled(self.fast_dtype)
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, supported)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        # Drop the cache when we exit to a nesting level outside any autocast instance.
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, device_type: str, dtype: _dtype.dtype):
    """torch.amp.autocast_mode._cast: floating tensors (not float64) on ``device_type`` in
    ``dtype``, through lists, tuples and dicts."""
    from ember._tensor import Tensor

    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not _dtype.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable) and not isinstance(value, np.ndarray):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, list | tuple) else iterable
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: _dtype.dtype | None = None):
    """Decorate a custom Function's ``forward``: with ``cast_inputs``, inside an autocast
    region its floating inputs are cast to that dtype and it runs with autocast off; without,
    it runs under the current state (which ``custom_bwd`` then restores for backward)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward``: it runs under forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
