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

# Added by the API coverage work: Bessel and incomplete gamma functions (ember/ops).
from ember.ops.bessel import i0, i0e, i1, i1e, modified_bessel_i0, modified_bessel_i1  # noqa: E402
from ember.ops.igamma import igamma as gammainc  # noqa: E402
from ember.ops.igamma import igammac as gammaincc  # noqa: E402

__all__ += ["i0", "i0e", "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "gammainc",
            "gammaincc"]
add_out(globals(), {n: SPECIAL_RULES[n] for n in ("i0", "i0e", "i1", "i1e", "modified_bessel_i0",
                                                    "modified_bessel_i1", "gammainc",
                                                    "gammaincc")}, "special_")

# torch's Cephes kernels: Bessel-type functions, orthogonal polynomials, Hurwitz zeta.
from ember.ops._out import CEPHES_SPECIAL  # noqa: E402
from ember.ops.bessel_cephes import (  # noqa: E402
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from ember.ops.orthogonal_polynomials import (  # noqa: E402
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from ember.ops.zeta import zeta  # noqa: E402

__all__ += [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "zeta",
]
add_out(globals(), {n: SPECIAL_RULES[n] for n in (*CEPHES_SPECIAL.split(), "zeta")}, "special_")
