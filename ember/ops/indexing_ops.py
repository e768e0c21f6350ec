"""Index-driven ops: gather/scatter, index_select/add/copy/fill, index_put, take."""

from __future__ import annotations

import warnings

import numpy as np

from ember import _dtype
from ember._backend import add_at, ufunc_method
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.compiler.traced import check
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import cast, scalar
from ember.ops.indexing import IndexGrad, _parse
from ember.ops.indexing_setitem import IndexPut, _value, write_at
from ember.ops.inplace import apply_inplace


def _full_index(index: np.ndarray, dim: int) -> tuple:
    """Coordinates addressing ``out[i][j]...[index[i][j]...]...`` (gather/scatter's pattern)."""
    nd = index.ndim
    key = []
    for d in range(nd):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * nd
            shape[d] = index.shape[d]
            key.append(np.arange(index.shape[d], like=index).reshape(shape))
    return tuple(key)


def _fit(g: Tensor, shape: tuple) -> Tensor:
    """Pad ``g`` with zeros up to ``shape`` (src larger than index in scatter)."""
    if tuple(g.shape) == tuple(shape):
        return g
    key = ((), tuple(slice(0, s) for s in g.shape))
    return IndexGrad.apply(g, key=key, shape=shape)


def _check_index(x: Tensor, dim: int, index: Tensor, fname: str, src: Tensor | None = None):
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}(): Expected dtype int64 for index")
    d = _wrap_dim(dim, x.ndim)
    xs, ish = x._data.shape, index._data.shape
    if index.ndim != x.ndim and not (index.ndim <= 1 and x.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(len(ish)):
        if k != d and (ish[k] > xs[k] or (src is not None and ish[k] > src._data.shape[k])):
            if src is not None:
                raise RuntimeError(f"Expected index {list(ish)} to be no larger than self "
                                   f"{list(xs)} apart from dimension {d} and to be no larger "
                                   f"size than src {list(src.shape)}")
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(ish)} to be no larger than self {list(xs)} apart from "
                               f"dimension {d}")
    if src is not None and src.ndim and ish and ish[d] > src._data.shape[d]:
        raise RuntimeError(f"Expected index {list(ish)} to be no larger than self {list(xs)} "
                           f"apart from dimension {d} and to be no larger size than src "
                           f"{list(src.shape)}")
    idx = index._data
    size = xs[d] if xs else 1
    if idx.size:
        check(_in_range, idx, size, d)
    return d, idx.astype(np.int64, copy=False)


def _in_range(idx: np.ndarray, size: int, d: int) -> None:
    idx = getattr(idx, "_physical", idx)  # under vmap: every sample's indices at once
    if idx.max() >= size or idx.min() < 0:
        bad = int(idx.max() if idx.max() >= size else idx.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")


def _same_dtype(x: Tensor, src: Tensor, fname: str) -> None:
    if src.dtype is x.dtype:
        return
    a, b = _legacy(x), _legacy(src)
    if fname == "index_add_":
        raise RuntimeError(f"index_add_(): self ({a}) and source ({b}) must have the same "
                           "scalar type")
    if fname == "index_copy_":
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {a} and (source) {b}")
    raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")


def _legacy(t: Tensor) -> str:
    from ember._dtype import TYPE_NAMES

    return TYPE_NAMES[t.dtype].split(".")[-1].removesuffix("Tensor")


def _2d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _src_part(src: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The leading block of ``src`` that scatter reads (src may be larger than index)."""
    return _2d(src)[tuple(slice(0, s) for s in _2d(index).shape)]


def _along(a: np.ndarray, dim: int) -> np.ndarray:
    """A view of ``a`` with ``dim`` first, so ``_along(a, dim)[index]`` are the slices the
    index_* ops address (writes go through to ``a``)."""
    return np.moveaxis(_2d(a), dim, 0)


# --- gather / scatter -----------------------------------------------------------------------


# Each op saves the index (and what else torch saves) with ``ctx.save_extra``, as torch, and
# its backward reads it from there.


class Gather(Op):
    node_name = "GatherBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, index=None, dim=0):
        ctx.shape, ctx.dim = x.shape, dim
        ctx.save_extra(index)
        out = _2d(x)[_full_index(_2d(index), dim)]
        return out.reshape(index.shape)

    @staticmethod
    def backward(ctx, g):
        index = ctx.saved_tensors[1]._data
        zeros = Tensor._make(np.zeros(ctx.shape, g.dtype.np, like=g._data))
        return ScatterAdd.apply(zeros, g, index=index, dim=ctx.dim)


def gather(x: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = x[index[i][j]][j]`` (for dim 0), index no larger than ``x``."""
    d, idx = _check_index(x, dim, index, "gather")
    return Gather.apply(x, index=idx, dim=d)


class ScatterAdd(Op):
    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0):
        ctx.dim, ctx.sshape = dim, src.shape
        ctx.save_extra(index, for_=(1,))
        out = x.copy()
        add_at(_2d(out), _full_index(_2d(index), dim), _src_part(src, index))
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gs = _fit(Gather.apply(g, index=ctx.saved_tensors[0]._data, dim=ctx.dim), ctx.sshape) \
            if need[1] else None
        return (g if need[0] else None), gs


class Scatter(Op):
    node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0):
        ctx.dim, ctx.sshape = dim, src.shape
        ctx.save_extra(index)
        out = x.copy()
        _2d(out)[_full_index(_2d(index), dim)] = _src_part(src, index)
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        index = ctx.saved_tensors[0]._data
        gx = ScatterValue.apply(g, index=index, dim=ctx.dim, value=0) if need[0] else None
        gs = _fit(Gather.apply(g, index=index, dim=ctx.dim), ctx.sshape) if need[1] else None
        return gx, gs


class ScatterValue(Op):
    node_name = "ScatterBackward1"

    @staticmethod
    def forward(ctx, x, index=None, dim=0, value=0):
        ctx.dim = dim
        ctx.save_extra(index)
        out = x.copy()
        _2d(out)[_full_index(_2d(index), dim)] = value
        return out

    @staticmethod
    def backward(ctx, g):
        return ScatterValue.apply(g, index=ctx.saved_tensors[0]._data, dim=ctx.dim, value=0)


class ScatterLegacyReduce(Op):
    """``scatter(..., reduce='add'|'multiply')``: torch has no derivative for it either."""

    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, reduce="add"):
        out = x.copy()
        vals = _src_part(src, index) if src.ndim else src
        ufunc = np.add if reduce == "add" else np.multiply
        ufunc_method(ufunc, "at", _2d(out), _full_index(_2d(index), dim), vals)
        return out

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::scatter with reduce is not implemented")


def scatter(x: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    """A copy of ``x`` with ``src`` (a tensor or ``value``) written at ``index`` along dim."""
    if src is None:
        src = value
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if isinstance(src, Tensor):
            warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                          "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                          "instead for more reduction options.", UserWarning, stacklevel=2)
        s = _value(x, src)
        d, idx = _check_index(x, dim, index, "scatter", s if s.ndim else None)
        return ScatterLegacyReduce.apply(x, s, index=idx, dim=d, reduce=reduce)
    if isinstance(src, Tensor):
        d, idx = _check_index(x, dim, index, "scatter", src)
        _same_dtype(x, src, "scatter")
        return Scatter.apply(x, src, index=idx, dim=d)
    d, idx = _check_index(x, dim, index, "scatter")
    return ScatterValue.apply(x, index=idx, dim=d, value=src)


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along dim (repeats add up)."""
    d, idx = _check_index(x, dim, index, "scatter_add", src)
    _same_dtype(x, src, "scatter")
    return ScatterAdd.apply(x, src, index=idx, dim=d)


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` after broadcasting ``x`` and ``indices`` (flattened if dim=None)."""
    if dim is None:
        return gather(x.reshape(-1), 0, indices.reshape(-1))
    if x.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = _wrap_dim(dim, x.ndim)
    xs, ish = list(x.shape), list(indices.shape)
    bx = [max(a, b) if k != d else a for k, (a, b) in enumerate(zip(xs, ish))]
    bi = [max(a, b) if k != d else b for k, (a, b) in enumerate(zip(xs, ish))]
    xe = x.expand(bx) if bx != xs else x
    ie = Tensor._make(np.broadcast_to(indices._data, bi)) if bi != ish else indices
    return gather(xe, d, ie)


# --- index_select / index_add / index_copy / index_fill ------------------------------------


def _check_vector_index(x: Tensor, dim: int, index: Tensor, fname: str):
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{fname}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{fname}(): Index is supposed to be a vector")
    d = _wrap_dim(dim, x.ndim)
    idx = index._data.reshape(-1).astype(np.int64, copy=False)
    size = x._data.shape[d] if x.ndim else 1
    if idx.size:
        check(_vector_in_range, idx, size, d, fname, x.ndim > 1 and not x._data.size)
    return d, idx


def _vector_in_range(idx: np.ndarray, size: int, d: int, fname: str, empty_nd: bool) -> None:
    if fname == "index_select" and (idx.max() >= size or idx.min() < 0):
        # no negative indices here; torch's kernel for an empty multi-dim input says so its way
        if empty_nd:
            raise RuntimeError(f"INDICES element is out of DATA bounds, id="
                               f"{int(idx[(idx < 0) | (idx >= size)][0])} axis_dim={size}")
        raise IndexError("index out of range in self")
    if idx.max() >= size or idx.min() < -size:
        bad = int(idx.max() if idx.max() >= size else idx.min())
        msg = f"index {bad} is out of bounds for dimension {d} with size {size}"
        if fname == "index_add":
            raise RuntimeError(msg)
        raise IndexError(f"{fname}_(): {msg}" if fname == "index_copy" else msg)


class IndexSelect(Op):
    node_name = "IndexSelectBackward0"

    @staticmethod
    def forward(ctx, x, index=None, dim=0):
        ctx.shape, ctx.dim = x.shape, dim
        ctx.save_extra(index)
        if x.ndim == 0:  # torch: a 0-d input gives a 0-d result
            return x.copy()
        return np.take(_2d(x), index, axis=dim).reshape(
            x.shape[:dim] + index.shape + x.shape[dim + 1:])

    @staticmethod
    def backward(ctx, g):
        zeros = Tensor._make(np.zeros(ctx.shape, g.dtype.np, like=g._data))
        return IndexAdd.apply(zeros, g, index=ctx.saved_tensors[0]._data, dim=ctx.dim)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``x`` at the 1-D ``index`` along ``dim``."""
    if x.ndim == 0 and index.numel() != 1:
        raise RuntimeError("index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    d, idx = _check_vector_index(x, dim, index, "index_select")
    return IndexSelect.apply(x, index=idx, dim=d)


class IndexAdd(Op):
    node_name = "IndexAddBackward0"
    saves = (1,)  # the source (for its shape) and the index, for the source's gradient
    save_for = ((1,),)

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, alpha=1):
        ctx.dim, ctx.alpha = dim, alpha
        ctx.save_extra(index, for_=(1,))
        out = x.copy()
        s = src if alpha == 1 else src * scalar(alpha, src.dtype)
        add_at(_along(out, dim), index, _along(s, dim))
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gs = IndexSelect.apply(g, index=ctx.saved_tensors[1]._data, dim=ctx.dim) \
            if need[1] else None
        if gs is not None and ctx.alpha != 1:
            gs = gs * ctx.alpha
        return (g if need[0] else None), gs


def _check_source(x: Tensor, d: int, idx: np.ndarray, source: Tensor, fname: str) -> None:
    ss, xs = source._data.shape, x._data.shape
    n = ss[d] if source.ndim else 1
    if n != idx.size:
        if fname == "index_add_":
            raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                               f"source.size(dim): ({n}), for dim: {d}")
        raise IndexError(f"{fname}(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({n})")
    if len(ss) != len(xs) or any(a != b for k, (a, b) in enumerate(zip(ss, xs)) if k != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(xs)} source.shape = "
                           f"{list(ss)}")


def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of ``x`` with ``alpha * source`` added at ``index`` along ``dim``."""
    d, idx = _check_vector_index(x, dim, index, "index_add")
    _check_source(x, d, idx, source, "index_add_")
    _same_dtype(x, source, "index_add_")
    return IndexAdd.apply(x, source, index=idx, dim=d, alpha=alpha)


class IndexFill(Op):
    node_name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, index=None, dim=0, value=0):
        ctx.dim = dim
        ctx.save_extra(index)
        out = x.copy()
        _along(out, dim)[index] = value
        return out

    @staticmethod
    def backward(ctx, g):
        return IndexFill.apply(g, index=ctx.saved_tensors[0]._data, dim=ctx.dim, value=0)


class IndexFillTensor(Op):
    node_name = "IndexFillBackward1"

    @staticmethod
    def forward(ctx, x, v, index=None, dim=0):
        ctx.dim = dim
        ctx.save_extra(index)
        out = x.copy()
        _along(out, dim)[index] = v
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        index = ctx.saved_tensors[0]._data
        gx = IndexFill.apply(g, index=index, dim=ctx.dim, value=0) if need[0] else None
        gv = IndexSelect.apply(g, index=index, dim=ctx.dim).sum() if need[1] else None
        return gx, gv


def index_fill(x: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``x`` with ``value`` at ``index`` along ``dim``."""
    d, idx = _check_vector_index(x, dim, index, "index_fill")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return IndexFillTensor.apply(x, cast(value, x.dtype), index=idx, dim=d)
    _dtype.check_int64(value, x.dtype)
    return IndexFill.apply(x, index=idx, dim=d, value=value)


class IndexCopy(Op):
    node_name = "IndexCopyBackward0"
    saves = (1,)  # the source (for its shape), for its gradient
    save_for = ((1,),)

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0):
        ctx.dim = dim
        ctx.save_extra(index)
        out = x.copy()
        _along(out, dim)[index] = _along(src, dim)
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        index = ctx.saved_tensors[1]._data
        gx = IndexFill.apply(g, index=index, dim=ctx.dim, value=0) if need[0] else None
        gs = IndexSelect.apply(g, index=index, dim=ctx.dim) if need[1] else None
        return gx, gs


def index_copy(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with ``source`` written at ``index`` along ``dim``."""
    d, idx = _check_vector_index(x, dim, index, "index_copy")
    _check_source(x, d, idx, source, "index_copy_")
    _same_dtype(x, source, "index_copy_")
    return IndexCopy.apply(x, source, index=idx, dim=d)


# --- index_put / take / put -----------------------------------------------------------------


def index_put_(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``x[indices] = values`` (``+=`` with ``accumulate``, summing repeated indices)."""
    if isinstance(values, Tensor) and values.dtype is not x.dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got "
                           f"{x.dtype.name.capitalize()} for the destination and "
                           f"{values.dtype.name.capitalize()} for the source.")
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(i).__name__}")
    steps, adv, _, arrays = _parse(x._data.shape, tuple(indices))
    return write_at(x, steps, adv, _value(x, values), accumulate=accumulate, arrays=arrays)


def index_put(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``index_put_``."""
    return index_put_(x.clone(), indices, values, accumulate)


class Take(Op):
    node_name = "TakeBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, index=None):
        ctx.shape = x.shape
        ctx.save_extra(index)
        return x.reshape(-1)[index]

    @staticmethod
    def backward(ctx, g):
        size = int(np.prod(ctx.shape))
        index = ctx.saved_tensors[1]._data
        flat = IndexGrad.apply(g, key=((), (index,)), shape=(size,), accumulate=True)
        return flat.reshape(ctx.shape)


def _flat_index(x: Tensor, index: Tensor) -> np.ndarray:
    idx = index._data.astype(np.int64, copy=False)
    n = x._data.size
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return idx


def take(x: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``x`` at ``index`` (shaped like ``index``)."""
    return Take.apply(x, index=_flat_index(x, index))


class Put(IndexPut):
    """Saves the flat index and, for its gradient, the source, as torch's put."""

    node_name = "PutBackward0"
    saves = (1,)
    save_for = ((1,),)


def put_(x: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Write ``source`` into the flattened ``x`` at ``index`` (``+=`` with accumulate)."""
    idx = _flat_index(x, index) % max(x._data.size, 1)
    v = _value(x, source).reshape(-1)
    if not x.ndim:
        return write_at(x, (), {}, v.reshape(()), accumulate=accumulate, op=Put, arrays=(idx,))
    adv = dict(enumerate(np.unravel_index(idx.reshape(-1), x._data.shape)))
    return write_at(x, (), adv, v, accumulate=accumulate, op=Put, arrays=(idx,))


def put(x: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place ``put_``."""
    return put_(x.clone(), index, source, accumulate)


def nonzero(x: Tensor, *, as_tuple: bool = False):
    """Indices of the nonzero elements: an [n, ndim] tensor, or one tensor per dim."""
    a = x._data.reshape(1) if x._data.ndim == 0 else x._data
    idx = np.nonzero(a)
    if as_tuple:
        return tuple(Tensor._make(i.astype(np.int64)) for i in idx)
    out = np.stack(idx, axis=1).astype(np.int64)
    return Tensor._make(out if x._data.ndim else out[:, :0])


def argwhere(x: Tensor) -> Tensor:
    """``nonzero(x)``."""
    return nonzero(x)


def _inplace(fn):
    def method(x: Tensor, *args, **kwargs) -> Tensor:
        return apply_inplace(x, fn, *args, **kwargs)
    method.__name__ = fn.__name__ + "_"
    return method


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Gather, ScatterAdd, IndexSelect, IndexAdd)

METHODS = {
    "scatter_": _inplace(scatter), "scatter_add_": _inplace(scatter_add),
    "index_add_": _inplace(index_add), "index_fill_": _inplace(index_fill),
    "index_copy_": _inplace(index_copy),
    "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
    "take_along_dim": take_along_dim, "index_select": index_select, "index_add": index_add,
    "index_fill": index_fill, "index_copy": index_copy, "index_put_": index_put_,
    "index_put": index_put, "take": take, "put_": put_, "put": put, "nonzero": nonzero,
    "argwhere": argwhere,
}
FUNCTIONS = {k: v for k, v in METHODS.items() if not k.endswith("_")}
