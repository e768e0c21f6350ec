"""Joining and splitting: cat, stack, hstack/vstack/dstack, split, chunk, unbind, meshgrid.

split / chunk / unbind are one multi-output node each, as in torch (SplitBackward0,
SplitWithSizesBackward0, UnbindBackward0); their outputs are views of the input.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops._common import c_order
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import cast


def _tensor_list(tensors, fname: str) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    return list(tensors)


def _grads(ctx, grads) -> list:
    """Zeros for the outputs that received no gradient (multi-output nodes)."""
    ref = next((g._data for g in grads if g is not None), None)  # for the device
    return [Tensor._make(np.zeros(shape, dt, like=ref)) if g is None else g
            for g, (shape, dt) in zip(grads, ctx._out_meta)]


# --- cat / stack ----------------------------------------------------------------------------


class Cat(Op):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, *arrays, dim=0, skip=None):
        ctx.dim, ctx.skip = dim, skip
        ctx.sizes = [a.shape[dim] if a.ndim > dim else 0 for a in arrays]
        if skip is None:
            return c_order(np.concatenate(arrays, axis=dim))
        kept = [a for a, s in zip(arrays, skip) if not s]
        return c_order(np.concatenate(kept, axis=dim)) if kept else np.zeros(0, arrays[0].dtype,
                                                                     like=arrays[0])

    @staticmethod
    def backward(ctx, g):
        from ember.ops.indexing import Slice

        out, start = [], 0
        skip = ctx.skip or (False,) * len(ctx.sizes)
        for size, skipped, need in zip(ctx.sizes, skip, ctx.needs_input_grad):
            if skipped:  # torch still hands the skipped empty input an (empty) gradient
                out.append(Tensor._make(np.zeros(0, g._data.dtype, like=g._data)) if need
                           else None)
                continue
            out.append(Slice.apply(g, dim=ctx.dim, sl=slice(start, start + size))
                       if need else None)
            start += size
        return tuple(out)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along ``dim`` (1-D empty tensors are skipped, torch's legacy rule)."""
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    d0 = tensors[0]._data.dtype
    if any(t._data.dtype != d0 for t in tensors):
        dt = tensors[0].dtype
        for t in tensors[1:]:
            dt = _dtype.promote_types(dt, t.dtype)
        tensors = [cast(t, dt) for t in tensors]
    shapes = [t._data.shape for t in tensors]
    for i, s in enumerate(shapes):
        if not s:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    skip = tuple(s == (0,) for s in shapes)
    if not any(skip):
        skip = None
    elif all(skip):
        return Cat.apply(*tensors, dim=0, skip=skip)
    ref = next(s for s in shapes if s != (0,))
    d = _wrap_dim(dim, len(ref))
    for i, s in enumerate(shapes):
        if s != ref and s != (0,):
            _cat_mismatch(ref, s, d, i)
    return Cat.apply(*tensors, dim=d, skip=skip)


def _cat_mismatch(ref: tuple, s: tuple, d: int, i: int) -> None:
    if len(s) != len(ref):
        raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and "
                           f"{len(s)}")
    for k, (a, b) in enumerate(zip(ref, s)):
        if k != d and a != b:
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected "
                               f"size {a} but got size {b} for tensor number {i} in the list.")


def concatenate(tensors, axis: int = 0) -> Tensor:
    """``cat`` with NumPy's ``axis`` name."""
    return cat(tensors, axis)


class Stack(Op):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, *arrays, dim=0):
        ctx.dim = dim
        return c_order(np.stack(arrays, axis=dim))

    @staticmethod
    def backward(ctx, g):
        return tuple(g.unbind(ctx.dim))


def stack(tensors, dim: int = 0) -> Tensor:
    """Join equal-shaped tensors along a new dim ``dim``."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]._data.shape
    d = _wrap_dim(dim, len(ref) + 1)  # checked first, as in torch
    for i, t in enumerate(tensors):
        if t._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(ref)} at entry 0 and {list(t.shape)} at entry {i}")
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = _dtype.promote_types(dt, t.dtype)
    return Stack.apply(*[cast(t, dt) for t in tensors], dim=d)


def atleast_1d(*tensors):
    """Tensors with at least 1 dim (0-d become shape [1])."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else tensors
    res = tuple(t.reshape(1) if t.ndim == 0 else t for t in ts)
    return res[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else res


def atleast_2d(*tensors):
    """Tensors with at least 2 dims (1-d become [1, n])."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else tensors
    res = tuple(t.reshape(1, 1) if t.ndim == 0 else t.unsqueeze(0) if t.ndim == 1 else t
                for t in ts)
    return res[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else res


def atleast_3d(*tensors):
    """Tensors with at least 3 dims ([n] -> [1, n, 1], [m, n] -> [m, n, 1])."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], list | tuple) else tensors

    def one(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        return t.unsqueeze(-1) if t.ndim == 2 else t
    res = tuple(one(t) for t in ts)
    return res[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else res


def _nonempty(tensors, fname: str) -> list:
    tensors = _tensor_list(tensors, fname)
    if not tensors:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return tensors


def hstack(tensors) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = atleast_1d(_nonempty(tensors, "hstack"))
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate along dim 0, after making 1-D tensors rows."""
    return cat(atleast_2d(_nonempty(tensors, "vstack")), 0)


def dstack(tensors) -> Tensor:
    """Concatenate along dim 2, after ``atleast_3d``."""
    return cat(atleast_3d(_nonempty(tensors, "dstack")), 2)


def column_stack(tensors) -> Tensor:
    """Concatenate along dim 1, 0-d and 1-D tensors as columns."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t
          for t in _nonempty(tensors, "column_stack")]
    return cat(ts, 1)


# --- split / chunk / unbind -----------------------------------------------------------------


class SplitWithSizes(Op):
    node_name = "SplitWithSizesBackward0"

    @staticmethod
    def forward(ctx, x, sizes=(), dim=0):
        ctx.dim = dim
        bounds = np.cumsum(sizes[:-1]).tolist()
        return tuple(np.split(x, bounds, axis=dim))

    @staticmethod
    def backward(ctx, *grads):
        return cat(_grads(ctx, grads), ctx.dim)


class Split(SplitWithSizes):
    node_name = "SplitBackward0"


class Unbind(Op):
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, dim=0):
        ctx.dim = dim
        return tuple(x[(slice(None),) * dim + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(_grads(ctx, grads), ctx.dim)


def _views(x: Tensor, outs: tuple) -> tuple:
    for o in outs:
        o._set_view_of(x)
        if STATE.enabled:  # torch refuses in-place writes that reach these (view_history.py)
            o._get_aux().multi_view = True
    return outs


def _split_dim(x: Tensor, dim: int) -> int:
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    return _wrap_dim(dim, x.ndim)


def split(x: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Split into pieces of ``split_size`` (the last may be smaller) or of the given sizes."""
    d = _split_dim(x, dim)
    n = x._data.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={size}")
        if size == 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        count = max(-(-n // size), 1) if size else 1
        sizes = tuple([size] * (count - 1) + [n - size * (count - 1)])
        return _views(x, Split.apply(x, sizes=sizes, dim=d))
    sizes = tuple(int(s) for s in split_size_or_sections)
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={list(sizes)}")
    return _views(x, SplitWithSizes.apply(x, sizes=sizes, dim=d))


def split_with_sizes(x: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split`` with a list of sizes."""
    return split(x, list(split_sizes), dim)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` pieces of ceil(size / chunks) (one SplitBackward0 node)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _split_dim(x, dim)
    n = x._data.shape[d]
    # an empty dim gives `chunks` empty pieces, as torch
    return split(x, -(-n // chunks), d) if n else split(x, [0] * chunks, d)


def unbind(x: Tensor, dim: int = 0) -> tuple:
    """The slices along ``dim``, as views (one UnbindBackward0 node)."""
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return _views(x, Unbind.apply(x, dim=_wrap_dim(dim, x.ndim)))


def tensor_split(x: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Split into n near-equal pieces, or at the given indices (views)."""
    from ember.ops.indexing import Slice

    d = _split_dim(x, dim)
    n = x._data.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor) and ios.ndim == 0:
        ios = int(ios.item())
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        q, r = divmod(n, ios)
        sizes = [q + 1] * r + [q] * (ios - r)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        idx = ios.tolist() if isinstance(ios, Tensor) else list(ios)
        bounds = [0, *idx, n]
    return tuple(Slice.apply(x, dim=d, sl=slice(min(a, n), max(min(b, n), min(a, n))))
                 for a, b in zip(bounds[:-1], bounds[1:]))


def _split_at(x: Tensor, ios, dim: int, fname: str, min_dim: int) -> tuple:
    if x.ndim < min_dim:
        raise RuntimeError(f"torch.{fname} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {x.ndim} dimensions!")
    if isinstance(ios, int):
        n = x._data.shape[dim]
        if ios == 0 or n % ios:
            raise RuntimeError(f"torch.{fname} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {n} is not divisible by the split_size "
                               f"{ios}!")
    return tensor_split(x, ios, dim)


def hsplit(x: Tensor, indices_or_sections) -> tuple:
    """``tensor_split`` along dim 1 (dim 0 for 1-D); an int must divide the size."""
    return _split_at(x, indices_or_sections, 0 if x.ndim == 1 else 1, "hsplit", 1)


def vsplit(x: Tensor, indices_or_sections) -> tuple:
    """``tensor_split`` along dim 0; an int must divide the size."""
    return _split_at(x, indices_or_sections, 0, "vsplit", 2)


def dsplit(x: Tensor, indices_or_sections) -> tuple:
    """``tensor_split`` along dim 2; an int must divide the size."""
    return _split_at(x, indices_or_sections, 2, "dsplit", 3)


# --- meshgrid -------------------------------------------------------------------------------


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D tensors (``indexing`` 'ij' or 'xy'), as expanded views."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("xy", "ij"):
        raise RuntimeError("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
    swap = indexing == "xy" and len(tensors) >= 2
    ts = list(tensors)
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    outs = []
    for i, t in enumerate(ts):
        v = [1] * len(ts)
        v[i] = -1
        outs.append(t.reshape(tuple(v)).expand(shape))
    if swap:
        outs[0], outs[1] = outs[1], outs[0]
    return tuple(outs)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Cat, Stack, SplitWithSizes, Unbind)

METHODS = {
    "split": split, "split_with_sizes": split_with_sizes, "chunk": chunk, "unbind": unbind,
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
}
FUNCTIONS = {
    "cat": cat, "concat": cat, "concatenate": concatenate, "stack": stack, "hstack": hstack,
    "vstack": vstack, "row_stack": vstack, "dstack": dstack, "column_stack": column_stack,
    "atleast_1d": atleast_1d, "atleast_2d": atleast_2d, "atleast_3d": atleast_3d,
    "split": split, "split_with_sizes": split_with_sizes, "chunk": chunk, "unbind": unbind,
    "tensor_split": tensor_split, "meshgrid": meshgrid, "hsplit": hsplit, "vsplit": vsplit,
    "dsplit": dsplit,
}
