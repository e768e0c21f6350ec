"""max/min (whole, or along a dim as named tuples), amax/amin, argmax/argmin.

Whole-tensor max/min and amax/amin split the gradient evenly between tied extremes, as torch
does; ``max(dim=...)`` sends it to the returned index only.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops._common import c_order
from ember.ops.pointwise import where
from ember.ops.reduction import norm_dims, numpy_aliases, unsqueeze_to
from ember.ops.sorting import _Selection, scalar_selection


def evenly_distribute(g: Tensor, x: Tensor, out: Tensor, dims=None, keepdim=True) -> Tensor:
    """Gradient of a value-selecting reduction shared equally by every tied maximum.

    Whole-tensor reductions (``dims=None``) count NaNs as ties of a NaN result, as torch does;
    amax/amin do not (their gradient is NaN there, as in torch).
    """
    if dims is not None:
        g = unsqueeze_to(g, x.shape, dims, keepdim)
        out = unsqueeze_to(out, x.shape, dims, keepdim)
    hit = x._data == out._data
    if dims is None and x._data.dtype.kind == "f" and np.isnan(out._data).any():
        hit = hit | (np.isnan(x._data) & np.isnan(out._data))
    if dims is None:  # torch writes grad / count at the hits into zeros: a NaN grad stays there
        return where(Tensor._make(hit), g / (int(hit.sum()) or 1), 0.0)
    count = np.sum(hit, axis=dims, keepdims=True)
    with np.errstate(invalid="ignore"):  # 0/0: NaN gradients where torch has them too
        mask = Tensor._make((hit / count).astype(x._data.dtype))
    return g * mask


class _Extreme(Op):
    """Whole-tensor max / min (MaxBackward1)."""

    saves = (0,)
    saves_output = True
    fn = None

    @classmethod
    def forward(cls, ctx, x):
        return cls.fn(x)

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return evenly_distribute(g, x, out)


class Max(_Extreme):
    node_name = "MaxBackward1"
    fn = staticmethod(np.max)


class Min(_Extreme):
    node_name = "MinBackward1"
    fn = staticmethod(np.min)


class _ExtremeDim(_Selection):
    argfn = valfn = None

    @classmethod
    def forward(cls, ctx, x, dim=0, keepdim=False):
        if x.ndim == 0:
            return scalar_selection(ctx, x)
        # Cheaper than gathering at the indices; both pick the first NaN, if any.
        idx = cls.argfn(x, axis=dim, keepdims=True)
        ctx.dim, ctx.shape, ctx.keepdim = dim, x.shape, keepdim
        vals = cls.valfn(x, axis=dim, keepdims=keepdim)
        return c_order(vals), c_order(idx if keepdim else idx.squeeze(dim))


class MaxDim(_ExtremeDim):
    node_name = "MaxBackward0"
    argfn, valfn = staticmethod(np.argmax), staticmethod(np.max)


class MinDim(_ExtremeDim):
    node_name = "MinBackward0"
    argfn, valfn = staticmethod(np.argmin), staticmethod(np.min)


def _empty_error(name: str, x: Tensor, exc=RuntimeError) -> None:
    if x._data.size == 0:
        hint = "" if exc is IndexError else \
            " Specify the reduction dim with the 'dim' argument."  # argmax/argmin have none
        raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                  + hint)


def _check_dim_size(name: str, x: Tensor, d: int) -> None:
    if x.ndim and x._data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _select(name, whole, by_dim, result_type):
    def fn(x: Tensor, dim=None, keepdim: bool = False):
        if x._data.dtype.kind == "c":
            from ember.ops.pointwise_more import not_for

            raise not_for(f"{name}_all" if dim is None else f"{name}_cpu", x.dtype)
        if isinstance(dim, Tensor):
            from ember.ops import pointwise_more

            return getattr(pointwise_more, name + "imum")(x, dim)
        if dim is None:
            _empty_error(name, x)
            return whole.apply(x)
        if not isinstance(dim, int):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(dim={type(dim).__name__}), but expected one of: (int dim, bool "
                            "keepdim = False) or (Tensor other)")
        d = _wrap_dim(dim, x.ndim)
        _check_dim_size(name, x, d)
        v, i = by_dim.apply(x, dim=d, keepdim=keepdim)
        return result_type(v, i)
    fn.__name__ = name
    fn.__doc__ = (f"{name} of all elements; with ``dim``, a ``(values, indices)`` named tuple; "
                  f"with a tensor, the elementwise {name}imum.")
    return fn


max = _select("max", Max, MaxDim, return_types.max)  # noqa: A001 - torch.max
min = _select("min", Min, MinDim, return_types.min)  # noqa: A001 - torch.min


class _AExtreme(Op):
    saves = (0,)
    saves_output = True
    fn = None

    @classmethod
    def forward(cls, ctx, x, dims=(), keepdim=False):
        ctx.dims, ctx.keepdim = dims, keepdim
        return c_order(cls.fn(x, axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return evenly_distribute(g, x, out, ctx.dims, ctx.keepdim)


class Amax(_AExtreme):
    node_name = "AmaxBackward0"
    fn = staticmethod(np.max)


class Amin(_AExtreme):
    node_name = "AminBackward0"
    fn = staticmethod(np.min)


def _a_reduce(name: str, op):
    def fn(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
        if x._data.size == 0 and not isinstance(dim, int) and dim:
            for d in dim:  # torch checks empty reduction dims before repeated ones
                _check_dim_size(name, x, _wrap_dim(d, x.ndim))
        dims = norm_dims(dim, x.ndim)
        if x._data.size == 0:
            if not (isinstance(dim, int) or dim):
                _empty_error(name, x)
            for d in dims:
                _check_dim_size(name, x, d)
        return op.apply(x, dims=dims, keepdim=keepdim)
    fn.__name__ = name
    fn.__doc__ = f"{name[1:]} over ``dim`` (all dims by default), gradient shared among ties."
    return fn


amax = _a_reduce("amax", Amax)
amin = _a_reduce("amin", Amin)


def _arg_reduce(name: str, np_fn):
    def fn(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
        if x._data.dtype.kind == "c":
            raise RuntimeError(f"{name}(): does not support complex input")
        if x._data.dtype == np.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            _empty_error(name, x, IndexError)
            out = np_fn(x._data.reshape(-1))
            if keepdim:
                out = out.reshape((1,) * x.ndim)
            return Tensor._make(out.astype(np.int64))
        d = _wrap_dim(dim, x.ndim)
        _check_dim_size(name, x, d)
        if x.ndim == 0:
            return Tensor._make(np.zeros((), np.int64, like=x._data))
        return Tensor._make(np_fn(x._data, axis=d, keepdims=keepdim).astype(np.int64))
    fn.__name__ = name
    fn.__doc__ = f"Index of the {name[3:]}imum (first one on ties), flattened when dim is None."
    return fn


argmax = _arg_reduce("argmax", np.argmax)
argmin = _arg_reduce("argmin", np.argmin)


class Aminmax(Op):
    node_name = "AminmaxBackward0"
    saves = (0,)
    saves_output = (0, 1)

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False):
        ctx.dims, ctx.keepdim = dims, keepdim
        return np.min(x, axis=dims, keepdims=keepdim), np.max(x, axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, g_lo, g_hi):
        x, lo, hi = ctx.saved_tensors
        total = None
        for g, out in ((g_lo, lo), (g_hi, hi)):
            if g is not None:
                gx = evenly_distribute(g, x, out, ctx.dims, ctx.keepdim)
                total = gx if total is None else total + gx
        return total


def aminmax(x: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """``(min, max)`` over all elements or ``dim``, as an ``aminmax`` named tuple."""
    if dim is None:
        if x._data.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        dims = tuple(range(x.ndim))
    else:
        dims = norm_dims(dim, x.ndim)
        for d in dims:
            if x._data.shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return return_types.aminmax(*Aminmax.apply(x, dims=dims, keepdim=keepdim))


METHODS = numpy_aliases({
    "max": max, "min": min, "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin,
    "aminmax": aminmax,
})
FUNCTIONS = dict(METHODS)
