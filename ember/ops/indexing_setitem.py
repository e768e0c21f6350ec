"""``x[key] = value``: torch's setitem, and writes into views under autograd.

Keys are parsed as for getitem (ember/ops/indexing.py). A recorded write is an IndexPut /
CopySlices node; a write into a view of a tensor that requires grad rebases the view's base onto
CopySlices and regenerates the view's history over the new base, as torch does (see
ember/ops/view_history.py).
"""

from __future__ import annotations

import numpy as np

from ember._backend import add_at
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops.indexing import Index, ZeroAt, _adv_key, _np_steps, _parse, key_arrays
from ember.ops.memory_overlap import (
    check_internal,
    check_none,
    check_partial,
    has_internal_overlap,
    internal_overlap_error,
)
from ember.ops.view_history import ViewOfBase, index_key, multi_view_error, rebase, view_index


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
    def forward(ctx, x, v, key=None, accumulate=False, overlap=False):
        ctx.key, ctx.vshape, ctx.accumulate, ctx.overlap = key, v.shape, accumulate, overlap
        ctx.save_extra(*key_arrays(key))
        _assign(_np_steps(x, key[0]), key[1], v, accumulate)
        return x

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        if ctx.overlap and need[0]:  # torch's CopySlices copies into the view of the gradient
            raise internal_overlap_error()
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
    if steps and STATE.enabled:
        x._sync()  # torch takes the key's views of x first, which brings x's history up to date
    check_inplace(x)
    if not (STATE.enabled and (x._rg or v._rg)):
        _assign(_np_steps(x._data, steps), key[1], v._data, accumulate)
        x._vc[0] += 1
        return x
    base = x._base
    if base is not None and (x._rg or not base._rg):
        _check_multi_view(x)
        return _write_through_view(x, base, steps, key[1], v, accumulate,
                                   arrays=key_arrays(key))
    src = Tensor._make(x._data, x._grad_fn, x._output_nr)
    src._rg = x._rg
    # torch: a write through a view of x (any basic step) rebases x onto CopySlices.
    if op is None:
        op = CopySlices if copy_slices and (steps or not adv) else IndexPut
    res = op.apply(src, v, key=key, accumulate=accumulate)
    rebase(x, res._grad_fn)
    x._vc[0] += 1
    return x


def inplace_on_view(x: Tensor, fn, check, *args, **kwargs) -> Tensor:
    """An in-place op on a view under autograd, as torch's CopySlices: ``fn`` runs on a
    snapshot of the view whose gradient goes straight to the base, the result is written
    through the view, the base is rebased onto CopySlices and the view's history regenerated.
    ``check(target, result)`` applies the in-place op's dtype/shape rules to a scratch target."""
    from ember.ops._promote import cast
    from ember.ops.inplace import saved_output_moved

    _check_multi_view(x)
    base = x._base
    index = _index_in(x, base)
    src = Tensor._make(base._data, base._grad_fn, base._output_nr)
    src._rg = base._rg
    old = ViewOfBase.apply(src, view=x._data.copy(), key=index_key(index, base._data.shape),
                           through=True)
    r = fn(old, *args, **kwargs)
    check(Tensor._make(np.empty_like(x._data)), r)
    _write_through_view(x, base, (), None, cast(r, x.dtype), False, index)
    saved_output_moved(r, x)
    return x


def _check_multi_view(x: Tensor) -> None:
    """torch refuses a recorded write into an output of split/unbind/chunk (or a view of one)."""
    if x._aux is not None and x._aux.multi_view:
        raise multi_view_error(x, indirect=False)


def _index_in(x: Tensor, base: Tensor) -> np.ndarray:
    index = view_index(x._data, base._data)
    if index is None:
        raise RuntimeError("ember: this view no longer shares memory with its base (its base's "
                           ".data was replaced); write into a clone")
    return index


def _write_through_view(x: Tensor, base: Tensor, steps: tuple, adv, v: Tensor,
                        accumulate: bool, index=None, arrays: tuple = ()) -> Tensor:
    """An autograd-recorded write into a view: as torch, the base's history is rebased onto a
    CopySlices node (a write at the base elements the view's elements alias) and the view's
    history is regenerated over it. ``arrays``: the index tensors torch saves for the write."""
    overlap = has_internal_overlap(x._data)
    index = _np_steps(_index_in(x, base) if index is None else index, steps)
    if adv is not None:
        index = index[adv]
    src = Tensor._make(base._data, base._grad_fn, base._output_nr)
    src._rg = base._rg
    res = CopySlices.apply(src, v, key=(*index_key(index, base._data.shape), arrays),
                           accumulate=accumulate, overlap=overlap)
    rebase(base, res._grad_fn)
    x._vc[0] += 1
    if not steps:  # torch regenerates the view written to; x itself only when that was x
        x._sync()
    return x


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value`` (a tensor or a number), recorded for autograd when needed."""
    if not isinstance(value, Tensor | int | float | bool | complex | np.generic):
        from ember._dtype import TYPE_NAMES

        name = type(value).__name__ if type(value).__module__ == "builtins" else \
            f"{type(value).__module__}.{type(value).__name__}"
        raise TypeError(f"can't assign a {name} to a {TYPE_NAMES[x.dtype]}")
    if not (STATE.enabled and (x._rg or (type(value) is Tensor and value._rg))) and \
            _fast_set(x, key, value):
        return
    try:
        steps, adv, ints, arrays = _parse(x._data.shape, key)
    except IndexError as e:  # an index array out of bounds: torch's index_put_ checks overlap first
        if "out of bounds" in str(e) and value is x and x._data.shape[:1] != (1,) and any(
                isinstance(k, list | Tensor | np.ndarray)
                for k in (key if isinstance(key, tuple) else (key,))):
            check_none(x._data, x._data)
        if str(e).startswith("The shape of the mask"):  # index_put_'s check: after autograd's
            from ember.ops.inplace import check_inplace

            check_inplace(x)
        raise
    steps = _drop_full_slices(steps, x._data.shape)
    _check_overlap(_np_steps(x._data, steps), value._data if type(value) is Tensor else None,
                   bool(adv), ints)
    if not steps and not adv:  # the whole tensor: torch's copy_to (copy_ or fill_), no CopySlices
        from ember.ops.inplace import copy_, fill_

        v = _value(x, value)
        (copy_ if v.ndim or v.shape == x.shape else fill_)(x, v)
        return
    write_at(x, steps, adv, _value(x, value), copy_slices=True, arrays=arrays)


def _drop_full_slices(steps: tuple, shape: tuple) -> tuple:
    """Without the slices that keep a whole dim (``0:n`` or ``:``, with a stop of at least the
    size): torch's indexing skips them, so that ``x[:2] = v`` on 2 rows is ``x.copy_(v)``."""
    shape, out = list(shape), []
    for step in steps:
        kind, dim, arg = step
        if kind == 1 and arg.start in (None, 0) and arg.step in (None, 1) and (
                arg.stop is None or arg.stop >= shape[dim]):
            continue
        if kind == 0:
            del shape[dim]
        elif kind == 2:
            shape.insert(dim, 1)
        out.append(step)
    return tuple(out)


def _check_overlap(target: np.ndarray, v, advanced: bool, ints: bool) -> None:
    """torch's memory-overlap rules for ``x[key] = v`` (``target`` is ``x`` after the key's
    basic part; ``v`` an array, or None for a number). A basic key copies or fills with a 0-d
    tensor: the target must not overlap itself (nor, for a copy, partly overlap ``v``). An
    advanced key is index_put_: no overlap with ``v`` at all (but a 0-d value with a mask key
    is masked_fill_: none checked)."""
    if advanced:
        if v is not None and (ints or v.ndim):
            # torch puts the value without its leading 1-dims (a view: not the same tensor)
            lead = next((i for i, n in enumerate(v.shape) if n != 1), v.ndim)
            check_none(target, v.reshape(v.shape[lead:]) if lead else v)
        return
    check_internal(target)
    if v is not None and (v.ndim or not target.ndim):
        if v.shape != target.shape:  # torch expands the value to the target's shape first
            try:
                v = np.broadcast_to(v, target.shape)
            except ValueError:  # the copy raises torch's shape error
                return
            if _same_elements(target, v):  # (torch lets this through; copy_ would refuse it)
                return
        check_partial(target, v)


def _same_elements(a: np.ndarray, b: np.ndarray) -> bool:
    """The same elements in the same order: one address, one shape, the strides equal wherever
    a dim has more than one element."""
    return (a.shape == b.shape and isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and all(s == t for n, s, t in zip(a.shape, a.strides, b.strides) if n != 1))


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
    if type(key) is np.ndarray:
        if type(value) is Tensor:
            _check_overlap(x._data, v, True, False)
    elif type(value) is Tensor or has_internal_overlap(x._data):
        try:
            target = x._data[key]
        except (IndexError, ValueError, TypeError):
            return False
        _check_overlap(np.asarray(target), v if type(value) is Tensor else None, False, False)
    try:
        x._data[key] = v
    except (IndexError, ValueError, TypeError):
        return False
    x._vc[0] += 1
    return True


METHODS = {"__setitem__": setitem}
