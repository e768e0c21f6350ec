"""Boolean-mask ops: masked_fill, masked_select, masked_scatter (and their in-place forms)."""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._backend import xp_of
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops._common import c_order
from ember.ops._complex_grad import holomorphic
from ember.ops._promote import cast
from ember.ops.indexing import Index, IndexGrad
from ember.ops.inplace import _apply_inplace, apply_inplace
from ember.ops.memory_overlap import check_partial
from ember.ops.shape import broadcast_shapes


def _mask(mask, fname: str) -> np.ndarray:
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        dt = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        if fname == "masked_fill_":
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with "
                               f"dtype {'long int' if dt == 'int64' else dt}")
        raise RuntimeError(f"{fname}: expected BoolTensor for mask")
    return mask._data


# Each op saves the mask (masked_select: the input too), as torch.


class MaskedFill(Op):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask=None, value=0):
        ctx.save_extra(mask)
        # torch's masked_fill is clone(contiguous_format).masked_fill_: a contiguous result
        return c_order(np.where(mask, xp_of(x).asarray(value).astype(x.dtype), x))

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return MaskedFill.apply(g, mask=mask._data, value=0)


class MaskedFillTensor(Op):
    node_name = "MaskedFillBackward1"

    @staticmethod
    def forward(ctx, x, v, mask=None):
        ctx.save_extra(mask)
        return c_order(np.where(mask, v, x))

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        mask = ctx.saved_tensors[0]._data
        gx = MaskedFill.apply(g, mask=mask, value=0) if need[0] else None
        gv = MaskedFill.apply(g, mask=~mask, value=0).sum() if need[1] else None
        return gx, gv


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """Where ``mask`` is True, ``value`` (a number or a 0-d tensor), else ``x``."""
    m = _mask(mask, "masked_fill_")
    shape = tuple(broadcast_shapes(x._data.shape, m.shape))
    if shape != x._data.shape:
        x = x.expand(shape)
    if shape != m.shape:
        m = np.broadcast_to(m, shape)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return MaskedFillTensor.apply(x, cast(value, x.dtype), mask=m)
    _dtype.check_int64(value, x.dtype)
    return MaskedFill.apply(x, mask=m, value=value)


class MaskedSelect(Op):
    node_name = "MaskedSelectBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, mask=None):
        ctx.xshape = x.shape
        ctx.save_extra(mask)
        shape = np.broadcast_shapes(x.shape, mask.shape)
        ctx.key = ((), np.nonzero(np.broadcast_to(mask, shape)), (mask,))
        ctx.shape = shape
        return np.broadcast_to(x, shape)[ctx.key[1]]

    @staticmethod
    def backward(ctx, g):
        out = IndexGrad.apply(g, key=ctx.key, shape=ctx.shape)
        return out.sum_to_size(ctx.xshape) if out.shape != ctx.xshape else out


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``x`` where ``mask`` is True, as a 1-D tensor (broadcasting)."""
    m = _mask(mask, "masked_select")
    broadcast_shapes(x._data.shape, m.shape)
    return MaskedSelect.apply(x, mask=m)


class MaskedScatter(Op):
    node_name = "MaskedScatterBackward0"

    @staticmethod
    def forward(ctx, x, src, mask=None):
        key = np.nonzero(mask)
        n = key[0].size if key else int(mask)
        ctx.sshape, ctx.n = src.shape, n
        ctx.save_extra(mask)
        out = x.copy()
        out[mask] = src.reshape(-1)[:n]
        return out

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        mask = ctx.saved_tensors[0]._data
        gx = MaskedFill.apply(g, mask=mask, value=0) if need[0] else None
        gs = None
        if need[1]:
            sel = Index.apply(g, key=((), np.nonzero(mask), (mask,)), accumulate=False)
            size = int(np.prod(ctx.sshape))
            gs = IndexGrad.apply(sel, key=((), (slice(0, ctx.n),)), shape=(size,))
            gs = gs.reshape(ctx.sshape)
        return gx, gs


def masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with consecutive elements of ``source`` where ``mask``."""
    m = _mask(mask, "masked_scatter_")
    shape = tuple(broadcast_shapes(x._data.shape, m.shape))
    if shape != x._data.shape:
        x = x.expand(shape)
    m = np.broadcast_to(m, shape)
    if source.dtype is not x.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{x.dtype.name.capitalize()} and {source.dtype.name.capitalize()}")
    if source._data.size < int(m.sum()):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return MaskedScatter.apply(x, source, mask=m)


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    """In-place ``masked_fill``: torch lets it write an expanded tensor, not one the mask
    partly overlaps."""
    if isinstance(mask, Tensor):
        check_partial(x._data, mask._data)
    return _apply_inplace(x, masked_fill, mask, value)


def masked_scatter_(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place ``masked_scatter``."""
    return apply_inplace(x, masked_scatter, mask, source)


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(MaskedFill)

METHODS = {
    "masked_fill": masked_fill, "masked_fill_": masked_fill_, "masked_select": masked_select,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_,
}
FUNCTIONS = {"masked_fill": masked_fill, "masked_select": masked_select,
             "masked_scatter": masked_scatter}
