"""Gradient clipping: ``clip_grad_norm_`` (by total norm) and ``clip_grad_value_``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import numpy as np

from ember._backend import on_device_of
from ember._tensor import Tensor
from ember.ops._promote import scalar

_Params = Tensor | Iterable[Tensor]


def _as_list(tensors: _Params) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(a: np.ndarray, p: float) -> float:
    a = np.abs(a.astype(np.float64, copy=False))
    if p == np.inf:
        return float(a.max()) if a.size else 0.0
    if p == -np.inf:
        return float(a.min()) if a.size else np.inf
    if p == 0:
        return float(np.count_nonzero(a))
    if p == 1:
        return float(a.sum())
    if p == 2:
        return float(np.sqrt(np.vdot(a, a)))
    return float((a**p).sum() ** (1.0 / p))


def get_total_norm(tensors: _Params, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (as if concatenated)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return Tensor._make(np.array(0.0, dtype=np.float32))
    norms = np.array([_vector_norm(t._data, norm_type) for t in tensors])
    total = _vector_norm(norms, norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    ref = tensors[0]._data
    return Tensor._make(on_device_of(ref, np.array(total, dtype=ref.dtype)))


def clip_grads_with_norm_(parameters: _Params, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = min(float(max_norm) / (float(total_norm) + 1e-6), 1.0)
    for g in grads:
        np.multiply(g._data, scalar(coef, g._data.dtype), out=g._data)
        g._vc[0] += 1


def clip_grad_norm_(parameters: _Params, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Clip the gradients' total norm to ``max_norm`` in place; returns the total norm."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: _Params, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _Params, clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient elementwise to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        g = p.grad
        if g is not None:
            np.clip(g._data, -clip_value, clip_value, out=g._data)
            g._vc[0] += 1
