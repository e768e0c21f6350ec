"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)."""

from __future__ import annotations

import math

import ember
from ember._tensor import Size, Tensor
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Batched matrix-vector product, broadcasting the batch dims."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:  # noqa: N803 - torch's names
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x`` for a batch of lower-triangular
    ``L`` and a batch of ``x`` whose batch shape has L's as a suffix (one triangular solve
    for all)."""
    n = bx.size(-1)
    bx_batch_shape = bx.shape[:-1]
    bL_batch_dims = bL.dim() - 2  # noqa: N806
    outer_batch_dims = bx.dim() - 1 - bL_batch_dims
    old_batch_dims = outer_batch_dims + bL_batch_dims
    new_batch_dims = outer_batch_dims + 2 * bL_batch_dims
    # bx's batch dims matching L's are split as (repeats, L's size) so L broadcasts
    bx_new_shape = bx.shape[:outer_batch_dims]
    for sL, sx in zip(bL.shape[:-2], bx.shape[outer_batch_dims:-1]):  # noqa: N806
        bx_new_shape += (sx // sL, sL)
    bx_new_shape += (n,)
    bx = bx.reshape(bx_new_shape)
    permute_dims = (list(range(outer_batch_dims))
                    + list(range(outer_batch_dims, new_batch_dims, 2))
                    + list(range(outer_batch_dims + 1, new_batch_dims, 2))
                    + [new_batch_dims])
    bx = bx.permute(permute_dims)
    flat_L = bL.reshape(-1, n, n)  # noqa: N806  b x n x n
    flat_x = bx.reshape(-1, flat_L.size(0), n)  # c x b x n
    flat_x_swap = flat_x.permute(1, 2, 0)  # b x n x c
    M_swap = ember.linalg.solve_triangular(flat_L, flat_x_swap,  # noqa: N806
                                           upper=False).pow(2).sum(-2)
    permuted_M = M_swap.t().reshape(bx.shape[:-1])  # noqa: N806
    permute_inv_dims = list(range(outer_batch_dims))
    for i in range(bL_batch_dims):
        permute_inv_dims += [outer_batch_dims + i, old_batch_dims + i]
    return permuted_M.permute(permute_inv_dims).reshape(bx_batch_shape)


def _precision_to_scale_tril(P: Tensor) -> Tensor:  # noqa: N803
    """The lower Cholesky factor of ``P^-1`` without inverting P (torch's flip trick)."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))  # noqa: N806
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)  # noqa: N806
    eye = ember.eye(P.shape[-1], dtype=P.dtype)
    return ember.linalg.solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """A Gaussian over vectors, parameterised by exactly one of its covariance, its
    precision or the lower Cholesky factor of its covariance."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril matrix", scale_tril),
                        ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is not None:
                if m.dim() < 2:
                    raise ValueError(f"{name} must be at least two-dimensional, with optional "
                                     "leading batch dimensions")
                batch_shape = ember.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
                attr = name.split()[0]
                setattr(self, attr, m.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return ember.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        eye = ember.eye(L.shape[-1], dtype=L.dtype)
        L_inv = ember.linalg.solve_triangular(L, eye, upper=False)  # noqa: N806
        return ember.matmul(L_inv.mT, L_inv).expand(self._matrix_shape())  # cholesky_inverse

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)  # noqa: N806
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self) -> Tensor:
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()  # noqa: N806
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
