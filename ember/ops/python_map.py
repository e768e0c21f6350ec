"""``Tensor.apply_``, ``map_`` and ``map2_``: call a Python function on every element, in place.

They exist for convenience (torch's docs warn they are slow): the callable sees Python numbers,
one element at a time, so this file is the one place where ember loops over elements on purpose.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor


def _writable(t: Tensor, name: str) -> None:
    if t._rg:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _write(t: Tensor, values: list) -> Tensor:
    for v in values:
        if not isinstance(v, int | float | np.number):
            raise TypeError(f"must be real number, not {type(v).__name__}")
    t._data[...] = np.asarray(values, dtype=np.float64 if t.dtype.is_floating_point else None)\
        .reshape(t._data.shape).astype(t._data.dtype)
    return t  # torch does not count these writes in the version counter


def apply_(self: Tensor, callable) -> Tensor:
    """``self[i] = callable(self[i])`` for every element (CPU tensors, no autograd)."""
    _writable(self, "apply_")
    return _write(self, [callable(v) for v in self._data.reshape(-1).tolist()])


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """``self[i] = callable(self[i], tensor[i])``, ``tensor`` broadcast to ``self``."""
    _writable(self, "map_")
    other = tensor.expand_as(self)._data.reshape(-1).tolist()
    return _write(self, [callable(a, b) for a, b in zip(self._data.reshape(-1).tolist(), other)])


def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast to ``self``."""
    _writable(self, "map2_")
    xs = x.expand_as(self)._data.reshape(-1).tolist()
    ys = y.expand_as(self)._data.reshape(-1).tolist()
    return _write(self, [callable(a, b, c) for a, b, c in
                         zip(self._data.reshape(-1).tolist(), xs, ys)])


METHODS = {"apply_": apply_, "map_": map_, "map2_": map2_}
