"""The ``*_with_indices`` pooling functions (``max_pool2d_with_indices``, ...: the pooling
with ``return_indices=True``) and the deprecated ``upsample``, ``upsample_nearest`` and
``upsample_bilinear`` (``interpolate`` with torch's warning)."""

from __future__ import annotations

import warnings

from ember.nn._functional.pooling import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from ember.nn._functional.vision import interpolate

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "upsample", "upsample_nearest",
           "upsample_bilinear"]


def _with_indices(pool, name: str):
    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
           return_indices: bool = False):
        return pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                    return_indices=True)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{pool.__name__}`` returning ``(output, indices)``."
    return fn


def _adaptive_with_indices(pool, name: str):
    def fn(input, output_size, return_indices: bool = False):
        return pool(input, output_size, return_indices=True)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{pool.__name__}`` returning ``(output, indices)``."
    return fn


max_pool1d_with_indices = _with_indices(max_pool1d, "max_pool1d_with_indices")
max_pool2d_with_indices = _with_indices(max_pool2d, "max_pool2d_with_indices")
max_pool3d_with_indices = _with_indices(max_pool3d, "max_pool3d_with_indices")
adaptive_max_pool1d_with_indices = _adaptive_with_indices(adaptive_max_pool1d,
                                                          "adaptive_max_pool1d_with_indices")
adaptive_max_pool2d_with_indices = _adaptive_with_indices(adaptive_max_pool2d,
                                                          "adaptive_max_pool2d_with_indices")
adaptive_max_pool3d_with_indices = _adaptive_with_indices(adaptive_max_pool3d,
                                                          "adaptive_max_pool3d_with_indices")


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """Deprecated: ``interpolate``."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
