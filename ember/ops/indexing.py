"""Indexing: ``x[key]`` and ``x[key] = value``.

Basic indexing (ints, slices, None, Ellipsis) is a chain of views, one op per indexed dim as in
torch (SelectBackward0, SliceBackward0, UnsqueezeBackward0). Integer-tensor and boolean-mask
indexing copies (IndexBackward0); its gradient scatters back with accumulation.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE


class Select(Op):
    node_name = "SelectBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0, index=0):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        return x[(slice(None),) * dim + (index,)]

    @staticmethod
    def backward(ctx, g):
        key = (slice(None),) * ctx.dim + (ctx.index,)
        return IndexGrad.apply(g, key=key, shape=ctx.shape)


class Slice(Op):
    node_name = "SliceBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0, sl=None):
        ctx.shape, ctx.dim, ctx.sl = x.shape, dim, sl
        return x[(slice(None),) * dim + (sl,)]

    @staticmethod
    def backward(ctx, g):
        key = (slice(None),) * ctx.dim + (ctx.sl,)
        return IndexGrad.apply(g, key=key, shape=ctx.shape)


class Index(Op):
    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, key=None):
        ctx.shape, ctx.key = x.shape, key
        return x[key]

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=ctx.key, shape=ctx.shape, accumulate=True)


class IndexGrad(Op):
    """Scatter a gradient into zeros of the input's shape (summing repeated indices)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, key=None, shape=None, accumulate=False):
        ctx.key = key
        out = np.zeros(shape, dtype=g.dtype)
        if accumulate:
            np.add.at(out, key, g)
        else:
            out[key] = g
        return out

    @staticmethod
    def backward(ctx, gg):
        return Index.apply(gg, key=ctx.key)


def _check_index(i: int, size: int, dim: int) -> int:
    if not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
    return i % size


def _expand_key(key, ndim: int) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for k in key if k is not None and k is not Ellipsis
               and not (_is_mask(k)) ) + sum(_mask_ndim(k) for k in key if _is_mask(k))
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if n_ell:
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - used) + key[i + 1:]
    return key


def _is_mask(k) -> bool:
    if isinstance(k, Tensor):
        return k._data.dtype == np.bool_
    return isinstance(k, np.ndarray) and k.dtype == np.bool_


def _mask_ndim(k) -> int:
    return k.ndim if isinstance(k, np.ndarray) else k._data.ndim


def _is_basic(k) -> bool:
    return k is None or k is Ellipsis or isinstance(k, int | slice) and not isinstance(k, bool)


def _to_index_array(k):
    if isinstance(k, Tensor):
        k = k._data
    if isinstance(k, list | tuple):
        k = np.asarray([x.item() if isinstance(x, Tensor) else x for x in k])
    if isinstance(k, bool):
        k = np.asarray(k)
    if isinstance(k, np.ndarray) and k.dtype.kind not in "iub":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return k


def getitem(x: Tensor, key) -> Tensor:
    key = _expand_key(key, x.ndim)
    if all(_is_basic(k) for k in key):
        return _basic(x, key)
    # Advanced indexing: one IndexBackward0 over the whole key, after basic slicing of the
    # leading basic part (as torch does: slices first, then the index op).
    adv = tuple(k if isinstance(k, slice) or k is None else _to_index_array(k) for k in key)
    for k, size, d in zip(adv, x.shape, range(x.ndim)):
        if isinstance(k, np.ndarray) and k.dtype.kind in "iu" and k.size:
            if k.max() >= size or k.min() < -size:
                bad = int(k.max() if k.max() >= size else k.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                                 f"{size}")
        if isinstance(k, np.ndarray) and k.dtype == np.bool_:
            shp = x.shape[d:d + k.ndim]
            if tuple(k.shape) != tuple(shp):
                raise IndexError(f"The shape of the mask {list(k.shape)} at index {d} does not "
                                 f"match the shape of the indexed tensor {list(x.shape)} at "
                                 f"index {d}")
    return Index.apply(x, key=adv)


def _basic(x: Tensor, key: tuple) -> Tensor:
    if len(key) == 1 and key[0] == slice(None):
        return Slice.apply(x, dim=0, sl=slice(None)) if x.ndim else x._alias()
    out, dim = x, 0
    for k in key:
        if k is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            if k != slice(None):
                out = Slice.apply(out, dim=dim, sl=k)
            dim += 1
        else:
            if out.ndim == 0:
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in "
                                 "Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor "
                                 "to a number")
            idx = _check_index(int(k), out._data.shape[dim], dim)
            out = Select.apply(out, dim=dim, index=idx)
    return out if out is not x else x._alias()


class IndexPut(Op):
    """``x[key] = v`` recorded in the graph: x's old values get no gradient where overwritten."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, key=None):
        ctx.key, ctx.vshape = key, v.shape
        x[key] = v
        return x

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gx = g * Tensor._make(_keep_mask(g.shape, ctx.key)) if need[0] else None
        gv = Index.apply(g, key=ctx.key).sum_to_size(ctx.vshape) if need[1] else None
        return gx, gv


class CopySlices(IndexPut):
    """The same, for a basic (slicing) key: torch names this node CopySlices."""

    node_name = "CopySlices"


def _keep_mask(shape, key) -> np.ndarray:
    m = np.ones(shape, dtype=bool)
    m[key] = False
    return m


def setitem(x: Tensor, key, value) -> None:
    from ember.ops._promote import cast, const

    key_n = _expand_key(key, x.ndim)
    np_key = tuple(k if _is_basic(k) else _to_index_array(k) for k in key_n)
    if isinstance(value, Tensor):
        v = cast(value, x.dtype)
    else:
        v = const(value, x.dtype)
    tracked = STATE.enabled and (x._rg or v._rg)
    if not tracked:
        if x._rg and x._grad_fn is None and STATE.enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        x._data[np_key] = v._data
        x._vc[0] += 1
        return
    if x._grad_fn is None and x._rg:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if x._base is not None and x._base._rg:
        raise NotImplementedError("ember: in-place writes into a view of a tensor that requires "
                                  "grad are not supported yet; write into the base tensor")
    src = Tensor._make(x._data, x._grad_fn, x._output_nr)
    src._rg = x._rg
    op = CopySlices if all(_is_basic(k) for k in key_n) else IndexPut
    res = op.apply(src, v, key=np_key)
    x._grad_fn, x._output_nr, x._rg = res._grad_fn, 0, True
    x._vc[0] += 1


def nonzero(x: Tensor, *, as_tuple: bool = False):
    idx = np.nonzero(x._data)
    if as_tuple:
        return tuple(Tensor._make(i.astype(np.int64)) for i in idx)
    return Tensor._make(np.stack(idx, axis=1).astype(np.int64) if idx else
                        np.zeros((0, 0), np.int64))


METHODS = {"__getitem__": getitem, "__setitem__": setitem, "nonzero": nonzero}
FUNCTIONS = {"nonzero": nonzero}
