"""More shape and index helpers: ``ravel``, ``diagflat``, ``combinations``, ``unravel_index``,
``nonzero_static``, ``isin``, ``fill`` and the ``torch.index_put_`` form.

``ravel``, ``diagflat`` and ``combinations`` are composed of ember ops as ATen composes them
(so their graphs are torch's); ``fill`` is one node with torch's names (FillBackward0 for a
number, FillBackward1 for a 0-d tensor); the rest are not differentiable.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ember import _dtype
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._promote import scalar


def ravel(input: Tensor) -> Tensor:
    """The elements in one dim, in row-major order (a view of contiguous input)."""
    return input.contiguous().view(-1)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened ``input`` on diagonal ``offset``."""
    return input.contiguous().view(-1).diag_embed(offset)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """All length-``r`` combinations of the elements of a 1-D tensor, as rows (in order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    n = input.shape[0]
    grids = [input.view((1,) * i + (n,) + (1,) * (r - 1 - i)).expand((n,) * r)
             for i in range(r)]
    idx = np.indices((n,) * r) if n else np.zeros((r,) + (0,) * r, np.int64)
    mask = np.ones((n,) * r, bool)
    for a, b in itertools.pairwise(idx):
        mask &= (a <= b) if with_replacement else (a < b)
    m = Tensor._make(mask)
    from ember.ops.joining import stack

    return stack([g.masked_select(m) for g in grids], 1)


def unravel_index(indices, shape) -> tuple:
    """The coordinates in a tensor of ``shape`` of each flat index (wrapping as torch)."""
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute 'is_complex'")
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}".replace("ember.", "torch."))
    if isinstance(shape, int):
        shape = (shape,)
    elif not isinstance(shape, list | tuple):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if not all(isinstance(s, int) for s in shape):
        bad = next(s for s in shape if not isinstance(s, int))
        raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(bad)}")
    shape = tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    from ember._creation import tensor

    out = indices.unsqueeze(-1).floor_divide(tensor(coefs, dtype=_dtype.int64)) % \
        tensor(list(shape), dtype=_dtype.int64)
    return tuple(out.unbind(-1))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero`` padded with ``fill_value`` (or truncated) to exactly ``size`` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size} instead.")
    found = np.argwhere(input._data)[:size]
    out = np.full((size, input.ndim), fill_value, np.int64)
    out[:len(found)] = found
    return Tensor._make(out)


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a number)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    a = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return Tensor._make(np.asarray(np.isin(a, b, invert=invert)))


class Fill(Op):
    node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, x, value=0):
        return np.full_like(x, scalar(value, x.dtype))

    @staticmethod
    def backward(ctx, g):
        return g.new_zeros(g.shape)


class FillTensor(Op):
    node_name = "FillBackward1"

    @staticmethod
    def forward(ctx, x, v):
        ctx.v_dtype = v.dtype
        return np.full_like(x, v)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g.new_zeros(g.shape) if need[0] else None), \
            (g.sum().to(_dtype.from_numpy_dtype(ctx.v_dtype)) if need[1] else None)


def fill(input: Tensor, value) -> Tensor:
    """A tensor like ``input`` filled with ``value`` (a number or a 0-d tensor)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return FillTensor.apply(input, value)
    _dtype.check_int64(value, input.dtype)
    return Fill.apply(input, value=value)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    return input.index_put_(indices, values, accumulate)


FUNCTIONS = {"ravel": ravel, "diagflat": diagflat, "combinations": combinations,
             "unravel_index": unravel_index, "nonzero_static": nonzero_static, "isin": isin,
             "fill": fill, "index_put_": index_put_}
METHODS = {"ravel": ravel, "diagflat": diagflat, "nonzero_static": nonzero_static}
