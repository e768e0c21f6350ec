"""``x[key]`` with torch's semantics (``x[key] = value`` is in indexing_setitem.py).

A key is parsed the way torch does it: ints, slices and None become a chain of views, one op per
indexed dim (SelectBackward0, SliceBackward0, UnsqueezeBackward0), applied first; then integer
tensors and boolean masks (masks become their nonzero() coordinates) index the resulting view in
one copying op (IndexBackward0), with NumPy's rules for where the indexed dims land. Because ints
are applied first, ``x[:, 0, :, [1, 2]]`` has torch's shape, not NumPy's.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._backend import add_at
from ember._iter_layout import broadcast_strides, element_strides, iterator_order, laid_out
from ember._tensor import Tensor
from ember.autograd.forward_ad import LEVEL as DUAL
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.compiler.traced import check
from ember.ops._complex_grad import holomorphic
from ember.ops.shape import Alias, Unsqueeze
from ember.ops.shape_strided import region_view

_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


def _np_steps(a: np.ndarray, steps: tuple) -> np.ndarray:
    """Apply parsed basic steps (select / slice / unsqueeze) to an array: always a view."""
    for kind, dim, arg in steps:
        if kind == 3:  # a region of the flat array (a write through a view of a base)
            a = region_view(a, arg)
        elif kind == 2:
            a = np.expand_dims(a, dim)
        else:
            a = a[(slice(None),) * dim + (arg, Ellipsis)]
    return a


class Select(Op):
    node_name = "SelectBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0, index=0):
        ctx.shape, ctx.dim, ctx.index = x.shape, dim, index
        return x[(slice(None),) * dim + (index, Ellipsis)]  # Ellipsis: a 0-d view, not a scalar

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=(((0, ctx.dim, ctx.index),), None), shape=ctx.shape)


class Slice(Op):
    node_name = "SliceBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, dim=0, sl=None):
        ctx.shape, ctx.dim, ctx.sl = x.shape, dim, sl
        return x[(slice(None),) * dim + (sl,)]

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=(((1, ctx.dim, ctx.sl),), None), shape=ctx.shape)


def key_arrays(key: tuple) -> tuple:
    """The index tensors torch saves for a key (``(steps, adv)``, or ``(steps, adv, arrays)``
    when a parsed key kept torch's own: one per integer index, mask or bool)."""
    if len(key) > 2:
        return key[2]
    return tuple(a for a in key[1] or () if isinstance(a, np.ndarray))


class Index(Op):
    """``x[steps][adv]`` as one copying op; ``key = (steps, adv[, arrays])``. Saves the index
    tensors, as torch (backward reads the parsed key)."""

    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, key=None, accumulate=True):
        ctx.shape, ctx.key, ctx.accumulate = x.shape, key, accumulate
        ctx.save_extra(*key_arrays(key))
        a = _np_steps(x, key[0])
        if key[1] is None:
            return a.copy()
        out = a[key[1]]
        return _torch_layout(a, key[1], out) if out.ndim > 1 else out

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=ctx.key, shape=ctx.shape, accumulate=ctx.accumulate)


def _torch_layout(a: np.ndarray, adv: tuple, out: np.ndarray) -> np.ndarray:
    """``a[adv]`` (``out``) laid out as torch's index kernel lays it out: a TensorIterator over
    ``a`` with the indexed dims replaced by the index shape (stride 0) and the index arrays.
    Indexed dims that are not adjacent go first, as in NumPy."""
    items = list(adv) + [slice(None)] * (a.ndim - len(adv))
    dims = [d for d, k in enumerate(items) if not isinstance(k, slice)]
    arrays = [items[d] for d in dims]
    bshape = np.broadcast_shapes(*(i.shape for i in arrays))
    if dims == list(range(dims[0], dims[-1] + 1)):
        before, after = list(range(dims[0])), list(range(dims[-1] + 1, a.ndim))
    else:
        before, after = [], [d for d in range(a.ndim) if d not in dims]
    st = element_strides(a)
    nb, na = len(before), len(after)
    operands = [(out.shape, (*(st[d] for d in before), *(0,) * len(bshape),
                             *(st[d] for d in after)))]
    for i in arrays:
        bst = broadcast_strides(bshape, i.shape, element_strides(i))
        operands.append((out.shape, (0,) * nb + bst + (0,) * na))
    return laid_out(out, iterator_order(out.shape, operands))


class IndexGrad(Op):
    """Scatter a gradient into zeros of the input's shape (summing repeated indices)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, key=None, shape=None, accumulate=False):
        ctx.key, ctx.accumulate = key, accumulate
        ctx.save_extra(*key_arrays(key))
        out = np.zeros(shape, dtype=g.dtype, like=g)
        target = _np_steps(out, key[0])
        if key[1] is None:
            target[...] = g
        elif accumulate:
            add_at(target, key[1], g)
        else:
            target[key[1]] = g
        return out

    @staticmethod
    def backward(ctx, gg):
        return Index.apply(gg, key=ctx.key, accumulate=ctx.accumulate)


class ZeroAt(Op):
    """``g`` with zeros written at ``key`` (the gradient of values overwritten by setitem)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, key=None):
        ctx.key = key
        ctx.save_extra(*key_arrays(key))
        out = g.copy()
        target = _np_steps(out, key[0])
        if key[1] is None:
            target[...] = 0
        else:
            target[key[1]] = 0
        return out

    @staticmethod
    def backward(ctx, gg):
        return ZeroAt.apply(gg, key=ctx.key)


# --- key parsing ----------------------------------------------------------------------------


def _index_array(k):
    """An index given as a tensor / list / tuple / range / array, as an int64 or bool array."""
    if isinstance(k, Tensor):
        a = k._data
    elif isinstance(k, np.ndarray):
        a = k
    elif isinstance(k, range):  # x[range(n), target], the nn tutorial's nll
        a = np.arange(k.start, k.stop, k.step, dtype=np.int64)
    else:
        flat = [x.item() if isinstance(x, Tensor) else x for x in k]
        a = np.asarray(flat) if flat else np.zeros(0, np.int64)
    if a.dtype == np.uint8:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=3)
        return a.astype(np.bool_)
    if a.dtype not in (np.int64, np.int32, np.bool_):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return a


def _as_tuple(key) -> tuple:
    if type(key) is list and len(key) < 32 and any(
            k is None or k is Ellipsis or
            isinstance(k, list | tuple | range | slice | Tensor | np.ndarray) for k in key):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
            "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this "
            "will be interpreted as tensor index, x[torch.tensor(seq)], which will result either "
            "in an error or a different result", UserWarning, stacklevel=4)
        return tuple(key)  # torch (like old NumPy) reads [[0, 1], [2, 3]] as x[[0, 1], [2, 3]]
    return key if isinstance(key, tuple) else (key,)


def _items(key: tuple) -> tuple:
    """Normalised key items (0-d tensors become ints / bools) and how many dims they index."""
    items, used = [], 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, bool | slice):
            items.append(k)
            used += type(k) is slice
        elif isinstance(k, int | np.integer):
            items.append(int(k))
            used += 1
        elif isinstance(k, Tensor | np.ndarray | list | tuple | range):
            a = _index_array(k)
            if a.ndim == 0:
                items.append(bool(a) if a.dtype == np.bool_ else int(a))
                used += a.dtype != np.bool_
            else:
                items.append(a)
                used += a.ndim if a.dtype == np.bool_ else 1
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
    return items, used


def _parse(shape: tuple, key) -> tuple:
    """Torch's reading of ``key``: (basic steps, advanced index dict {dim: array}, any ints,
    the index tensors torch keeps: one per integer array, mask or bool)."""
    items, used = _items(_as_tuple(key))
    ndim = len(shape)
    if used > ndim:
        raise IndexError(_ZERO_DIM if ndim == 0 else
                         f"too many indices for tensor of dimension {ndim}")
    shape = list(shape)
    steps, adv, ints, dim, seen_ellipsis, arrays = [], {}, False, 0, False, []
    for k in items:
        if k is None or isinstance(k, bool):
            steps.append((2, dim, None))
            shape.insert(dim, 1)
            if k is not None:  # x[True] / x[False]: a new dim indexed by [0] / []
                adv[dim] = np.zeros(1 if k else 0, np.int64)
                arrays.append(adv[dim])
            dim += 1
        elif k is Ellipsis:
            dim += 0 if seen_ellipsis else ndim - used
            seen_ellipsis = True
        elif isinstance(k, int):
            steps.append((0, dim, _wrap_index(k, shape[dim], dim)))
            del shape[dim]
        elif isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise ValueError("step must be greater than zero")
            if k != slice(None) or len(items) == 1:
                steps.append((1, dim, k))
                shape[dim] = len(range(*k.indices(shape[dim])))
            dim += 1
        elif k.dtype == np.bool_:
            _check_mask(k, shape, dim)
            arrays.append(k)
            for j, nz in enumerate(np.nonzero(k)):
                adv[dim + j] = nz
            dim += k.ndim
        else:
            adv[dim] = _check_array(k.astype(np.int64, copy=False), shape[dim], dim, 0 in shape)
            arrays.append(adv[dim])
            ints = True
            dim += 1
    _check_broadcast(adv)
    return tuple(steps), adv, ints, tuple(arrays)


def _wrap_index(k: int, size: int, dim: int) -> int:
    if not -size <= k < size:
        raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {size}")
    return k % size


def _check_mask(k: np.ndarray, shape: list, dim: int) -> None:
    here = tuple(shape[dim:dim + k.ndim])
    if k.shape != here:
        bad = next(i for i, (a, b) in enumerate(zip(k.shape, here)) if a != b)
        raise IndexError(f"The shape of the mask {list(k.shape)} at index {bad} does not match "
                         f"the shape of the indexed tensor {list(shape)} at index {dim + bad}")


def _check_array(k: np.ndarray, size: int, dim: int, empty: bool) -> np.ndarray:
    """torch's bounds check of an index array. In an empty tensor that has elements along
    ``dim`` torch checks nothing (its index kernel never runs): the indices are clipped, for
    NumPy's sake; the result is empty anyway."""
    if not k.size:
        return k
    if size == 0:
        raise IndexError("index is out of bounds for dimension with size 0")
    if empty:
        return np.clip(k, -size, size - 1)
    check(_in_bounds, k, size, dim)  # (ember.compile's replays check their own indices)
    return k


def _in_bounds(k: np.ndarray, size: int, dim: int) -> None:
    if k.max() >= size or k.min() < -size:
        bad = int(k.max() if k.max() >= size else k.min())
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _check_broadcast(adv: dict) -> None:
    if len(adv) > 1:
        try:
            np.broadcast_shapes(*(a.shape for a in adv.values()))
        except ValueError:
            shapes = ", ".join(str(list(a.shape)) for a in adv.values())
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             f"with shapes {shapes}") from None


def _adv_key(adv: dict):
    if not adv:
        return None
    return tuple(adv.get(d, slice(None)) for d in range(max(adv) + 1))


# --- getitem --------------------------------------------------------------------------------


def _plain_view(x: Tensor, a: np.ndarray) -> Tensor:
    """A view of ``x`` without history (the no-grad fast path of ``x[i]`` and ``x[a:b]``)."""
    t = Tensor._make(a)
    t._set_view_of(x)
    return t


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``: basic keys give views, integer/bool tensors a copy (IndexBackward0)."""
    tk = type(key)
    if tk is int:  # fast path: x[i]
        shape = x._data.shape
        if not shape:
            raise IndexError(_ZERO_DIM)
        if not -shape[0] <= key < shape[0]:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                             f"{shape[0]}")
        if x._rg and STATE.enabled or DUAL[0] is not None:
            return Select.apply(x, dim=0, index=key % shape[0])
        return _plain_view(x, x._data[key, ...])
    if tk is slice and (key.step is None or key.step > 0) and x._data.ndim:  # fast path: x[a:b]
        if x._rg and STATE.enabled or DUAL[0] is not None:
            return Slice.apply(x, dim=0, sl=key)
        return _plain_view(x, x._data[key])
    if key is Ellipsis:
        return Alias.apply(x) if x._rg else x._alias()
    if tk is Tensor and key._data.dtype == np.bool_ and key._data.shape == x._data.shape and \
            key._data.ndim and not (x._rg and STATE.enabled) and DUAL[0] is None:  # x[mask]
        return Tensor._make(x._data[key._data])
    steps, adv, ints, arrays = _parse(x._data.shape, key)
    out = x
    for kind, dim, arg in steps:
        if kind == 0:
            out = Select.apply(out, dim=dim, index=arg)
        elif kind == 1:
            out = Slice.apply(out, dim=dim, sl=arg)
        else:
            out = Unsqueeze.apply(out, dim=dim)
    if adv:
        return Index.apply(out, key=((), _adv_key(adv), arrays), accumulate=ints)
    return out if out is not x else (Alias.apply(x) if x._rg else x._alias())


def inplace_on_view(x: Tensor, fn, check, *args, **kwargs) -> Tensor:
    """See ``ember.ops.indexing_setitem.inplace_on_view`` (the in-place ops' entry point)."""
    from ember.ops import indexing_setitem

    return indexing_setitem.inplace_on_view(x, fn, check, *args, **kwargs)


# --- narrow / select ------------------------------------------------------------------------


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim`` (a view without that dim)."""
    from ember._tensor import _wrap_dim

    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, x.ndim)
    size = x._data.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(x.shape)} at dimension {d}")
    return Select.apply(x, dim=d, index=index % size)


def narrow(x: Tensor, dim: int, start, length: int) -> Tensor:
    """The view ``x[..., start:start + length, ...]`` along ``dim``."""
    from ember._tensor import _wrap_dim

    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, x.ndim)
    size = x._data.shape[d]
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return Slice.apply(x, dim=d, sl=slice(start, start + length))


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Select, Slice, Index, IndexGrad)

METHODS = {"__getitem__": getitem, "select": select, "narrow": narrow}
FUNCTIONS = {"select": select, "narrow": narrow}
