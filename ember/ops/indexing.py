"""``x[key]`` and ``x[key] = value``, with torch's semantics.

A key is parsed the way torch does it: ints, slices and None become a chain of views, one op per
indexed dim (SelectBackward0, SliceBackward0, UnsqueezeBackward0), applied first; then integer
tensors and boolean masks (masks become their nonzero() coordinates) index the resulting view in
one copying op (IndexBackward0), with NumPy's rules for where the indexed dims land. Because ints
are applied first, ``x[:, 0, :, [1, 2]]`` has torch's shape, not NumPy's.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops.shape import Alias, Unsqueeze

_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


def _np_steps(a: np.ndarray, steps: tuple) -> np.ndarray:
    """Apply parsed basic steps (select / slice / unsqueeze) to an array: always a view."""
    for kind, dim, arg in steps:
        if kind == 3:  # a region of the flat array (a write through a view of a base)
            off, shape, strides = arg
            # ascontiguousarray: a view for the contiguous arrays written to, a copy for
            # strided inputs (reshape(-1) of an all-0-stride array would keep stride 0)
            flat = np.ascontiguousarray(a).reshape(-1)
            a = as_strided(flat[off:], shape, tuple(s * a.itemsize for s in strides))
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


class Index(Op):
    """``x[steps][adv]`` as one copying op; ``key = (steps, adv)``."""

    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, key=None, accumulate=True):
        ctx.shape, ctx.key, ctx.accumulate = x.shape, key, accumulate
        a = _np_steps(x, key[0])
        return a[key[1]] if key[1] is not None else a.copy()

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=ctx.key, shape=ctx.shape, accumulate=ctx.accumulate)


class IndexGrad(Op):
    """Scatter a gradient into zeros of the input's shape (summing repeated indices)."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, key=None, shape=None, accumulate=False):
        ctx.key, ctx.accumulate = key, accumulate
        out = np.zeros(shape, dtype=g.dtype)
        target = _np_steps(out, key[0])
        if key[1] is None:
            target[...] = g
        elif accumulate:
            np.add.at(target, key[1], g)
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
    """An index given as a tensor / list / array, as an int64 or bool array (or None: an int)."""
    if isinstance(k, Tensor):
        a = k._data
    elif isinstance(k, np.ndarray):
        a = k
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


def _parse(shape: tuple, key) -> tuple:
    """Torch's reading of ``key``: (basic steps, advanced index dict {dim: array}, any ints)."""
    if type(key) is list and len(key) < 32 and any(
            k is None or k is Ellipsis or isinstance(k, list | tuple | slice | Tensor | np.ndarray)
            for k in key):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
            "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this "
            "will be interpreted as tensor index, x[torch.tensor(seq)], which will result either "
            "in an error or a different result", UserWarning, stacklevel=3)
        key = tuple(key)  # torch (like old NumPy) reads [[0, 1], [2, 3]] as x[[0, 1], [2, 3]]
    elif not isinstance(key, tuple):
        key = (key,)
    items = []
    used = 0
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, bool | slice):
            items.append(k)
            used += type(k) is slice
            continue
        if isinstance(k, int | np.integer):
            items.append(int(k))
            used += 1
            continue
        if isinstance(k, Tensor | np.ndarray | list | tuple):
            a = _index_array(k)
            if a.ndim == 0:
                items.append(bool(a) if a.dtype == np.bool_ else int(a))
                used += a.dtype != np.bool_
            else:
                items.append(a)
                used += a.ndim if a.dtype == np.bool_ else 1
            continue
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(k).__name__})")
    ndim = len(shape)
    if used > ndim:
        if ndim == 0:
            raise IndexError(_ZERO_DIM)
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    shape = list(shape)
    steps, adv, ints, dim, seen_ellipsis = [], {}, False, 0, False
    for k in items:
        if k is None:
            steps.append((2, dim, None))
            shape.insert(dim, 1)
            dim += 1
        elif k is Ellipsis:
            if not seen_ellipsis:
                dim += ndim - used
            seen_ellipsis = True
        elif isinstance(k, bool):
            steps.append((2, dim, None))
            shape.insert(dim, 1)
            adv[dim] = np.zeros(1 if k else 0, np.int64)
            dim += 1
        elif isinstance(k, int):
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            steps.append((0, dim, k % size))
            del shape[dim]
        elif isinstance(k, slice):
            if k.step is not None and int(k.step) <= 0:
                raise ValueError("step must be greater than zero")
            if k != slice(None) or len(items) == 1:
                steps.append((1, dim, k))
                shape[dim] = len(range(*k.indices(shape[dim])))
            dim += 1
        elif k.dtype == np.bool_:
            here = tuple(shape[dim:dim + k.ndim])
            if k.shape != here:
                bad = next(i for i, (a, b) in enumerate(zip(k.shape, here)) if a != b)
                raise IndexError(f"The shape of the mask {list(k.shape)} at index {bad} does not "
                                 f"match the shape of the indexed tensor {list(shape)} at index "
                                 f"{dim + bad}")
            for j, nz in enumerate(np.nonzero(k)):
                adv[dim + j] = nz
            dim += k.ndim
        else:
            size = shape[dim]
            if k.size and (k.max() >= size or k.min() < -size):
                bad = int(k.max() if k.max() >= size else k.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            adv[dim] = k.astype(np.int64, copy=False)
            ints = True
            dim += 1
    if len(adv) > 1:
        try:
            np.broadcast_shapes(*(a.shape for a in adv.values()))
        except ValueError:
            shapes = ", ".join(str(list(a.shape)) for a in adv.values())
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             f"with shapes {shapes}") from None
    return tuple(steps), adv, ints


def _adv_key(adv: dict):
    if not adv:
        return None
    return tuple(adv.get(d, slice(None)) for d in range(max(adv) + 1))


# --- getitem --------------------------------------------------------------------------------


def _plain_view(x: Tensor, a: np.ndarray) -> Tensor:
    """A view of ``x`` without history (the no-grad fast path of ``x[i]`` and ``x[a:b]``)."""
    t = Tensor._make(a)
    t._base = x._base if x._base is not None else x
    t._vc = x._vc
    return t


def getitem(x: Tensor, key) -> Tensor:
    tk = type(key)
    if tk is int:  # fast path: x[i]
        shape = x._data.shape
        if not shape:
            raise IndexError(_ZERO_DIM)
        if not -shape[0] <= key < shape[0]:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                             f"{shape[0]}")
        if x._rg and STATE.enabled:
            return Select.apply(x, dim=0, index=key % shape[0])
        return _plain_view(x, x._data[key, ...])
    if tk is slice and (key.step is None or key.step > 0) and x._data.ndim:  # fast path: x[a:b]
        if x._rg and STATE.enabled:
            return Slice.apply(x, dim=0, sl=key)
        return _plain_view(x, x._data[key])
    if key is Ellipsis:
        return Alias.apply(x) if x._rg else x._alias()
    if tk is Tensor and key._data.dtype == np.bool_ and key._data.shape == x._data.shape and \
            key._data.ndim and not (x._rg and STATE.enabled):  # fast path: x[mask]
        return Tensor._make(x._data[key._data])
    steps, adv, ints = _parse(x._data.shape, key)
    out = x
    for kind, dim, arg in steps:
        if kind == 0:
            out = Select.apply(out, dim=dim, index=arg)
        elif kind == 1:
            out = Slice.apply(out, dim=dim, sl=arg)
        else:
            out = Unsqueeze.apply(out, dim=dim)
    if adv:
        return Index.apply(out, key=((), _adv_key(adv)), accumulate=ints)
    return out if out is not x else (Alias.apply(x) if x._rg else x._alias())


# --- setitem --------------------------------------------------------------------------------


def _assign(target: np.ndarray, adv, v: np.ndarray, accumulate: bool = False) -> None:
    try:
        if adv is None:
            target[...] = v
        elif accumulate:
            np.add.at(target, adv, v)
        else:
            target[adv] = v
    except ValueError as e:
        if not target.flags.writeable:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.") from None
        want = target[adv].shape if adv is not None else target.shape
        if adv is not None:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot "
                               f"be broadcast to indexing result of shape {list(want)}") from e
        raise RuntimeError(f"The expanded size of the tensor ({want[-1] if want else 1}) must "
                           f"match the existing size ({v.shape[-1] if v.ndim else 1}) at "
                           f"non-singleton dimension {len(want) - 1}.  Target sizes: "
                           f"{list(want)}.  Tensor sizes: {list(v.shape)}") from None


class IndexPut(Op):
    """``x[key] = v`` (or ``+=`` with ``accumulate``) recorded in the graph."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, key=None, accumulate=False):
        ctx.key, ctx.vshape, ctx.accumulate = key, v.shape, accumulate
        _assign(_np_steps(x, key[0]), key[1], v, accumulate)
        return x

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        gx = (g if ctx.accumulate else ZeroAt.apply(g, key=ctx.key)) if need[0] else None
        gv = _to_shape(Index.apply(g, key=ctx.key), ctx.vshape) if need[1] else None
        return gx, gv


def _to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` back to a value's shape (whose leading 1s the write may have stripped)."""
    lead = len(shape) - g.ndim
    if lead <= 0:
        return g.sum_to_size(shape)
    return g.sum_to_size(shape[lead:]).reshape(shape)


class CopySlices(IndexPut):
    """The same, for a basic (slicing) key: torch names this node CopySlices."""

    node_name = "CopySlices"


def _value(x: Tensor, value) -> Tensor:
    from ember.ops._promote import cast, const

    if isinstance(value, Tensor):
        return cast(value, x.dtype)
    if isinstance(value, np.ndarray):
        return Tensor._make(value.astype(x._data.dtype, copy=False))
    if isinstance(value, list | tuple):
        return Tensor._make(np.asarray(value, dtype=x._data.dtype))
    return const(value, x.dtype)


def write_at(x: Tensor, steps: tuple, adv: dict, v: Tensor, accumulate: bool = False,
             copy_slices: bool = False) -> Tensor:
    """Write ``v`` into ``x[steps][adv]`` in place, recording the write for autograd."""
    from ember.ops.inplace import check_inplace

    key = (steps, _adv_key(adv))
    check_inplace(x)
    if not (STATE.enabled and (x._rg or v._rg)):
        _assign(_np_steps(x._data, steps), key[1], v._data, accumulate)
        x._vc[0] += 1
        return x
    base = x._base
    if base is not None and (x._rg or not base._rg):
        multi = x.__dict__.get("_multi_view") if x._rg else None
        if multi is not None:
            raise RuntimeError(
                f"Output {multi[0]} of {multi[1]} is a view and is being modified inplace. This "
                "view is the output of a function that returns multiple views. Such functions do "
                "not allow the output views to be modified inplace. You should replace the "
                "inplace operation by an out-of-place one.")
        return _write_through_view(x, base, steps, key[1], v, accumulate)
    src = Tensor._make(x._data, x._grad_fn, x._output_nr)
    src._rg = x._rg
    # torch: a write through a view of x (any basic step) rebases x onto CopySlices.
    op = CopySlices if copy_slices and (steps or not adv) else IndexPut
    res = op.apply(src, v, key=key, accumulate=accumulate)
    x._grad_fn, x._output_nr, x._rg = res._grad_fn, 0, True
    x._vc[0] += 1
    return x


def inplace_on_view(x: Tensor, fn, check, *args, **kwargs) -> Tensor:
    """An in-place op on a view under autograd: ``fn`` runs on a snapshot of the view, the
    result is written through the view (base rebased onto CopySlices, as torch).
    ``check(target, result)`` applies the in-place op's dtype/shape rules to a scratch target."""
    from ember.ops._promote import cast

    src = Tensor._make(x._data.copy(), x._grad_fn, x._output_nr)
    src._rg = x._rg
    r = fn(src, *args, **kwargs)
    check(Tensor._make(np.empty_like(x._data)), r)
    return write_at(x, (), {}, cast(r, x.dtype))


def _region(xa: np.ndarray, ba: np.ndarray):
    """Where view ``xa`` sits in C-contiguous ``ba``: (element offset, shape, element strides)."""
    isz = ba.itemsize
    off = xa.__array_interface__["data"][0] - ba.__array_interface__["data"][0]
    if not ba.flags.c_contiguous or off % isz or any(s % isz for s in xa.strides):
        return None
    return off // isz, xa.shape, tuple(s // isz for s in xa.strides)


def _write_through_view(x: Tensor, base: Tensor, steps: tuple, adv, v: Tensor,
                        accumulate: bool) -> Tensor:
    """An autograd-recorded write into a view: as torch, the base's history is rebased onto a
    CopySlices node and the view becomes an as_strided view of the new base."""
    region = _region(x._data, base._data)
    if region is None:
        raise NotImplementedError("ember: in-place writes into a view of a non-contiguous tensor "
                                  "that requires grad are not supported; write into the base")
    src = Tensor._make(base._data, base._grad_fn, base._output_nr)
    src._rg = base._rg
    res = CopySlices.apply(src, v, key=(((3, None, region), *steps), adv),
                           accumulate=accumulate)
    base._grad_fn, base._output_nr, base._rg = res._grad_fn, 0, True
    x._vc[0] += 1
    view = AsStrided.apply(base, region=region)
    x._grad_fn, x._output_nr, x._rg = view._grad_fn, 0, True
    return x


class AsStrided(Op):
    """A view of ``x`` given by (offset, shape, strides) in elements."""

    node_name = "AsStridedBackward0"
    view = True

    @staticmethod
    def forward(ctx, x, region=None):
        ctx.shape, ctx.step = x.shape, (3, None, region)
        return _np_steps(x, (ctx.step,))

    @staticmethod
    def backward(ctx, g):
        return IndexGrad.apply(g, key=((ctx.step,), None), shape=ctx.shape)


def setitem(x: Tensor, key, value) -> None:
    if not isinstance(value, Tensor | int | float | bool | np.generic):
        from ember._dtype import TYPE_NAMES

        name = type(value).__name__ if type(value).__module__ == "builtins" else \
            f"{type(value).__module__}.{type(value).__name__}"
        raise TypeError(f"can't assign a {name} to a {TYPE_NAMES[x.dtype]}")
    if not (STATE.enabled and (x._rg or (type(value) is Tensor and value._rg))) and \
            _fast_set(x, key, value):
        return
    steps, adv, _ = _parse(x._data.shape, key)
    write_at(x, steps, adv, _value(x, value), copy_slices=True)


def _simple(k) -> bool:
    tk = type(k)
    return tk is int or k is None or k is Ellipsis or (
        tk is slice and (k.step is None or (type(k.step) is int and k.step > 0)))


def _fast_set(x: Tensor, key, value) -> bool:
    """Untracked writes with keys where NumPy and torch agree: straight into the array.
    Returns False (nothing written) to defer to the full path, which has torch's errors."""
    tk = type(key)
    if tk is Tensor:
        if key._data.dtype != np.bool_ or key._data.shape != x._data.shape:
            return False
        key = key._data
    elif tk is tuple:
        if key.count(Ellipsis) > 1 or not all(_simple(k) for k in key):
            return False
    elif not _simple(key):
        return False
    v = value._data if type(value) is Tensor else value
    try:
        x._data[key] = v
    except (IndexError, ValueError, TypeError):
        return False
    x._vc[0] += 1
    return True


# --- narrow / select ------------------------------------------------------------------------


def select(x: Tensor, dim: int, index: int) -> Tensor:
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


METHODS = {"__getitem__": getitem, "__setitem__": setitem, "select": select, "narrow": narrow}
FUNCTIONS = {"select": select, "narrow": narrow}
