"""Sorting and selection: sort, argsort, msort, topk, kthvalue, (nan)median, mode, unique.

Value-selecting ops return ``ember.return_types`` named tuples; their backward scatters the
gradient back to the selected positions (``_PutAlong``), whose own backward gathers it again
(``_TakeAlong``), so second derivatives work.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._backend import add_at, on_device_of
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops.reduction import numpy_aliases


class _TakeAlong(Op):
    """``x`` gathered at integer ``idx`` along ``dim`` (a non-differentiable index array).
    Saves ``x`` and the index, as torch's gather."""

    node_name = "GatherBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, idx=None, dim=0):
        ctx.dim, ctx.shape = dim, x.shape
        ctx.save_extra(idx)
        return np.take_along_axis(x, idx, dim)

    @staticmethod
    def backward(ctx, g):
        idx = ctx.saved_tensors[1]._data
        return put_along(g, idx, ctx.dim, ctx.shape, accumulate=True)


class _PutAlong(Op):
    """Zeros of ``shape`` with ``g`` written (or added) at ``idx`` along ``dim``; saves the
    index, as torch's scatter."""

    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, g, idx=None, dim=0, shape=(), accumulate=False):
        ctx.dim = dim
        ctx.save_extra(idx)
        out = np.zeros(shape, dtype=g.dtype, like=g)
        if not accumulate:
            np.put_along_axis(out, idx, g, dim)
            return out
        # Repeated indices must add up: address every element by a full index tuple.
        grids = [on_device_of(g, a) for a in np.indices(idx.shape, sparse=True)]
        grids[dim] = idx
        add_at(out, tuple(grids), g)
        return out

    @staticmethod
    def backward(ctx, gg):
        (idx,) = ctx.saved_tensors
        return _TakeAlong.apply(gg, idx=idx._data, dim=ctx.dim)


def put_along(g: Tensor, idx: np.ndarray, dim: int, shape: tuple,
              accumulate: bool = False) -> Tensor:
    """Scatter ``g`` into zeros of ``shape`` at ``idx`` along ``dim`` (differentiable)."""
    return _PutAlong.apply(g, idx=idx, dim=dim, shape=shape, accumulate=accumulate)


def take_along(x: Tensor, idx: np.ndarray, dim: int) -> Tensor:
    return _TakeAlong.apply(x, idx=idx, dim=dim)


def _argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; NaN sorts as the largest value (first when descending), as in torch."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    # Sorting the reversed array stably and reversing again keeps ties in original order.
    n = a.shape[axis]
    rev = np.argsort(np.flip(a, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis)


class _Selection(Op):
    """Value-selecting ops: a subclass's ``select(x, dim, **kw)`` returns the indices to take
    along ``dim`` (keepdims layout; sort and topk always keep ``dim``); forward returns those
    values and indices, and backward sends the gradient to the selected positions. The indices
    output is saved for backward, as torch saves it."""

    saves_output = (1,)

    @classmethod
    def forward(cls, ctx, x, dim=-1, keepdim=True, **kw):
        if x.ndim == 0:
            return scalar_selection(ctx, x)
        return _finish_selection(ctx, x, cls.select(x, dim, **kw), dim, keepdim)

    @staticmethod
    def backward(ctx, g, _gi=None):
        (idx,) = ctx.saved_tensors
        if ctx.dim is None:  # 0-d input: the value is the input
            return g
        idx = idx._data
        if not ctx.keepdim and g.ndim < len(ctx.shape):
            g = g.unsqueeze(ctx.dim)
            idx = np.expand_dims(idx, ctx.dim)
        return put_along(g, idx, ctx.dim, ctx.shape)


def _laid_out_like(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    if x.flags.c_contiguous or a.shape != x.shape:
        return a
    out = np.empty_like(x, dtype=a.dtype)
    out[...] = a
    return out


def scalar_selection(ctx, x):
    """Selecting from a 0-d tensor returns it (as a copy) and index 0."""
    ctx.dim = None
    return x.copy(), np.array(0)


def _finish_selection(ctx, x, idx, dim, keepdim):
    """Values and indices from selected ``idx`` (keepdims layout) along ``dim``."""
    ctx.dim, ctx.shape, ctx.keepdim = dim, x.shape, keepdim
    vals = np.take_along_axis(x, idx, dim)
    if not keepdim:
        return np.squeeze(vals, dim), np.squeeze(idx, dim)
    return vals, idx


class Sort(_Selection):
    node_name = "SortBackward0"

    @staticmethod
    def select(x, dim, descending=False):
        return _argsort(x, dim, descending)

    @classmethod
    def forward(cls, ctx, x, dim=-1, keepdim=True, **kw):
        # torch's sort writes into tensors laid out like the input (NumPy's are C-ordered)
        return tuple(_laid_out_like(a, x) for a in super().forward(ctx, x, dim, keepdim, **kw))


class SortStable(Sort):
    """torch's ``sort.stable`` overload: chosen whenever ``stable=`` is passed."""

    node_name = "SortBackward1"


_UNSET = object()


def _no_bool(x: Tensor, kernel: str) -> None:
    if x._data.dtype == np.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _dim_of(x: Tensor, dim: int) -> int:
    return _wrap_dim(dim, x.ndim)


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable=_UNSET):
    """Sorted values and their indices along ``dim`` (a ``sort`` named tuple); always stable."""
    if x._data.dtype.kind == "c":
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    op = Sort if stable is _UNSET else SortStable
    v, i = op.apply(x, dim=_dim_of(x, dim), descending=descending)
    return return_types.sort(v, i)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    if x.ndim == 0:
        _dim_of(x, dim)
        return Tensor._make(np.array(0))
    return Tensor._make(_laid_out_like(_argsort(x._data, _dim_of(x, dim), descending), x._data))


def msort(x: Tensor) -> Tensor:
    return sort(x, 0).values


class Topk(_Selection):
    node_name = "TopkBackward0"

    @staticmethod
    def select(x, dim, k=1, largest=True):
        return np.take(_argsort(x, dim, largest), np.arange(k), axis=dim)


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    d = _dim_of(x, dim)
    n = x.shape[d] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if x._data.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    v, i = Topk.apply(x, k=k, dim=d, largest=largest)
    return return_types.topk(v, i)


class Kthvalue(_Selection):
    node_name = "KthvalueBackward0"

    @staticmethod
    def select(x, dim, k=1):
        return np.take(_argsort(x, dim, False), [k - 1], axis=dim)


def kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The k-th smallest value along ``dim`` and its index."""
    _no_bool(x, "kthvalue_cpu")
    d = _dim_of(x, dim)
    n = x.shape[d] if x.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    v, i = Kthvalue.apply(x, k=k, dim=d, keepdim=keepdim)
    return return_types.kthvalue(v, i)


class MedianDim(_Selection):
    node_name = "MedianBackward1"

    @staticmethod
    def select(x, dim):
        n = x.shape[dim]
        idx = np.take(_argsort(x, dim, False), [(n - 1) // 2], axis=dim)
        if x.dtype.kind == "f":
            # torch's median propagates NaN: pick the first NaN of a slice that has one.
            nan = np.isnan(x)
            has = nan.any(axis=dim, keepdims=True)
            idx = np.where(has, np.argmax(nan, axis=dim, keepdims=True), idx)
        return idx


def _lower_median(flat: np.ndarray):
    """The lower median of a 1-D array; NaN when it is empty."""
    if flat.size == 0:
        return np.array(np.nan, dtype=flat.dtype)
    k = (flat.size - 1) // 2
    return np.partition(flat, k)[k]


class Median(Op):
    node_name = "MedianBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        if flat.dtype.kind == "f" and np.isnan(flat).any():
            return np.array(np.nan, dtype=x.dtype)
        return _lower_median(flat)

    @staticmethod
    def backward(ctx, g):
        from ember.ops.reduction_minmax import evenly_distribute

        x, out = ctx.saved_tensors
        return evenly_distribute(g, x, out)


def _median(x: Tensor, dim, keepdim: bool, name: str, whole_op, dim_op):
    """median and nanmedian: of all elements, or a named tuple along ``dim``."""
    _no_bool(x, "median_cpu" if dim is None else "median_out")
    if dim is None:
        return whole_op.apply(x)
    d = _dim_of(x, dim)
    if x.ndim and x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    v, i = dim_op.apply(x, dim=d, keepdim=keepdim)
    return getattr(return_types, name)(v, i)


def median(x: Tensor, dim: int | None = None, keepdim: bool = False):
    """Lower median of all elements, or (values, indices) along ``dim``."""
    return _median(x, dim, keepdim, "median", Median, MedianDim)


class NanmedianDim(_Selection):
    node_name = "NanmedianBackward1"

    @staticmethod
    def select(x, dim):
        order = _argsort(x, dim, False)  # NaNs sort last
        count = np.sum(~np.isnan(x), axis=dim, keepdims=True) if x.dtype.kind == "f" else \
            np.full([1 if i == dim else n for i, n in enumerate(x.shape)], x.shape[dim])
        return np.take_along_axis(order, np.maximum(count - 1, 0) // 2, dim)


class Nanmedian(Median):
    node_name = "NanmedianBackward0"

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        return _lower_median(flat[~np.isnan(flat)] if flat.dtype.kind == "f" else flat)


def nanmedian(x: Tensor, dim: int | None = None, keepdim: bool = False):
    """Like ``median``, ignoring NaNs (NaN only where a slice is all NaN)."""
    return _median(x, dim, keepdim, "nanmedian", Nanmedian, NanmedianDim)


class Mode(_Selection):
    node_name = "ModeBackward0"

    @staticmethod
    def select(x, dim):
        s = np.sort(x, axis=dim)
        # Count each sorted value's run; the most frequent smallest value wins, as in torch.
        moved = np.moveaxis(s, dim, -1)
        n = moved.shape[-1]
        counts = (moved[..., :, None] == moved[..., None, :]).sum(-1)
        best = np.take_along_axis(moved, np.argmax(counts, -1)[..., None], -1)
        # torch reports the last position at which the mode occurs.
        hit = np.moveaxis(x, dim, -1) == best
        last = n - 1 - np.argmax(hit[..., ::-1], -1)
        return np.expand_dims(np.moveaxis(last[..., None], -1, dim).squeeze(dim), dim)


def mode(x: Tensor, dim: int = -1, keepdim: bool = False):
    """Most frequent value along ``dim`` (the smallest on ties) and an index of it."""
    d = _dim_of(x, dim)
    v, i = Mode.apply(x, dim=d, keepdim=keepdim)
    return return_types.mode(v, i)


def unique(x: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: int | None = None):
    """Unique elements (sorted), optionally with inverse indices and counts."""
    a = x._data
    axis = None if dim is None else _dim_of(x, dim)
    vals, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=axis)
    out = [Tensor._make(vals)]
    if return_inverse:
        inv = inv.reshape(a.shape) if axis is None else inv.reshape(-1)
        out.append(Tensor._make(inv.astype(np.int64)))
    if return_counts:
        out.append(Tensor._make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


METHODS = dict(numpy_aliases({
    "sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
    "median": median, "nanmedian": nanmedian, "mode": mode,
}), unique=unique)
FUNCTIONS = dict(METHODS)
