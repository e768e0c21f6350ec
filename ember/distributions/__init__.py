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
from ember.distributions.cauchy import Cauchy
from ember.distributions.chi2 import Chi2
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.gamma import Gamma
from ember.distributions.geometric import Geometric
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.laplace import Laplace
from ember.distributions.log_normal import LogNormal
from ember.distributions.mixture_same_family import MixtureSameFamily
from ember.distributions.multinomial import Multinomial
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.one_hot_categorical import (
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from ember.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from ember.distributions.relaxed_categorical import (
    ExpRelaxedCategorical,
    RelaxedOneHotCategorical,
)
from ember.distributions.studentT import StudentT
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import *  # noqa: F403
from ember.distributions.transforms import __all__ as _transforms_all
from ember.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution",
           "ExpRelaxedCategorical", "ExponentialFamily", "Exponential", "Gamma", "Geometric",
           "HalfNormal", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform",
           "constraints", "kl_divergence", "register_kl", "transforms", *_transforms_all]
