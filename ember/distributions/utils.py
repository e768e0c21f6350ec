"""Helpers shared by the distributions, as torch's ``torch.distributions.utils``."""

from __future__ import annotations

from collections.abc import Callable
from functools import update_wrapper
from numbers import Number

import ember
from ember._tensor import Size, Tensor
from ember.nn import functional as F

euler_constant = 0.57721566490153286060  # Euler-Mascheroni

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]


def broadcast_all(*values) -> tuple:
    """Broadcast tensors and numbers together (numbers take the first tensor's dtype, else the
    default dtype)."""
    if not all(isinstance(v, Tensor | Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        dtype = next((v.dtype for v in values if isinstance(v, Tensor)),
                     ember.get_default_dtype())
        values = [v if isinstance(v, Tensor) else ember.tensor(v, dtype=dtype) for v in values]
    return ember.broadcast_tensors(*values)


def elementwise_param(dist, probs, logits) -> Size:
    """Set ``dist.probs`` or ``dist.logits`` (exactly one given) and ``dist._param``; the batch
    shape they give (Bernoulli-like distributions: one parameter per element)."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (dist.probs,) = broadcast_all(probs)
        dist._param = dist.probs
    else:
        (dist.logits,) = broadcast_all(logits)
        dist._param = dist.logits
    return Size() if isinstance(probs if probs is not None else logits, Number) \
        else dist._param.size()


def loc_scale(dist, loc, scale) -> Size:
    """Set ``dist.loc`` and ``dist.scale``, broadcast together; the batch shape they give
    (location-scale families: Normal, Laplace, Cauchy)."""
    dist.loc, dist.scale = broadcast_all(loc, scale)
    return Size() if isinstance(loc, Number) and isinstance(scale, Number) else dist.loc.size()


def expand_params(dist, cls: type, batch_shape, _instance, *names: str):
    """torch's ``expand`` for a ``cls`` whose parameters ``names`` have the batch shape."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    for name in names:
        setattr(new, name, getattr(dist, name).expand(batch_shape))
    super(cls, new).__init__(batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def _standard_normal(shape, dtype, device) -> Tensor:
    return ember.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum the ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return ember.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp into [eps, 1 - eps] so that logs stay finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first access (with grad enabled) and then cached on the
    instance; on the class it reads as a property."""

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801 - torch's name
    def __init__(self, wrapped: Callable) -> None:
        property.__init__(self, wrapped)


def _tril_mask(n: int, diag: int) -> Tensor:
    arange = ember.arange(n)
    return arange < arange.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (below ``diag``) of ``mat``'s last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of ``tril_matrix_to_vec``."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                            + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(vec.shape[:-1] + ember.Size((n, n)))
    mat[..., _tril_mask(n, diag)] = vec
    return mat
