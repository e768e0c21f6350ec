"""Sample frequencies and spectrum shifts (torch.fft.fftfreq, rfftfreq, fftshift, ifftshift)."""

from __future__ import annotations

import numpy as np

from ember._tensor import Tensor


def _freq(values: np.ndarray, n: int, d: float, dtype, device, requires_grad: bool) -> Tensor:
    from ember._creation import dtype_or, finish

    dt = dtype_or(dtype, fname="fftfreq")
    if not dt.is_floating_point and not dt.is_complex:
        raise RuntimeError("fftfreq requires a floating point or complex dtype")
    # torch multiplies by 1 / (n * d) in the result's dtype, rounding the same way
    arr = values.astype(dt.np) * np.asarray(1.0 / (n * d)).astype(dt.np)
    return finish(arr, requires_grad, device)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``."""
    vals = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])
    return _freq(vals, n, d, dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The non-negative frequencies of ``rfft``: ``[0, 1, ..., n // 2] / (d * n)``."""
    return _freq(np.arange(n // 2 + 1), n, d, dtype, device, requires_grad)


def _shift(x: Tensor, dim, inverse: bool) -> Tensor:
    from ember.ops.shape_copy import roll

    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = tuple((x.shape[d] + inverse) // 2 for d in dims)
    return roll(x, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero frequency to the centre (a roll by n // 2 along ``dim``, default all)."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of ``fftshift`` (a roll by (n + 1) // 2)."""
    return _shift(input, dim, True)
