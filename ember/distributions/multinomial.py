"""Multinomial(total_count, probs | logits): counts of ``total_count`` categorical draws."""

from __future__ import annotations

import math

import ember
from ember._tensor import Size, Tensor
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


def _binomial_log_prob(total_count: int, logits: Tensor, value: Tensor) -> Tensor:
    """log P(value) under Binomial(total_count, sigmoid(logits)), as torch's Binomial."""
    n = ember.tensor(float(total_count), dtype=logits.dtype)
    normalize = (n * logits.clamp(min=0) + n * ember.log1p(ember.exp(-ember.abs(logits)))
                 - ember.lgamma(n + 1))
    return (value * logits - ember.lgamma(value + 1) - ember.lgamma(n - value + 1)
            - normalize)


class Multinomial(Distribution):
    """Count vectors summing to ``total_count``; samples count ``total_count`` Categorical
    draws (torch's numbers)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count: int = 1, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()) -> Tensor:
        sample_shape = Size(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        order = list(range(samples.dim()))
        order.append(order.pop(0))
        samples = samples.permute(*order)
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=samples.dtype)
        counts.scatter_add_(-1, samples, ember.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self) -> Tensor:
        n = ember.tensor(self.total_count)
        term1 = n * self._categorical.entropy() - ember.lgamma(n + 1)
        support = ember.arange(self.total_count + 1, dtype=self.logits.dtype)[1:]
        support = support.view((-1,) + (1,) * len(self._categorical.param_shape))
        logits = self.probs.log() - (-self.probs).log1p()  # the binomials' logits
        binomial_probs = ember.exp(_binomial_log_prob(self.total_count, logits, support))
        term2 = (binomial_probs * ember.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        log_factorial_n = ember.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ember.lgamma(value + 1).sum(-1)
        logits[(value == 0) & (logits == -math.inf)] = 0
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
