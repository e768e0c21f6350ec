"""``x[key] = value``: torch's setitem, and writes into views under autograd.

Keys are parsed as for getitem (ember/ops/indexing.py). A recorded write is an IndexPut /
CopySlices node; a write into a view of a tensor that requires grad rebases the view's base onto
CopySlices and turns the view into an as_strided view of the new base, as torch does.
"""

from __future__ import annotations

import numpy as np

from ember._backend import add_at
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops.indexing import Index, ZeroAt, _adv_key, _np_steps, _parse, key_arrays
from ember.ops.shape_strided import AsStrided


def _assign(target: np.ndarray, adv, v: np.ndarray, accumulate: bool = False) -> None:
    try:
        if adv is None:
            target[...] = v
        elif accumulate:
            add_at(target, adv, v)
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
    """``x[key] = v`` (or ``+=`` with ``accumulate``) recorded in the graph; saves the index
    tensors, as torch."""

    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, v, key=None, accumulate=False):
        ctx.key, ctx.vshape, ctx.accumulate = key, v.shape, accumulate
        ctx.save_extra(*key_arrays(key))
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
    from ember.ops._promote import cast, const, scalar

    if isinstance(value, Tensor):
        return cast(value, x.dtype)
    if isinstance(value, np.ndarray):
        return Tensor._make(value.astype(x._data.dtype, copy=False))
    if isinstance(value, list | tuple):
        return Tensor._make(scalar(value, x._data.dtype))
    return const(value, x.dtype)


def write_at(x: Tensor, steps: tuple, adv: dict, v: Tensor, accumulate: bool = False,
             copy_slices: bool = False, op=None, arrays: tuple | None = None) -> Tensor:
    """Write ``v`` into ``x[steps][adv]`` in place, recording the write for autograd (as ``op``,
    by default IndexPut, or CopySlices for a basic key when ``copy_slices``); ``arrays``: the
    index tensors torch saves for the write (by default, those of ``adv``)."""
    from ember.ops.inplace import check_inplace

    key = (steps, _adv_key(adv)) if arrays is None else (steps, _adv_key(adv), arrays)
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
        return _write_through_view(x, base, steps, key[1:], v, accumulate)
    src = Tensor._make(x._data, x._grad_fn, x._output_nr)
    src._rg = x._rg
    # torch: a write through a view of x (any basic step) rebases x onto CopySlices.
    if op is None:
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


def _write_through_view(x: Tensor, base: Tensor, steps: tuple, adv: tuple, v: Tensor,
                        accumulate: bool) -> Tensor:
    """An autograd-recorded write into a view: as torch, the base's history is rebased onto a
    CopySlices node and the view becomes an as_strided view of the new base."""
    region = _region(x._data, base._data)
    if region is None:
        raise NotImplementedError("ember: in-place writes into a view of a non-contiguous tensor "
                                  "that requires grad are not supported; write into the base")
    src = Tensor._make(base._data, base._grad_fn, base._output_nr)
    src._rg = base._rg
    res = CopySlices.apply(src, v, key=(((3, None, region), *steps), *adv),
                           accumulate=accumulate)
    base._grad_fn, base._output_nr, base._rg = res._grad_fn, 0, True
    x._vc[0] += 1
    view = AsStrided.apply(base, region=region)
    x._grad_fn, x._output_nr, x._rg = view._grad_fn, 0, True
    return x


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` (a tensor or a number), recorded for autograd when needed."""
    if not isinstance(value, Tensor | int | float | bool | np.generic):
        from ember._dtype import TYPE_NAMES

        name = type(value).__name__ if type(value).__module__ == "builtins" else \
            f"{type(value).__module__}.{type(value).__name__}"
        raise TypeError(f"can't assign a {name} to a {TYPE_NAMES[x.dtype]}")
    if not (STATE.enabled and (x._rg or (type(value) is Tensor and value._rg))) and \
            _fast_set(x, key, value):
        return
    steps, adv, _, arrays = _parse(x._data.shape, key)
    write_at(x, steps, adv, _value(x, value), copy_slices=True, arrays=arrays)


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


METHODS = {"__setitem__": setitem}
