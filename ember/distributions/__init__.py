"""ember.distributions: probability distributions with torch's API, seeded draws and
gradients, as ``torch.distributions``.

>>> m = Normal(ember.tensor([0.0]), ember.tensor([1.0]))
>>> x = m.rsample()          # differentiable in loc and scale
>>> m.log_prob(x), m.entropy(), kl_divergence(m, Normal(1.0, 2.0))
"""

from ember.distributions import constraints, transforms
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.beta import Beta
from ember.distributions.categorical import Categorical
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.gamma import Gamma
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.laplace import Laplace
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import *  # noqa: F403
from ember.distributions.transforms import __all__ as _transforms_all
from ember.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution",
           "ExponentialFamily", "Exponential", "Gamma", "Independent", "Laplace",
           "MultivariateNormal", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "TransformedDistribution", "Uniform",
           "constraints", "kl_divergence", "register_kl", "transforms", *_transforms_all]
