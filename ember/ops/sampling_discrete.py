"""``poisson`` and ``binomial`` with torch's draws (``distributions.Poisson`` and ``Binomial``
sample with them): ``poisson``'s gradient is zero (``PoissonBackward0``), ``binomial``'s is not
implemented, as in torch."""

from __future__ import annotations

import numpy as np

from ember._creation import legacy_name
from ember._random import _gen
from ember._random_discrete import binomial_sample, poisson_sample
from ember._tensor import Tensor
from ember.autograd.function import Op


def _floating(name: str, t, arg: str = "self", pos: int = 1) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(t).__name__}")
    if t._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                  f"'{legacy_name(t.dtype)}'")
    return t._data


class _Poisson(Op):
    node_name = "PoissonBackward0"

    @staticmethod
    def forward(ctx, rate, generator=None):
        return poisson_sample(_gen(generator), rate).astype(rate.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad * 0


class _Binomial(Op):
    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, count, prob, generator=None):
        return binomial_sample(_gen(generator), count, np.broadcast_to(prob, count.shape))

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::binomial is not implemented")


def poisson(input: Tensor, generator=None) -> Tensor:
    """One Poisson draw per element of the rates ``input`` (float dtypes)."""
    rate = _floating("poisson", input, "input")
    if not bool((rate >= 0).all()):  # NaN fails too, as torch's check
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _Poisson.apply(input, generator=generator)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """One Binomial(count, prob) draw per element (same shapes, same float dtype)."""
    for pos, (arg, t) in enumerate((("count", count), ("prob", prob)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"binomial(): argument '{arg}' (position {pos}) must be Tensor, "
                            f"not {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {arg}, got: "
                             f"{legacy_name(t.dtype)}")
    n = _floating("binomial", count, "count")
    if prob._data.dtype != n.dtype:
        raise RuntimeError(f"Found dtype {legacy_name(prob.dtype)} but expected "
                           f"{legacy_name(count.dtype)}")
    try:  # the result has count's shape; prob broadcasts to it (torch's TensorIterator)
        np.broadcast_to(prob._data, n.shape)
    except ValueError:
        raise RuntimeError(f"output with shape {list(count.shape)} doesn't match the "
                           f"broadcast shape {list(prob.shape)}") from None
    return _Binomial.apply(count, prob, generator=generator)


FUNCTIONS = {"poisson": poisson, "binomial": binomial}
