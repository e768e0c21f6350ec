"""Dropout: elementwise (dropout) and channel-wise (dropout1d/2d/3d) masks, scaled by 1/(1-p).

The result is ``input * mask`` (MulBackward0 with a constant mask), as torch records it, and
the mask is drawn as torch's CPU kernel draws it (``bernoulli_(1 - p)``), so a seeded run drops
the same units as torch.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember._backend import on_device_of
from ember._random import VMAP_RANDOMNESS, bernoulli_sample
from ember._tensor import Tensor
from ember.ops.inplace import apply_inplace


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep(input: Tensor, p: float, mask_shape: tuple) -> np.ndarray:
    """torch's noise: ``empty(mask_shape).bernoulli_(1 - p)`` in the input's dtype."""
    keep = bernoulli_sample(mask_shape, 1.0 - p).astype(input._data.dtype)
    return on_device_of(input._data, keep)  # drawn on the CPU: torch's CPU stream


def _vmap_mask(input: Tensor, mask_shape: tuple, dt, p: float):
    from ember.func._random_rules import dropout_mask

    return dropout_mask(input, mask_shape, dt, p)


def _masked(input: Tensor, p: float, mask_shape: tuple, inplace: bool) -> Tensor:
    dt = input._data.dtype
    if p == 0.0 or input._data.size == 0:
        return input  # torch returns the input itself: no draw, no node
    if p == 1.0:
        mask = np.zeros((), dtype=dt)
    elif VMAP_RANDOMNESS[0] is not None and (m := _vmap_mask(input, mask_shape, dt, p)) \
            is not None:  # inside vmap with randomness "same" / "different": a batched draw
        return input * m
    else:
        # noise.div_(1 - p) on 0/1 noise, in one pass: 1 / (1 - p) where kept, else 0
        keep = bernoulli_sample(mask_shape, 1.0 - p)
        mask = on_device_of(input._data, np.multiply(keep, dt.type(1.0) / dt.type(1.0 - p),
                                                      dtype=dt))
    m = Tensor._make(mask)
    if inplace:
        return apply_inplace(input, lambda t: t * m)
    return input * m


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` (in training) and scale the rest by 1/(1-p)."""
    _check_p(p)
    if not training:
        return input
    return _masked(input, p, input._data.shape, inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool) -> Tensor:
    if not training:
        return input
    shape = input._data.shape
    lead = 2 if batched else 1
    mask_shape = shape[:lead] + (1,) * (len(shape) - lead)
    return _masked(input, p, mask_shape, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an optional "
                           "batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, input.ndim == 3)


def _warn_unless_spatial(input: Tensor, spatial: int) -> None:
    """torch's deprecation warning when ``dropout{spatial}d`` gets an input that is not
    (C, *spatial) or (N, C, *spatial)."""
    name, ndims = f"dropout{spatial}d", (spatial + 1, spatial + 2)
    if input.ndim not in ndims:
        warnings.warn(f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      f"and silence this warning, please use dropout instead. Note that {name} "
                      f"exists to provide channel-wise dropout on inputs with {spatial} spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{ndims[0]}D or {ndims[1]}D inputs).", stacklevel=3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) or (C, H, W) input."""
    _check_p(p)
    _warn_unless_spatial(input, 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape (C, "
                      "H, W). To maintain the 1D channel-wise dropout behavior, please switch to "
                      "using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    _check_p(p)
    _warn_unless_spatial(input, 3)
    return _feature_dropout(input, p, training, inplace, input.ndim == 5)


_SELU_ALPHA_PRIME = 1.7580993408473766


def _alpha(input: Tensor, p: float, training: bool, inplace: bool, feature: bool) -> Tensor:
    _check_p(p)
    if not training or p == 0 or input._data.size == 0:
        return input
    dt = input._data.dtype
    if p == 1:
        zero = Tensor._make(np.zeros((), dtype=dt))
        return apply_inplace(input, lambda t: t * zero) if inplace else input * zero
    shape = input._data.shape
    keep = _keep(input, p, shape[:2] + (1,) * (len(shape) - 2) if feature else shape)
    # Keep the SELU fixed point (mean 0, variance 1): dropped units go to -alpha', then an
    # affine map a * x + b restores the moments. Same float steps as torch's kernel.
    a = 1.0 / np.sqrt((_SELU_ALPHA_PRIME**2 * p + 1) * (1 - p))
    b = Tensor._make((keep - dt.type(1)) * dt.type(_SELU_ALPHA_PRIME * a)
                     + dt.type(_SELU_ALPHA_PRIME * a * p))
    noise = Tensor._make(keep * dt.type(a))
    if inplace:
        return apply_inplace(input, lambda t: t * noise + b)
    return input * noise + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU activations at zero mean and unit variance."""
    return _alpha(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels."""
    return _alpha(input, p, training, inplace, feature=True)


__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]
