"""ExponentialFamily: distributions whose entropy follows from their log-normalizer."""

from __future__ import annotations

import ember
from ember._tensor import Tensor
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """``p(x) = h(x) exp(<theta, t(x)> - F(theta))``; subclasses give ``_natural_params``
    (theta), ``_log_normalizer`` (F) and ``_mean_carrier_measure`` (E[log h(x)])."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """``F(theta) - <theta, grad F(theta)> - E[log h]`` (the Bregman divergence form)."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for p, g in zip(nparams, gradients):
            result -= (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
