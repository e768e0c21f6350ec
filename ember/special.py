"""ember.special (torch.special): special functions, as aliases of the pointwise ops plus the
normal-distribution and entropy functions of ``ember.ops.pointwise_ndtr``."""

from __future__ import annotations

from ember.ops._out import SPECIAL_RULES, add_out
from ember.ops.pointwise import sigmoid as expit
from ember.ops.pointwise_binary import xlogy
from ember.ops.pointwise_math import exp2, expm1, log1p, logit, sinc
from ember.ops.pointwise_more import round
from ember.ops.pointwise_ndtr import entr, erfcx, log_ndtr, ndtr, ndtri, xlog1py
from ember.ops.pointwise_special import digamma, erf, erfc, erfinv, lgamma, mvlgamma, polygamma

gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def logsumexp(input, dim, keepdim: bool = False):
    """``log(sum(exp(input), dim))``, computed stably."""
    return input.logsumexp(dim, keepdim=keepdim)


def softmax(input, dim, *, dtype=None):
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


add_out(globals(), SPECIAL_RULES, "special_")  # out= as in torch.special

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammaln",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
    "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
]
