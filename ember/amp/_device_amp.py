"""The deprecated per-device names ``torch.cuda.amp`` and ``torch.cpu.amp`` keep: ``autocast``
and ``GradScaler`` bound to one device type, each warning with torch's FutureWarning."""

from __future__ import annotations

import warnings

from ember import _dtype
from ember.amp import autocast_mode, grad_scaler


def deprecation(device: str, name: str, new: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{new}` instead.", FutureWarning, stacklevel=3)


def classes(device: str, default_dtype: _dtype.dtype) -> tuple[type, type]:
    """``autocast`` and ``GradScaler`` for ``device`` ("cuda", "cpu")."""

    class autocast(autocast_mode.autocast):  # noqa: N801 - torch's name
        __doc__ = (f"See ember.autocast. ``torch.{device}.amp.autocast(args...)`` is deprecated: "
                   f"use ``torch.amp.autocast('{device}', args...)``.")

        def __init__(self, enabled: bool = True, dtype: _dtype.dtype = default_dtype,
                     cache_enabled: bool = True) -> None:
            deprecation(device, "autocast", f"autocast('{device}', args...)")
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(grad_scaler.GradScaler):
        __doc__ = (f"See ember.amp.GradScaler. ``torch.{device}.amp.GradScaler(args...)`` is "
                   f"deprecated: use ``torch.amp.GradScaler('{device}', args...)``.")

        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            deprecation(device, "GradScaler", f"GradScaler('{device}', args...)")
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__, cls.__qualname__ = f"ember.{device}.amp", cls.__name__
    return autocast, GradScaler
