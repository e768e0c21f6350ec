"""Gamma and Dirichlet samples with torch's draws and reparameterisation gradients:
``_standard_gamma`` (``StandardGammaBackward0``: ``grad * _standard_gamma_grad(alpha,
sample)``), ``_sample_dirichlet``, ``_standard_gamma_grad`` and ``_dirichlet_grad``, the
primitives ``distributions.Gamma``, ``Beta`` and ``Dirichlet`` sample with."""

from __future__ import annotations

import numpy as np

from ember._creation import legacy_name
from ember._random import _gen
from ember._random_gamma import gamma_sample
from ember._tensor import Tensor
from ember.autograd.function import Op
from ember.ops import _gamma_grads


def _floating(name: str, t: Tensor) -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument 'self' (position 1) must be Tensor, not "
                        f"{type(t).__name__}")
    if t._data.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"{name}\" not implemented for '{legacy_name(t.dtype)}'")
    return t._data


def _at_least_tiny(x: np.ndarray, dtype) -> np.ndarray:
    """std::max(numeric_limits<T>::min(), x): a NaN becomes the smallest normal too."""
    tiny = np.finfo(dtype).tiny
    x = x.astype(dtype)
    return np.where(tiny < x, x, dtype(tiny))


class _StandardGamma(Op):
    node_name = "StandardGammaBackward0"
    saves = (0,)
    saves_output = True

    @staticmethod
    def forward(ctx, alpha, generator=None):
        single = alpha.dtype == np.float32
        return _at_least_tiny(gamma_sample(_gen(generator), alpha, single), alpha.dtype.type)

    @staticmethod
    def backward(ctx, grad):
        alpha, sample = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, sample)


def _standard_gamma(input: Tensor, generator=None) -> Tensor:
    """Samples of Gamma(input, 1), differentiable in ``input`` (implicit reparameterisation)."""
    _floating("gamma_cpu", input)
    return _StandardGamma.apply(input, generator=generator)


def _standard_gamma_grad(input: Tensor, output: Tensor) -> Tensor:
    """d output / d input for standard Gamma samples ``output`` of concentration ``input``."""
    return Tensor._make(_gamma_grads.standard_gamma_grad(input._data, output._data))


def _sample_dirichlet(input: Tensor, generator=None) -> Tensor:
    """Dirichlet samples over the last dim: Gamma draws in float64, normalised, as torch."""
    alpha = _floating("dirichlet", input)
    gamma = _at_least_tiny(gamma_sample(_gen(generator), alpha.astype(np.float64), False),
                           np.float64)
    dt = alpha.dtype.type
    ret = (gamma / gamma.sum(-1, keepdims=True)).astype(dt)
    ret = np.minimum(np.nextafter(dt(1), dt(0)), np.maximum(np.finfo(dt).tiny, ret))
    return Tensor._make(ret)


def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """The reparameterised gradient of Dirichlet samples ``x`` in ``alpha`` (``total`` is
    alpha's sum over the event dim)."""
    if x.shape != alpha.shape or x.shape != total.shape:
        raise RuntimeError(f"_dirichlet_grad: expected x, alpha and total to have the same "
                           f"shape, got {tuple(x.shape)}, {tuple(alpha.shape)} and "
                           f"{tuple(total.shape)}")
    return Tensor._make(_gamma_grads.dirichlet_grad(x._data, alpha._data, total._data))


FUNCTIONS = {"_standard_gamma": _standard_gamma, "_standard_gamma_grad": _standard_gamma_grad,
             "_sample_dirichlet": _sample_dirichlet, "_dirichlet_grad": _dirichlet_grad}
