"""Reductions: sum, mean, prod, var/std, logsumexp, all/any over all elements or ``dim``.

``dim`` may be an int or a tuple, ``keepdim`` keeps reduced dims as size 1. Max/min live in
reduction_minmax.py, cumulative ops in reduction_cum.py, norms in reduction_norm.py.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from ember import _dtype
from ember._backend import xp_of
from ember._creation import ones_like
from ember._tensor import Tensor, _wrap_dim
from ember._warn import warn_user
from ember.autograd.function import Op
from ember.compiler.traced import capturing
from ember.ops._common import c_order
from ember.ops._complex_grad import holomorphic
from ember.ops.pointwise import DivScalar, where


def norm_dims(dim, ndim: int) -> tuple:
    """``dim`` (None, int, or sequence) as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        d = _wrap_dim(dim, ndim)
        return (d,) if ndim else ()
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        dup = next(d for i, d in enumerate(dims) if d in dims[:i])
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    if not ndim:
        return ()
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


def numpy_aliases(table: dict) -> dict:
    """Let ``axis=`` / ``keepdims=`` stand for ``dim=`` / ``keepdim=``, as torch's arg parser does.

    Only functions that take ``dim`` or ``keepdim`` are wrapped; the common path (no alias in
    the keywords) costs one membership test.
    """
    out = {}
    for name, fn in table.items():
        params = inspect.signature(fn).parameters if callable(fn) else {}
        if "dim" not in params and "keepdim" not in params:
            out[name] = fn
            continue

        def wrapper(*args, _fn=fn, **kw):
            if kw and ("axis" in kw or "keepdims" in kw):
                if "axis" in kw:
                    kw["dim"] = kw.pop("axis")
                if "keepdims" in kw:
                    kw["keepdim"] = kw.pop("keepdims")
            return _fn(*args, **kw)
        out[name] = functools.wraps(fn)(wrapper)
    return out


def unsqueeze_to(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Put back reduced dims (as size 1) so ``g`` broadcasts against the input."""
    if keepdim or not dims or g.ndim == len(shape):
        return g
    for d in sorted(dims):  # one unsqueeze per dim, lowest first: torch's graph
        g = g.unsqueeze(d)
    return g


def reduced_size(shape: tuple, dims) -> int:
    """Number of elements folded into each output element."""
    if dims is None:
        return math.prod(shape)
    return math.prod([shape[d] for d in dims])


def _sum_dtype(x: Tensor, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return _dtype.int64 if x.dtype._kind < 2 else x.dtype


class Sum(Op):
    node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return c_order(x.sum(axis=dims, dtype=dtype.np, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return unsqueeze_to(g, ctx.shape, ctx.dims, ctx.keepdim).expand(ctx.shape)


class SumDim(Sum):
    node_name = "SumBackward1"


def sum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dt = _sum_dtype(x, dtype)
    if dim is None:
        return Sum.apply(x, dims=None, keepdim=False, dtype=dt)
    dims = norm_dims(dim, x.ndim)
    return SumDim.apply(x, dims=dims, keepdim=keepdim, dtype=dt)


class Mean(Op):
    node_name = "MeanBackward0"

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = reduced_size(x.shape, dims)
        ctx.n = n
        out = c_order(x.sum(axis=dims, dtype=dtype.np, keepdims=keepdim))
        return out / n if n else np.full_like(out, np.nan)  # a Python int keeps float32

    @staticmethod
    def backward(ctx, g):
        # expand, then divide: torch's order, so a double backward meets DivBackward1
        g = unsqueeze_to(g, ctx.shape, ctx.dims, ctx.keepdim).expand(ctx.shape)
        return DivScalar.apply(g, other=ctx.n)


class MeanDim(Mean):
    node_name = "MeanBackward1"


def mean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dt = _dtype.to_dtype(dtype) if dtype is not None else x.dtype
    if dt._kind < 2:
        from ember.ops.pointwise_more import _CNAME

        which = "Optional" if dtype is not None else "Input"
        raise RuntimeError(
            f"mean(): could not infer output dtype. {which} dtype must be either a floating point "
            f"or complex dtype. Got: {_CNAME[dt.name]}")
    if dim is None:
        return Mean.apply(x, dims=None, keepdim=False, dtype=dt)
    return MeanDim.apply(x, dims=norm_dims(dim, x.ndim), keepdim=keepdim, dtype=dt)


class Nansum(Op):
    node_name = "NansumBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return np.nansum(x, axis=dims, keepdims=keepdim, dtype=dtype.np)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        g = unsqueeze_to(g, ctx.shape, ctx.dims, ctx.keepdim).expand(ctx.shape)
        return where(x.isnan(), 0.0, g)


def nansum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dims = None if dim is None else norm_dims(dim, x.ndim)
    return Nansum.apply(x, dims=dims, keepdim=keepdim and dims is not None,
                        dtype=_sum_dtype(x, dtype))


def nanmean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean ignoring NaNs: ``nansum / count of non-NaN`` (DivBackward0, as in torch)."""
    if not (x.dtype.is_floating_point or dtype is not None):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {x.dtype.name.capitalize()}")
    dims = None if dim is None else norm_dims(dim, x.ndim)
    count = np.sum(~np.isnan(x._data), axis=dims, keepdims=keepdim and dims is not None)
    s = nansum(x, dim, keepdim, dtype=dtype)
    return s / Tensor._make(count.astype(s._data.dtype))


class Prod(Op):
    node_name = "ProdBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, dtype=None):
        ctx.dims, ctx.keepdim = dims, keepdim
        return c_order(np.prod(x, axis=dims, keepdims=keepdim, dtype=dtype.np))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        if not x.ndim:  # torch returns grad itself (no history through x)
            return g
        dims = ctx.dims if ctx.dims is not None else tuple(range(x.ndim))
        g = unsqueeze_to(g, x.shape, dims, ctx.keepdim)
        out = unsqueeze_to(out, x.shape, dims, ctx.keepdim)
        zero = x._data == 0
        if not capturing():  # (ember.compile replays the general path)
            if not zero.any():
                return g * (out / x)  # torch: grad * (result / input)
            if reduced_size(x.shape, dims) == 1:  # torch: grad * ones (the others' product)
                return g * ones_like(x)
        # With zeros, d prod / d x_k = prod of the others: nonzero only where a slice has at
        # most one zero. Written so that it stays differentiable (for gradgrad).
        z = Tensor._make(zero)
        nz = Tensor._make(np.sum(zero, axis=dims, keepdims=True))
        safe = where(z, 1.0, x)
        p = Prod.apply(safe, dims=dims, keepdim=True, dtype=x.dtype)
        zx = where(z, x, 0.0).sum(dims, keepdim=True)
        factor = where(z, p, where(nz == 0, 1.0, zx) * p / safe)
        return g * where(nz <= 1, factor, 0.0)


class ProdDim(Prod):
    node_name = "ProdBackward1"


def prod(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    dt = _sum_dtype(x, dtype)
    if dim is None:
        return Prod.apply(x, dims=None, keepdim=False, dtype=dt)
    if not isinstance(dim, int):
        raise TypeError("prod() received an invalid combination of arguments - got "
                        f"(dim={type(dim).__name__}), but expected (int dim, bool keepdim = "
                        "False, *, torch.dtype dtype = None)")
    return ProdDim.apply(x, dims=norm_dims(dim, x.ndim), keepdim=keepdim, dtype=dt)


# --- variance and standard deviation ----------------------------------------------------------


def _var_fwd(ctx, x, dims, keepdim, correction, whole):
    ctx.dims, ctx.keepdim, ctx.correction, ctx.whole = dims, keepdim, correction, whole
    n = reduced_size(x.shape, dims)
    ctx.dof = max(0, n - correction)
    m = x.sum(axis=dims, keepdims=True) / n if n else np.full(
        [1 if d in dims else s for d, s in enumerate(x.shape)], np.nan, x.dtype)
    d = x - m
    d *= d
    with np.errstate(divide="ignore", invalid="ignore"):
        var = d.sum(axis=dims, keepdims=keepdim) / x.dtype.type(ctx.dof)
    return var, (m if keepdim else np.squeeze(m, dims))


def _var_grad(ctx, x: Tensor, g: Tensor) -> Tensor:
    """d var / d x applied to ``g`` (which has keepdim layout)."""
    if ctx.whole and not ctx.dof:  # torch: grad * NaN, independent of x
        return g.expand(x.shape) * float("nan")
    centered = x - x.mean(ctx.dims, keepdim=True)
    return g * centered * (2.0 / ctx.dof if ctx.dof else float("inf"))


def _std_to_var_grad(g: Tensor, std: Tensor) -> Tensor:
    """Chain rule through std = sqrt(var); zero where std is zero, as torch."""
    return where(std == 0, 0.0, g / (std * 2.0))


def _mean_grad(ctx, x: Tensor, g: Tensor) -> Tensor:
    return (g / reduced_size(x.shape, ctx.dims)).expand(x.shape)


class Var(Op):
    node_name = "VarBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False, correction=1, whole=False):
        return c_order(_var_fwd(ctx, x, dims, keepdim, correction, whole)[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _var_grad(ctx, x, unsqueeze_to(g, x.shape, ctx.dims, ctx.keepdim))


class Std(Op):
    node_name = "StdBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False, correction=1, whole=False):
        return c_order(np.sqrt(_var_fwd(ctx, x, dims, keepdim, correction, whole)[0]))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        g = _std_to_var_grad(g, out)
        return _var_grad(ctx, x, unsqueeze_to(g, x.shape, ctx.dims, ctx.keepdim))


class VarMean(Op):
    node_name = "VarMeanBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False, correction=1, whole=False):
        return _var_fwd(ctx, x, dims, keepdim, correction, whole)

    @staticmethod
    def backward(ctx, gv, gm):
        (x,) = ctx.saved_tensors
        return _var_mean_grad(ctx, x, gv, gm)


def _var_mean_grad(ctx, x: Tensor, gv, gm):
    total = None
    if gv is not None:
        total = _var_grad(ctx, x, unsqueeze_to(gv, x.shape, ctx.dims, ctx.keepdim))
    if gm is not None:
        gm = _mean_grad(ctx, x, unsqueeze_to(gm, x.shape, ctx.dims, ctx.keepdim))
        total = gm if total is None else total + gm
    return total


class StdMean(Op):
    node_name = "StdMeanBackward0"
    saves = (0,)
    saves_output = (0,)  # the std, as torch

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False, correction=1, whole=False):
        var, m = _var_fwd(ctx, x, dims, keepdim, correction, whole)
        return np.sqrt(var), m

    @staticmethod
    def backward(ctx, gs, gm):
        x, std = ctx.saved_tensors
        if gs is not None:
            gs = _std_to_var_grad(gs, std)
        return _var_mean_grad(ctx, x, gs, gm)


def _var_args(name: str, x: Tensor, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # x.var(False): the positional arg is ``unbiased``
        dim, unbiased = None, dim
    if not x.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{name}: Only one of unbiased and correction may be given")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = norm_dims(dim, x.ndim)
    if reduced_size(x.shape, dims) - correction <= 0:
        warn_user(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                  "than the reduction factor (input numel divided by output numel).")
    # whole: a reduction over everything (dim=None or a 0-d input), as torch's var_backward
    # tells it apart from one over all the dims listed
    return dict(dims=dims, keepdim=keepdim, correction=correction, whole=dim is None or not x.ndim)


def var(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (default 1); complex: the sum of
    the parts' variances (a real result)."""
    if x._data.dtype.kind == "c":
        return var(x.real, dim, unbiased, keepdim, correction=correction) + \
            var(x.imag, dim, unbiased, keepdim, correction=correction)
    return Var.apply(x, **_var_args("var", x, dim, unbiased, keepdim, correction))


def std(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Standard deviation over ``dim`` with Bessel's ``correction`` (default 1)."""
    if x._data.dtype.kind == "c":
        return var(x, dim, unbiased, keepdim, correction=correction).sqrt()
    return Std.apply(x, **_var_args("std", x, dim, unbiased, keepdim, correction))


def var_mean(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return VarMean.apply(x, **_var_args("var_mean", x, dim, unbiased, keepdim, correction))


def std_mean(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return StdMean.apply(x, **_var_args("std_mean", x, dim, unbiased, keepdim, correction))


# --- logsumexp, logical reductions, counting --------------------------------------------------


class Logsumexp(Op):
    node_name = "LogsumexpBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, dims=(), keepdim=False):
        ctx.dims, ctx.keepdim = dims, keepdim
        with np.errstate(divide="ignore"):  # log(0) = -inf for empty or all -inf slices
            if x.size == 0:
                return np.log(np.sum(np.exp(x), axis=dims, keepdims=keepdim))
            m = np.max(x, axis=dims, keepdims=True)
            m = np.where(np.isfinite(m), m, 0).astype(x.dtype, copy=False)
            out = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True)) + m
        return c_order(out if keepdim else np.squeeze(out, dims))

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        g = unsqueeze_to(g, x.shape, ctx.dims, ctx.keepdim)
        return g * (x - unsqueeze_to(out, x.shape, ctx.dims, ctx.keepdim)).exp()


def logsumexp(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed without overflow."""
    from ember.ops._promote import float_arg

    return Logsumexp.apply(float_arg(x), dims=norm_dims(dim, x.ndim), keepdim=keepdim)


def _logical(np_fn):
    def reduce(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
        dims = None if dim is None else norm_dims(dim, x.ndim)
        out = c_order(np_fn(x._data, axis=dims, keepdims=keepdim and dims is not None))
        return Tensor._make(out.astype(np.uint8) if x._data.dtype == np.uint8 else out)
    reduce.__name__ = np_fn.__name__
    return reduce


all = _logical(np.all)  # noqa: A001 - torch.all
any = _logical(np.any)  # noqa: A001 - torch.any


def count_nonzero(x: Tensor, dim=None) -> Tensor:
    dims = None if dim is None else norm_dims(dim, x.ndim)
    count = np.count_nonzero(x._data, axis=dims)  # a Python int when dims is None
    return Tensor._make(xp_of(x._data).asarray(count, dtype=np.int64))


# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Sum, Mean)

METHODS = numpy_aliases({
    "sum": sum, "mean": mean, "nansum": nansum, "nanmean": nanmean, "prod": prod, "var": var,
    "std": std, "logsumexp": logsumexp, "all": all, "any": any, "count_nonzero": count_nonzero,
})
FUNCTIONS = dict(METHODS, **numpy_aliases({"var_mean": var_mean, "std_mean": std_mean}))
