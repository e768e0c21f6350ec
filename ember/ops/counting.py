"""Counting and order statistics: bincount, histc, quantile/nanquantile; and three composites
that sit near them in torch's docs: diff, kron, renorm.

bincount and histc are not differentiable (torch gives bincount a ``NotImplemented`` node and
histc no graph at all). diff, kron and quantile are composed of ember ops exactly as ATen
composes them, so their graphs (and grad_fn names) match torch's; renorm is a primitive with
torch's own backward formula, written in Tensor ops so that it is differentiable again.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._backend import on_device_of
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.ops._common import variant
from ember.ops.joining import cat
from ember.ops.pointwise import NotDifferentiable, where
from ember.ops.pointwise_more import not_for
from ember.ops.reduction_norm import norm_backward, p_norm
from ember.ops.shape import Squeeze, UnsafeView, broadcast_tensors

# --- bincount, histc -----------------------------------------------------------------------

def _bincount_array(idx: np.ndarray, w: np.ndarray | None, minlength: int) -> np.ndarray:
    if w is None:
        return np.bincount(idx, minlength=minlength).astype(np.int64, copy=False)
    # torch accumulates float32 weights in float32 and every other dtype in float64.
    out_dt = np.float32 if w.dtype == np.float32 else np.float64
    return np.bincount(idx, weights=w.astype(np.float64), minlength=minlength).astype(out_dt)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count each non-negative integer in a 1-D tensor (summing ``weights`` if given).

    >>> ember.bincount(ember.tensor([1, 3, 3]))
    tensor([0, 1, 0, 2])
    """
    if input.dtype is _dtype.bool_ or input.dtype.is_floating_point:
        raise not_for("bincount_cpu", input.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    idx = input._data
    if idx.ndim == 1 and idx.size == 0:
        return Tensor._make(np.zeros(minlength, np.int64))  # int64 even with weights, as torch
    if idx.ndim != 1 or idx.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return Tensor._make(_bincount_array(idx, None, minlength))
    if not isinstance(weights, Tensor):
        raise TypeError("bincount(): argument 'weights' (position 2) must be Tensor, not "
                        f"{type(weights).__name__}")
    if weights.ndim != 1 or weights.shape[0] != idx.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # torch has no derivative for bincount: a weight that requires grad gets a node that raises.
    return NotDifferentiable.apply(
        weights, fn=lambda w: _bincount_array(idx, w, minlength), name="bincount")


def _histc_range(x: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """torch's outer bin edges: equal bounds (the default 0, 0) mean the data's min and max,
    and an empty range is widened by one on each side."""
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    return lo, hi


def _fmt(v: float) -> str:
    return repr(int(v)) if float(v).is_integer() else repr(v)  # C++ prints 1, not 1.0


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram of all elements in ``bins`` equal bins over [min, max]; values outside are
    ignored and the last bin includes its right edge. min == max uses the data's range."""
    if not isinstance(bins, int) or isinstance(bins, bool):
        raise TypeError(f"histc(): argument 'bins' must be int, not {type(bins).__name__}")
    if input.dtype is _dtype.bool_:
        raise not_for("linspace_cpu", input.dtype)
    if not input.dtype.is_floating_point:
        raise not_for("histogram_cpu", input.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input._data.reshape(-1)
    lo, hi = _histc_range(x, float(min), float(max))
    dt = x.dtype.type
    left, right = dt(lo), dt(hi)
    # The bin index in the input's own dtype, in torch's order of operations, so that values
    # on a bin edge land where torch puts them.
    with np.errstate(invalid="ignore", over="ignore"):
        keep = x[(x >= left) & (x <= right)]
        pos = ((keep - left) * dt(bins) / (right - left)).astype(np.int64)
    pos[pos == bins] = bins - 1  # the right edge belongs to the last bin
    return Tensor._make(np.bincount(pos, minlength=bins).astype(x.dtype))


# --- diff, kron ----------------------------------------------------------------------------


def _check_diff_other(x: Tensor, other: Tensor | None, dim: int, name: str) -> None:
    if other is None:
        return
    if not isinstance(other, Tensor):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(other).__name__}")
    if other.ndim != x.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(x.ndim):
        if i != dim and other.shape[i] != x.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = {x.shape[i]}, "
                f"but got tensor.size({i}) = {other.shape[i]}")


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (xor for bool), after concatenating
    ``prepend`` and ``append``; built from narrow and sub, so it is differentiable."""
    if input.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.ndim)
    _check_diff_other(input, prepend, d, "prepend")
    _check_diff_other(input, append, d, "append")
    if n == 0:  # torch returns zeros_like(x).copy_(x): a CopyBackwards node
        return input.new_zeros(input.shape).copy_(input)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    out_len = x.shape[d] - 1
    for _ in range(min(n, x.shape[d])):
        hi, lo = x.narrow(d, 1, out_len), x.narrow(d, 0, out_len)
        x = hi.logical_xor(lo) if x.dtype is _dtype.bool_ else hi - lo
        out_len -= 1
    return x


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: ``input`` viewed as (a0, 1, a1, 1, ...) times ``other`` viewed as
    (1, b0, 1, b1, ...), flattened pairwise; torch's composition (UnsafeViewBackward0)."""
    if not isinstance(other, Tensor):
        raise TypeError("kron(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    nd = max(input.ndim, other.ndim)
    a_shape = (1,) * (nd - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (nd - other.ndim) + tuple(other.shape)
    a_view = [s for a in a_shape for s in (a, 1)]
    b_view = [s for b in b_shape for s in (1, b)]
    prod = UnsafeView.apply(input, shape=tuple(a_view)) * \
        UnsafeView.apply(other, shape=tuple(b_view))
    shape = tuple(a * b for a, b in zip(a_shape, b_shape))
    if not prod._data.flags.c_contiguous:  # NumPy keeps strided inputs' layout; torch doesn't
        return prod.reshape(shape)  # a copy, ending in UnsafeViewBackward0 too
    return UnsafeView.apply(prod, shape=shape)


# --- renorm --------------------------------------------------------------------------------


def _acc(dt: np.dtype) -> type:
    return np.float32 if dt == np.float16 else dt.type  # half norms accumulate in float


class Renorm(Op):
    """Scale each slice along ``dim`` whose p-norm exceeds ``maxnorm`` down to ``maxnorm``."""

    node_name = "RenormBackward0"
    saves = (0,)

    @staticmethod
    def forward(ctx, x, p=2.0, dims=(), maxnorm=1.0):
        ctx.p, ctx.dims, ctx.maxnorm = p, dims, maxnorm
        acc = _acc(x.dtype)
        norm = p_norm(x.astype(acc, copy=False), p, dims, keepdim=True)
        m = acc(maxnorm)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            factor = np.where(norm > m, m / (norm + acc(1e-7)), acc(1))
        return x * factor.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        # torch's renorm_backward: the factor depends on x through the norm.
        (x,) = ctx.saved_tensors
        acc = _dtype.float32 if x.dtype is _dtype.float16 else x.dtype
        xa, ga = x.to(acc), g.to(acc)
        norm = xa.norm(ctx.p, ctx.dims, keepdim=True)
        nb = norm_backward(xa, norm, (xa * ga).sum(ctx.dims, keepdim=True), ctx.p, ctx.dims)
        invnorm = (norm + 1e-7).reciprocal()
        factor = invnorm * ctx.maxnorm
        return where(norm > ctx.maxnorm, factor * ga - (factor * invnorm) * nb, ga).to(x.dtype)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each sub-tensor ``input.select(dim, i)`` with p-norm above ``maxnorm`` is rescaled to
    norm ``maxnorm`` (divided by ``norm + 1e-7``, as torch does)."""
    for name, v in (("p", p), ("maxnorm", maxnorm)):
        if not isinstance(v, int | float):
            raise TypeError(f"renorm(): argument '{name}' must be Number, not "
                            f"{type(v).__name__}")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {_fmt(maxnorm)}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           "dimensions")
    d = _wrap_dim(dim, input.ndim)
    if not input.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype.TYPE_NAMES[input.dtype][6:-6]}")
    dims = tuple(i for i in range(input.ndim) if i != d)
    return Renorm.apply(input, p=float(p), dims=dims, maxnorm=float(maxnorm))


# --- quantile ------------------------------------------------------------------------------

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")
_SqueezeInplace = variant(Squeeze, "SqueezeBackward4")  # torch ends with values.squeeze_()


def _quantile_q(x: Tensor, q, dim, interpolation: str) -> Tensor:
    """Validate the arguments in torch's order; return ``q`` as a tensor."""
    if not isinstance(q, Tensor | int | float):
        raise TypeError(f"quantile() received an invalid combination of arguments - got "
                        f"(Tensor, {type(q).__name__})")
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
        raise TypeError(f"quantile() received an invalid combination of arguments - got "
                        f"(Tensor, {type(q).__name__}, dim={type(dim).__name__})")
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {_fmt(q)}")
        q = Tensor._make(on_device_of(x._data, np.asarray(q, dtype=x._data.dtype)))
    if interpolation not in _MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if x.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if x.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype is not x.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    return q


def _quantile(x: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    """ATen's quantile_compute: sort, turn q into fractional ranks, gather and lerp."""
    q = _quantile_q(x, q, dim, interpolation)
    wrapped = _wrap_dim(0 if dim is None else dim, x.ndim)
    if dim is not None and x.ndim:
        out_shape = list(x.shape)
        if keepdim:
            out_shape[wrapped] = 1
        else:
            del out_shape[wrapped]
    else:
        out_shape = [1] * x.ndim if keepdim else []
    if not np.all((q._data >= 0) & (q._data <= 1)):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is None:
        s = x.reshape(-1)
    elif wrapped == x.ndim - 1:
        s = x
    else:
        s = x.unsqueeze(-1).transpose(wrapped, -1)
    n = s.shape[-1]
    if n > 2 ** 24:  # ranks are computed in floating point
        raise RuntimeError("quantile() input tensor is too large")
    # Reduced dims first, the sorted values last (q is treated as 1-D meanwhile).
    s = s.sort().values.reshape(out_shape + [n])
    if ignore_nan:  # ranks among the non-NaN values; all-NaN rows take index 0 (a NaN)
        ranks = q * (s.isnan().logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:  # a row with a NaN takes the last index, where sort put the NaN
        r, has_nan = broadcast_tensors(q * (n - 1), s.isnan().any(-1, keepdim=True))
        ranks = r.masked_fill(has_nan, n - 1)
    ranks = {"lower": ranks.floor, "higher": ranks.ceil,
             "nearest": ranks.round}.get(interpolation, lambda: ranks)()
    below = ranks.long()
    values = s.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks.new_full(ranks.shape, 0.5) \
            if interpolation == "midpoint" else ranks - below
        values = values.lerp(s.gather(-1, ranks.ceil().long()), weights)
    if q.ndim:  # the q dim goes first
        values = values.unsqueeze(0).transpose(0, -1)
    return _SqueezeInplace.apply(values, dims=(values.ndim - 1,))


def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
              interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (a float, or a 1-D tensor whose dim comes first in the result)
    of all elements or along ``dim``; a NaN anywhere in a row makes its quantile NaN.

    >>> ember.quantile(ember.tensor([0., 1., 2., 3.]), 0.5)
    tensor(1.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaNs; a row of only NaNs gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


METHODS = {"bincount": bincount, "histc": histc, "diff": diff, "kron": kron, "renorm": renorm,
           "quantile": quantile, "nanquantile": nanquantile}
FUNCTIONS = dict(METHODS)
