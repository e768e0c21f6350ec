"""Random in-place fills: ``uniform_``, ``normal_``, ``bernoulli_``, ``exponential_``,
``geometric_``, ``cauchy_``, ``log_normal_``, ``random_``; each draws torch's numbers from
the generator, transformed by torch's CPU formula. On a tensor in the graph the fill is
recorded (torch's ``UniformBackward0`` & co.) and passes no gradient to the old value."""

from __future__ import annotations

import numpy as np

from ember._random import (
    bernoulli_sample,
    double_uniform_sample,
    integer_sample,
    normal_sample,
    scalar_normal_sample,
    uniform_sample,
)
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.autograd.grad_mode import STATE
from ember.ops.inplace import apply_inplace, check_inplace, refill_op, write_values
from ember.ops.pointwise_more import _CNAME, not_for


def _fill_random(x: Tensor, values, node: str) -> Tensor:
    return write_values(x, values, _NODES.get(node) or _NODES.setdefault(node, refill_op(node)))


_NODES: dict = {}


def _float_draw(x: Tensor, kernel: str, draw):
    if not x.dtype.is_floating_point:
        raise not_for(kernel, x.dtype)
    dt = x._data.dtype if x._data.dtype in (np.float32, np.float64) else np.float32
    return draw(dt)


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from U[a, b)."""
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    v = _float_draw(x, "check_uniform_bounds",  # torch's numbers for a seeded generator
                    lambda dt: uniform_sample(x._data.shape, x.dtype, a, b, generator))
    return _fill_random(x, v, "UniformBackward0")


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from N(mean, std**2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    v = _float_draw(x, "normal_kernel_cpu",  # torch's numbers for a seeded generator
                    lambda dt: normal_sample(x._data.shape, x.dtype, mean, std, generator))
    return _fill_random(x, v, "NormalBackward0")


def exponential_(x: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from the exponential distribution with rate ``lambd``."""
    if not x.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           "dtype must be a floating point but you specified "
                           f"{_CNAME[x.dtype.name]}")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = double_uniform_sample(x._data.shape, generator)
    return _fill_random(x, -np.log1p(-u) / lambd, "ExponentialBackward0")  # torch's CPU formula


def bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws that are 1 with probability ``p`` (a number or a tensor)."""
    pa = p._data if isinstance(p, Tensor) else p
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if isinstance(p, Tensor) and p.numel() and not ((pa >= 0) & (pa <= 1)).all():
        raise RuntimeError("bernoulli_ expects all elements of p to be in [0, 1]")
    if isinstance(p, Tensor):
        pa = np.broadcast_to(pa, x._data.shape)
    values = bernoulli_sample(x._data.shape, pa, generator)  # torch's draws
    if isinstance(p, Tensor) and STATE.enabled and x._rg:
        check_inplace(x)
        return apply_inplace(x, lambda t, q: BernoulliT.apply(t, q, values=values), p)
    return _fill_random(x, values, "BernoulliBackward2")


class BernoulliT(Op):
    """bernoulli_(p) with a tensor ``p`` in the graph: neither input gets a gradient."""

    node_name = "BernoulliBackward1"
    broadcasts = True

    @staticmethod
    def forward(ctx, x, p, values=None):
        return values.astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        need = ctx.needs_input_grad
        return (g * 0 if need[0] else None), (g * 0 if need[1] else None)


def geometric_(x: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = double_uniform_sample(x._data.shape, generator)
    with np.errstate(divide="ignore"):  # u == 0 gives inf, as in torch
        return _fill_random(x, np.ceil(np.log(u) / np.log1p(-p)), "GeometricBackward0")


def random_(x: Tensor, from_=None, to=None, *, generator=None) -> Tensor:
    """``random_(to)``: integers in [0, to); ``random_(from, to)``; ``random_()``: [0, 2**m]
    where m is the dtype's mantissa width (or its max for integer dtypes)."""
    node = "RandomBackward2" if from_ is None else "RandomBackward1" if to is None else \
        "RandomBackward0"
    if to is None and from_ is not None:
        from_, to = 0, from_
    lo = 0 if from_ is None else int(from_)
    if to is None:
        d = x._data.dtype
        hi = 2 ** (np.finfo(d).nmant + 1) + 1 if d.kind == "f" else 2 if d.kind == "b" else \
            int(np.iinfo(d).max) + 1
    else:
        hi = int(to)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                           f">= to={hi}")
    return _fill_random(x, integer_sample(x._data.shape, lo, hi, generator), node)


def cauchy_(x: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with draws from the Cauchy distribution."""
    v = _float_draw(x, "cauchy_cpu", lambda dt: double_uniform_sample(x._data.shape, generator))
    return _fill_random(x, median + sigma * np.tan(np.pi * (v - 0.5)), "CauchyBackward0")


def log_normal_(x: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with ``exp`` of draws from N(mean, std**2)."""
    v = _float_draw(x, "log_normal_cpu", lambda dt: scalar_normal_sample(x._data.shape, generator))
    return _fill_random(x, np.exp(v * std + mean), "LogNormalBackward0")


METHODS = {
    "uniform_": uniform_, "normal_": normal_, "exponential_": exponential_,
    "bernoulli_": bernoulli_, "geometric_": geometric_, "random_": random_,
    "cauchy_": cauchy_, "log_normal_": log_normal_,
}


