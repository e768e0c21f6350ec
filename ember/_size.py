"""ember.Size (torch.Size): the shape of a tensor, a tuple of ints."""

from __future__ import annotations

import numpy as np


class Size(tuple):
    """ember.Size (torch.Size): a tuple of ints that prints as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        for i, s in enumerate(items):
            if type(s) is not int:
                items = tuple(_size_item(i, x) for i, x in enumerate(items))
                break
        return tuple.__new__(cls, items)

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


def _size_item(i: int, x) -> int:
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return int(x)
    data = getattr(x, "_data", None)  # a 0-d integer tensor counts as an int, as in torch
    if isinstance(data, np.ndarray) and data.ndim == 0 and data.dtype.kind in "iu":
        return int(data)
    raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                    f"'{type(x).__name__}')")
