"""``ember.layout`` and ``ember.memory_format``: the singletons torch passes as ``layout=`` and
``memory_format=`` (``ember.strided``, ``ember.channels_last``, ...).

Every ember tensor is strided. Memory formats are honoured where they decide a result's strides
(``contiguous``, ``clone``, ``is_contiguous``): ``channels_last`` lays a 4-D tensor out as NHWC
in memory with the NCHW shape, as torch does, and NumPy's elementwise ops keep that layout.
"""

from __future__ import annotations

import numpy as np


class _Singleton:
    """A named constant that prints as ``ember.<name>`` and pickles and copies as itself."""

    __slots__ = ("name",)
    _kind = ""

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'torch.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name: str):
        obj = object.__new__(cls)
        obj.name = name
        return obj

    def __repr__(self) -> str:
        return "ember." + self.name

    def __reduce__(self) -> str:
        return self.name  # a module global: unpickles and deep-copies to the same object


class layout(_Singleton):  # noqa: N801 - torch's class name
    __slots__ = ()


class memory_format(_Singleton):  # noqa: N801 - torch's class name
    __slots__ = ()


for _cls in (layout, memory_format):
    _cls.__module__ = "ember"

strided = layout._make("strided")
contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
preserve_format = memory_format._make("preserve_format")
legacy_contiguous_format = contiguous_format  # the same object in torch

# The order in which each channels-last format lays dims out in memory, innermost first.
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_format(fmt, fn: str) -> None:
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")


def channels_last_rank(fmt, ndim: int) -> None:
    """torch's error for a channels-last format on a tensor of the wrong rank."""
    rank = _CHANNELS_LAST[fmt][0]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def is_contiguous_as(shape: tuple, strides: tuple, fmt) -> bool:
    """Whether elements with these element strides lie densely in ``fmt``'s order (torch's
    rule: size-1 dims are skipped; a channels-last format on another rank is never so)."""
    if fmt in _CHANNELS_LAST:
        rank, order = _CHANNELS_LAST[fmt]
        if len(shape) != rank:
            return False
    else:
        order = tuple(reversed(range(len(shape))))
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def copy_as(a: np.ndarray, fmt) -> np.ndarray:
    """A copy of ``a`` laid out in ``fmt`` (a channels-last format or contiguous_format)."""
    xp = np if isinstance(a, np.ndarray) else __import__("cupy")
    if fmt not in _CHANNELS_LAST:
        return a.copy(order="C")
    order = _CHANNELS_LAST[fmt][1][::-1]  # outermost first
    return xp.ascontiguousarray(a.transpose(order)).transpose(np.argsort(order))
