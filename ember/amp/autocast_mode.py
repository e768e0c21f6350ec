"""autocast: torch's mixed-precision context, which in ember records state but does not cast.

``with ember.autocast("cpu", dtype=ember.bfloat16):`` validates its arguments, sets and restores
the per-device state (``is_autocast_enabled``, ``get_autocast_dtype``, nesting, cache flag)
and works as a decorator, exactly as torch's does. What it does NOT do is torch's per-op
casting (matmul/linear/conv inputs to bfloat16, losses back to float32): that needs a hook in
every op family, and a partial version would give dtypes that match torch for some ops and
not others. Computation under autocast therefore stays in the inputs' dtype (usually
float32), and entering an enabled autocast warns once so that this is never silent.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

from ember import _dtype

__all__ = [
    "autocast", "clear_autocast_cache", "get_autocast_cpu_dtype", "get_autocast_dtype",
    "get_autocast_gpu_dtype", "is_autocast_available", "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
    "set_autocast_dtype", "set_autocast_enabled",
]

# The device types torch's device-string parser knows, in the order its error lists them.
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_AVAILABLE = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "maia", "ipu")
_LOW = _dtype.bfloat16 if _dtype.bfloat16 is not None else _dtype.float16


class _State(threading.local):
    """Autocast state, per thread as in torch: a region entered in one thread leaves the
    others alone."""

    def __init__(self) -> None:
        self.enabled = dict.fromkeys(_AVAILABLE, False)
        self.dtype = {**dict.fromkeys(_AVAILABLE, _LOW), "cuda": _dtype.float16,
                      "mps": _dtype.float16}
        self.cache = True
        self.nesting = 0


_state = _State()
_warned = [False]  # the "autocast does not cast" warning, once per process


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
        device_type, enabled = "cuda", bool(device_type)
    _state.enabled[_device_type(device_type)] = bool(enabled)


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    return _state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    _state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    return _state.cache


def set_autocast_cache_enabled(enabled: bool) -> None:
    _state.cache = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing is cached: ember makes no casted copies of weights."""


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


class autocast:  # noqa: N801 - torch's name
    """Context manager / decorator for a mixed-precision region (state only in ember)."""

    def __init__(self, device_type: str, dtype: _dtype.dtype | None = None,
                 enabled: bool = True, cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{self.device}'")
        supported = [d for d in (_dtype.bfloat16, _dtype.float16) if d is not None]
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else cache_enabled)
        name = self.device if self.device == "cuda" else self.device.upper()
        if enabled:
            if self.device == "cuda":
                # ember has no CUDA; torch's CPU build disables the region the same way.
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in supported:
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                              f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                              + ", ".join(map(str, supported)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        if self._enabled and not _warned[0]:
            _warned[0] = True
            warnings.warn("ember.autocast records the autocast state but does not cast: "
                          "operations run in their inputs' dtype.", UserWarning, stacklevel=2)
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        _state.nesting += 1
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        _state.nesting -= 1
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
