"""Cumulative reductions along a dim: cumsum, cumprod, logcumsumexp, cummax, cummin."""

from __future__ import annotations

import numpy as np

from ember import _dtype, return_types
from ember._backend import accumulate
from ember._tensor import Tensor, _wrap_dim
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops._common import c_order
from ember.ops._complex_grad import holomorphic
from ember.ops.pointwise import where
from ember.ops.reduction import numpy_aliases
from ember.ops.sorting import put_along, scalar_selection


class _Flip(Op):
    """Reverse along one dim (a negative-stride view); used for reversed cumulative sums."""

    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, dim=0):
        ctx.dim = dim
        return np.flip(x, dim)

    @staticmethod
    def backward(ctx, g):
        return _Flip.apply(g, dim=ctx.dim)


def _rev_cumsum(g: Tensor, dim: int) -> Tensor:
    """``out[k] = sum(g[k:])`` along ``dim``."""
    return _Flip.apply(cumsum(_Flip.apply(g, dim=dim), dim), dim=dim)


class _Cumulative(Op):
    """``fn`` (np.cumsum, np.cumprod) along ``dim`` in ``dtype``; ``dim`` is None for a 0-d
    input, whose running sum or product is itself."""

    fn = None

    @classmethod
    def forward(cls, ctx, x, dim=0, dtype=None):
        ctx.dim = dim
        if dim is None:
            return x.astype(dtype.np)
        return c_order(cls.fn(x, axis=dim, dtype=dtype.np))


def _cumulative(op, x: Tensor, dim: int, dtype) -> Tensor:
    """cumsum and cumprod: integer inputs accumulate in int64 unless ``dtype`` says otherwise."""
    d = _wrap_dim(dim, x.ndim)
    if dtype is not None:
        dt = _dtype.to_dtype(dtype)
    else:
        dt = _dtype.int64 if x.dtype._kind < 2 else x.dtype
    return op.apply(x, dim=d if x.ndim else None, dtype=dt)


class Cumsum(_Cumulative):
    node_name = "CumsumBackward0"
    fn = staticmethod(np.cumsum)

    @staticmethod
    def backward(ctx, g):
        return g if ctx.dim is None else _rev_cumsum(g, ctx.dim)


def cumsum(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sum along ``dim``; integer inputs accumulate in int64, as torch."""
    return _cumulative(Cumsum, x, dim, dtype)


class Cumprod(_Cumulative):
    node_name = "CumprodBackward0"
    saves = (0,)
    saves_output = True
    fn = staticmethod(np.cumprod)

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        d = ctx.dim
        if d is None or x._data.shape[d] == 1 or x._data.size <= 1:  # torch: grad itself
            return g
        zero = x._data == 0
        if not zero.any():
            return _rev_cumsum(g * out, d) / x
        if STATE.enabled:
            return _cumprod_grad_quadratic(x, g, d)
        # Zeros: positions before a slice's first zero use the quotient formula (out is zero
        # from that zero on, so it only sums the terms that survive); the first zero gets
        # prod(x before it) * sum_{i >= z} g_i * prod(x after it up to i); later ones get 0.
        seen = np.cumsum(zero, axis=d)
        before = Tensor._make(seen == 0)
        first = Tensor._make(zero & (seen == 1))
        after = Tensor._make((seen >= 1) & ~(zero & (seen == 1)))
        safe = where(before, x, 1.0)
        left = _cumprod(safe, d)
        right = _cumprod(where(after, x, 1.0), d)
        tail = where(Tensor._make(seen >= 1), g * right, 0.0).sum(d, keepdim=True)
        head = where(before, _rev_cumsum(g * out, d) / safe, 0.0)
        return head + where(first, left * tail, 0.0)


def _cumprod_grad_quadratic(x: Tensor, g: Tensor, d: int) -> Tensor:
    """``grad_k = sum_{i >= k} g_i prod_{j <= i, j != k} x_j`` spelled out as an n x n product.

    O(n^2), but every entry is a plain product of inputs, so its own derivative is exact at
    zeros too: used only when a double backward is being recorded and the input has zeros.
    """
    n = x.shape[d]
    xl, gl = x.movedim(d, -1), g.movedim(d, -1)
    eye = Tensor._make(np.eye(n, dtype=bool))
    rows = _cumprod(where(eye, 1.0, xl.unsqueeze(-2)), xl.ndim)
    upper = Tensor._make(np.triu(np.ones((n, n), dtype=x._data.dtype)))
    return (rows * (gl.unsqueeze(-2) * upper)).sum(-1).movedim(-1, d)


def _cumprod(x: Tensor, d: int) -> Tensor:
    return Cumprod.apply(x, dim=d, dtype=x.dtype)


def cumprod(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running product along ``dim``; the gradient is exact even with zeros in the input."""
    return _cumulative(Cumprod, x, dim, dtype)


class Logcumsumexp(Op):
    node_name = "LogcumsumexpBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, x, dim=0):
        ctx.dim = dim
        if dim is None:
            return x.copy()
        return accumulate(np.logaddexp, x, dim)

    @staticmethod
    def backward(ctx, g):
        # grad_k = sum_{i >= k} g_i exp(x_k - out_i), summed in log space (torch's formula):
        # the positive and negative parts of g separately, so nothing overflows.
        x, out = ctx.saved_tensors
        d = ctx.dim
        if d is None:
            return g
        if STATE.enabled:
            return _logcumsumexp_grad_quadratic(x, out, g, d)
        log_abs = g.abs().log()
        neg_inf = float("-inf")
        parts = []
        for mask in (g > 0, g < 0):
            lg = where(mask, log_abs, neg_inf) - out
            rev = _Flip.apply(logcumsumexp(_Flip.apply(lg, dim=d), d), dim=d)
            parts.append((rev + x).exp())
        return parts[0] - parts[1]


def _logcumsumexp_grad_quadratic(x: Tensor, out: Tensor, g: Tensor, d: int) -> Tensor:
    """The same gradient as ``exp(x_k - out_k) * sum_{i >= k} g_i exp(out_k - out_i)``.

    ``out`` never decreases, so every exponent is <= 0: no overflow and no -inf arithmetic,
    which keeps a recorded double backward finite. O(n^2); used only under create_graph.
    """
    n = x.shape[d]
    xl, ol, gl = x.movedim(d, -1), out.movedim(d, -1), g.movedim(d, -1)
    upper = Tensor._make(np.triu(np.ones((n, n), dtype=bool)))
    weights = where(upper, ol.unsqueeze(-1) - ol.unsqueeze(-2), float("-inf")).exp()
    return ((weights * gl.unsqueeze(-2)).sum(-1) * (xl - ol).exp()).movedim(-1, d)


def logcumsumexp(x: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably."""
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{x.type()[6:-6]}'")
    d = _wrap_dim(dim, x.ndim)
    return Logcumsumexp.apply(x, dim=d if x.ndim else None)


class _CumExtreme(Op):
    saves = (0,)  # torch saves self and the indices
    saves_output = (1,)
    fn = None

    @classmethod
    def forward(cls, ctx, x, dim=0):
        if x.ndim == 0:
            return scalar_selection(ctx, x)
        ctx.dim, ctx.shape = dim, x.shape
        vals = accumulate(cls.fn, x, dim)
        # The index is the latest position where the running extreme was (re)attained.
        pos = np.arange(x.shape[dim], like=x).reshape(
            [-1 if i == dim else 1 for i in range(x.ndim)])
        hit = (x == vals)
        if x.dtype.kind == "f":
            hit |= np.isnan(x)
        idx = accumulate(np.maximum, np.where(hit, pos, 0), dim)
        return vals, idx.astype(np.int64)

    @staticmethod
    def backward(ctx, g, _gi=None):
        _, idx = ctx.saved_tensors
        if ctx.dim is None:
            return g
        return put_along(g, idx._data, ctx.dim, ctx.shape, accumulate=True)


class Cummax(_CumExtreme):
    node_name = "CummaxBackward0"
    fn = np.maximum


class Cummin(_CumExtreme):
    node_name = "CumminBackward0"
    fn = np.minimum


def _cum_extreme(name: str, op, rtype):
    def fn(x: Tensor, dim: int):
        d = _wrap_dim(dim, x.ndim)
        v, i = op.apply(x, dim=d)
        return rtype(v, i)
    fn.__name__ = name
    fn.__doc__ = f"Running {name[3:]} along ``dim`` and the index where it was attained."
    return fn


cummax = _cum_extreme("cummax", Cummax, return_types.cummax)
cummin = _cum_extreme("cummin", Cummin, return_types.cummin)
# Complex gradients are these formulas conjugated (ember/ops/_complex_grad.py).
holomorphic(Cumsum)


METHODS = numpy_aliases({"cumsum": cumsum, "cumprod": cumprod, "cummax": cummax,
                         "cummin": cummin, "logcumsumexp": logcumsumexp})
FUNCTIONS = dict(METHODS)
